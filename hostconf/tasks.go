package hostconf

import (
	"fmt"
	"strconv"
	"strings"
)

// SystemdDefaultTasksMax is DefaultTasksMax= when no system.conf file
// sets it: 15% of the host's task ceiling, 4915 tasks with the kernel's
// default kernel.pid_max 32768 (systemd-system.conf(5)).
const SystemdDefaultTasksMax = "15%"

// SystemdTasksCeiling is systemd's TASKS_MAX, the most its task ceiling
// can be (the kernel's PID_MAX_LIMIT - 1, tasks).
const SystemdTasksCeiling = 4194303

// TasksCeiling is the host's task ceiling a TasksMax= percentage is taken
// of, as systemd 252's system_tasks_max computes it from
// kernel.threads-max and kernel.pid_max (0: not known, not taken): the
// least of threads-max, pid_max - 1 (PID 0 is none) and
// SystemdTasksCeiling, in tasks. The root cgroup's pids.max, which systemd
// also takes, exists only inside a container's cgroup namespace and is
// not read.
func TasksCeiling(threadsMax, pidMax uint64) uint64 {
	c := uint64(SystemdTasksCeiling)
	if threadsMax > 0 {
		c = min(c, threadsMax)
	}
	if pidMax > 1 {
		c = min(c, pidMax-1)
	}
	return c
}

// ParseTasksMax reads a TasksMax=/DefaultTasksMax= value as systemd 252's
// config_parse_tasks_max does: "infinity" (Unlimited), a number of tasks
// N >= 1 read as safe_atou64 reads it ("0x1000" and "010000" are 4096), or
// a share of ceiling (tasks) written "P%" (up to two decimals), "P‰" (one)
// or "P‱", at most 100%, rounded down, its whole part P read in base 0
// as a number is ("060%" is 48%, "0x3c%" is 60%: parsePermyriad). ok is false for a value systemd
// logs and ignores (0, above 100%, anything else); the empty value, a
// reset, is not parsed here.
func ParseTasksMax(v string, ceiling uint64) (uint64, bool) {
	if v == "infinity" {
		return Unlimited, true
	}
	if p, ok, isShare := parsePermyriad(v); isShare {
		return ceiling * p / 10000, ok
	}
	n, ok := safeAtou64(v)
	return n, ok && n >= 1 && n < Unlimited
}

// parsePermyriad reads "P%", "P‰" or "P‱" as systemd 252's
// parse_permyriad: the whole part P as safe_atoi reads it (base 0:
// "060%" is 48%, "0x3c%" 60%, "0b11%" 3%, "+60%" 60%; safeAtoi), then up
// to two decimal digits for %, one for ‰, none for ‱; the share in
// 1/10000 and whether it is valid (at most 100%); isShare is false when v
// has none of the suffixes (a plain number, read otherwise).
func parsePermyriad(v string) (p uint64, ok, isShare bool) {
	for _, u := range []struct {
		suffix   string
		scale    uint64 // permyriad per unit
		decimals int
	}{{"%", 100, 2}, {"‰", 10, 1}, {"‱", 1, 0}} {
		num, has := strings.CutSuffix(v, u.suffix)
		if !has {
			continue
		}
		whole, frac, dot := strings.Cut(num, ".")
		if dot && (!digits(frac) || len(frac) > u.decimals) {
			return 0, false, true
		}
		w, ok := safeAtoi(whole)
		if !ok || w > 10000 {
			return 0, false, true
		}
		p = w * u.scale
		for i, unit := 0, u.scale/10; i < len(frac); i, unit = i+1, unit/10 {
			p += uint64(frac[i]-'0') * unit
		}
		return p, p <= 10000, true
	}
	return 0, false, false
}

// digits says whether s is one or more ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// TasksSetting is the TasksMax= a unit gets and the line that sets it.
type TasksSetting struct {
	// Tasks is the limit in tasks, Unlimited for infinity or no limit.
	Tasks uint64
	// Key is "TasksMax" (a file of the unit sets it) or "DefaultTasksMax"
	// (the manager's, or systemd's built-in default).
	Key string
	// Text is the value as written ("8192", "15%", "infinity"); "" for an
	// empty DefaultTasksMax=, which is no limit.
	Text string
	// Set is false when no file sets it: SystemdDefaultTasksMax applies.
	Set  bool
	File ConfFile
	Line int
	// ResetFile and ResetLine (0: none) are the unit's last empty
	// TasksMax=, which sent it back to the manager's default (Key
	// "DefaultTasksMax") after an earlier file of the unit set one.
	ResetFile ConfFile
	ResetLine int
}

