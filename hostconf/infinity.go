package hostconf

import (
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/kernelnum"
)

// DefaultNrOpen is the kernel's fs.nr_open when nothing sets it
// (sysctl_nr_open in fs/file.c, 1024*1024), in file descriptors.
const DefaultNrOpen uint64 = 1048576

// nrOpenMin and nrOpenMax are the fs.nr_open values the kernel takes on
// 64-bit (sysctl_nr_open_min = BITS_PER_LONG, sysctl_nr_open_max =
// INT_MAX rounded down to a multiple of BITS_PER_LONG).
const nrOpenMin, nrOpenMax = 64, 2147483584

// Pid1Hard is the hard RLIMIT_NOFILE systemd, as PID 1, holds after the
// next boot: the bound on what LimitNOFILE=infinity or
// DefaultLimitNOFILE=infinity gives a service.
type Pid1Hard struct {
	// Value in file descriptors.
	Value uint64
	// From says where the number comes from, for messages ("PID 1's
	// hard limit at boot, fs.nr_open before sysctl.d = 1048576 (...)").
	From string
}

// pid1Head is how a Pid1Hard's From begins.
const pid1Head = "PID 1's hard limit at boot, fs.nr_open before sysctl.d"

// Pid1NofileHard is the hard RLIMIT_NOFILE PID 1 gives itself at boot.
// systemd 252's bump_rlimit_nofile (src/core/main.c) raises PID 1's soft
// and hard nofile to fs.nr_open as it reads it when it starts, before
// systemd-sysctl.service applies sysctl.d: the kernel default 1048576,
// or the last value the kernel takes from a "sysctl.fs.nr_open=" (or
// "sysctl/fs/nr_open=") parameter of cmdline, the kernel command line
// (/proc/cmdline), which the kernel (5.8 and later) applies before it
// starts init. No errors: a value the kernel refuses (not a number,
// below 64 or above 2147483584) is skipped as the kernel skips it. A
// later `systemctl daemon-reexec` bumps to fs.nr_open as it is then,
// after sysctl.d: not modelled here.
func Pid1NofileHard(cmdline string) Pid1Hard {
	n, param, ok := cmdlineNrOpen(cmdline)
	if !ok {
		return Pid1Hard{Value: DefaultNrOpen, From: fmt.Sprintf("%s = %d (the kernel default: the kernel command line sets no sysctl.fs.nr_open)", pid1Head, DefaultNrOpen)}
	}
	return Pid1Hard{Value: n, From: fmt.Sprintf("%s = %d (%s on the kernel command line)", pid1Head, n, param)}
}

// Pid1NofileDefault is Pid1NofileHard when the kernel command line is not
// known (an image, whose command line is the boot loader's): the kernel
// default, and why ("the kernel command line an image boots with is not
// known here") in From.
func Pid1NofileDefault(why string) Pid1Hard {
	return Pid1Hard{Value: DefaultNrOpen, From: fmt.Sprintf("%s = %d (the kernel default; %s)", pid1Head, DefaultNrOpen, why)}
}

// cmdlineNrOpen is the fs.nr_open the kernel command line sets: the
// last sysctl.fs.nr_open= parameter whose value the kernel takes, and
// that parameter as written. Parameters after "--" are init's.
func cmdlineNrOpen(cmdline string) (uint64, string, bool) {
	var n uint64
	var param string
	found := false
	for _, arg := range kernelArgs(cmdline) {
		if arg == "--" {
			break
		}
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			continue
		}
		rest, isSysctl := strings.CutPrefix(k, "sysctl")
		if !isSysctl || rest == "" || (rest[0] != '.' && rest[0] != '/') {
			continue
		}
		if strings.ReplaceAll(rest[1:], ".", "/") != "fs/nr_open" {
			continue
		}
		if x, ok := kernelnum.Uint(strings.Trim(v, "\"")); ok && x >= nrOpenMin && x <= nrOpenMax {
			n, param, found = x, arg, true
		}
	}
	return n, param, found
}

// kernelArgs splits a kernel command line as the kernel's next_arg
// does: at white space outside double quotes, which are dropped.
func kernelArgs(cmdline string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, c := range cmdline {
		switch {
		case c == '"':
			quoted, any = !quoted, true
		case !quoted && (c == ' ' || c == '\t' || c == '\n'):
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		default:
			cur.WriteRune(c)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

// Resolved is n as a service gets it: an "infinity" soft or hard
// (Unlimited) becomes pid1.Value. The service process systemd forks
// inherits PID 1's limits and applies LimitNOFILE with
// setrlimit_closest (src/basic/rlimit-util.c): setrlimit refuses
// RLIM_INFINITY for RLIMIT_NOFILE (EPERM: above fs.nr_open, always), so
// it sets each value capped at the hard limit it holds, PID 1's. The
// result's Infinity says so ("" when neither value was infinity).
func (n NofileSetting) Resolved(pid1 Pid1Hard) NofileSetting {
	if n.Soft != Unlimited && n.Hard != Unlimited {
		return n
	}
	n.Soft, n.Hard = min(n.Soft, pid1.Value), min(n.Hard, pid1.Value)
	n.Infinity = "infinity: " + pid1.From
	return n
}
