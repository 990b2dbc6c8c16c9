// Package proclimits reads a process's resource limits from
// /proc/PID/limits (proc(5)), the file the kernel fills from the
// process's rlimits: what the process really has, whatever set it.
package proclimits

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Unlimited stands for "unlimited" (RLIM_INFINITY) in a limit.
const Unlimited = math.MaxUint64

// Nofile returns the soft and hard RLIMIT_NOFILE ("Max open files", in
// file descriptors) of a /proc/PID/limits file at path; "unlimited" is
// Unlimited. Errors: the file cannot be read, or has no parseable
// "Max open files" line.
func Nofile(path string) (soft, hard uint64, err error) { return limit(path, "Max open files") }

// Nproc returns the soft and hard RLIMIT_NPROC ("Max processes": tasks,
// threads included, of the process's real user ID; setrlimit(2)) of a
// /proc/PID/limits file at path, as Nofile does.
func Nproc(path string) (soft, hard uint64, err error) { return limit(path, "Max processes") }

func limit(path, name string) (soft, hard uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, found := strings.CutPrefix(line, name)
		if !found {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			break
		}
		if soft, err = parse(f[0]); err == nil {
			hard, err = parse(f[1])
		}
		return soft, hard, err
	}
	return 0, 0, fmt.Errorf("%s: no %q line", path, name)
}

func parse(s string) (uint64, error) {
	if s == "unlimited" {
		return Unlimited, nil
	}
	return strconv.ParseUint(s, 10, 64)
}