// ResetWhere is "FILE:LINE" of the empty TasksMax= that reset the unit's
// value to the manager's default, or "" when none did.
func (s TasksSetting) ResetWhere() string {
	if s.ResetLine == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", s.ResetFile.Name(), s.ResetLine)
}

// Where is "FILE:LINE" for messages, or "systemd's built-in default".
func (s TasksSetting) Where() string {
	if !s.Set {
		return "systemd's built-in default"
	}
	return fmt.Sprintf("%s:%d", s.File.Name(), s.Line)
}

// String is the limit in tasks, or "infinity".
func (s TasksSetting) String() string {
	if s.Tasks == Unlimited {
		return "infinity"
	}
	return strconv.FormatUint(s.Tasks, 10)
}

// UnitTasksMax is the TasksMax= a service unit (emqx or emqx.service)
// started after the next boot gets, with percentages taken of ceiling
// (TasksCeiling, tasks): the last accepted assignment in a [Service]
// section of the files UnitNofile reads for it, else the manager's
// DefaultTasksMax= (ManagerTasksMax). It also returns the unit's files, in
// the order read. Errors: a file that exists but cannot be read.
func UnitTasksMax(root, unit string, ceiling uint64) (TasksSetting, []ConfFile, error) {
	return UnitTasksMaxOverlay(root, unit, ceiling, nil)
}

// UnitTasksMaxOverlay is UnitTasksMax as if the files in overlay (paths
// relative to root) had the given bytes (nil: absent).
func UnitTasksMaxOverlay(root, unit string, ceiling uint64, overlay map[string][]byte) (TasksSetting, []ConfFile, error) {
	_, files, err := UnitNofileOverlay(root, unit, overlay)
	if err != nil {
		return TasksSetting{}, files, err
	}
	s, _, err := TasksMaxIn(root, files, ceiling, overlay)
	return s, files, err
}

// TasksMaxIn is UnitTasksMaxOverlay for a unit whose files (as UnitNofile
// returns them) are known; mfiles are the manager's files it read when
// none of files sets TasksMax= (nil otherwise). systemd ignores a value
// ParseTasksMax refuses, keeping the one before; an empty TasksMax= goes
// back to the manager's default (s.ResetFile, s.ResetLine name it).
// Errors: a file that exists but cannot be read.
func TasksMaxIn(root string, files []ConfFile, ceiling uint64, overlay map[string][]byte) (s TasksSetting, mfiles []ConfFile, err error) {
	t := tree{root: root, overlay: overlay}
	accept := func(v string) bool { _, ok := ParseTasksMax(v, ceiling); return ok }
	s, err = lastTasksMax(t, files, "Service", "TasksMax", accept, ceiling)
	if err != nil || s.Set && s.Text != "" {
		return s, nil, err
	}
	reset := s
	_, mfiles, err = ManagerNofileOverlay(root, overlay)
	if err != nil {
		return TasksSetting{}, mfiles, err
	}
	s, err = lastTasksMax(t, mfiles, "Manager", "DefaultTasksMax", accept, ceiling)
	if reset.Set {
		s.ResetFile, s.ResetLine = reset.File, reset.Line
	}
	switch {
	case err != nil:
	case !s.Set:
		s.Text = SystemdDefaultTasksMax
		s.Tasks, _ = ParseTasksMax(s.Text, ceiling)
	case s.Text == "":
		s.Tasks = Unlimited // an empty DefaultTasksMax= is no limit
	}
	return s, mfiles, err
}

// lastTasksMax is the last assignment of key in [section] of files whose
// value accept takes (or is empty), resolved against ceiling.
func lastTasksMax(t tree, files []ConfFile, section, key string, accept func(string) bool, ceiling uint64) (TasksSetting, error) {
	s := TasksSetting{Key: key}
	err := eachAssignment(t, files, section, key, func(v string, f ConfFile, line int) {
		if v != "" && !accept(v) {
			return
		}
		n, _ := ParseTasksMax(v, ceiling)
		s = TasksSetting{Tasks: n, Key: key, Text: v, Set: true, File: f, Line: line}
	})
	return s, err
}
