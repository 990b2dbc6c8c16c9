package boot

import (
	"fmt"
	"strings"
)

// RootSlice is systemd's root slice, the root cgroup: it is above every
// other slice and takes no TasksMax= (the root cgroup has no pids.max).
const RootSlice = "-.slice"

// UnitSlice is the slice unit (emqx or emqx.service) runs in after the
// next boot, as systemd 252 sets it: the last Slice= in a [Service]
// section of the unit's files (as UnitNofile lists them) that is a unit
// name ending in ".slice", no template or instance (other values are
// logged and ignored, and so is one with a % specifier, which this model does not expand; a name
// ValidSlice refuses, such as "a-.slice", is taken, and then the slice
// fails to load and systemd does not start the unit), else the
// default: system-PREFIX.slice for an instance (getty@tty1.service is in
// system-getty.slice, the prefix escaped as unit_name_escape does), else
// system.slice. where is "FILE:LINE" of the Slice= line, "" for the
// default. Errors: a file that exists but cannot be read.
func UnitSlice(root, unit string, overlay map[string][]byte) (slice, where string, err error) {
	t := tree{root: root, overlay: overlay}
	if !strings.Contains(unit, ".") {
		unit += ".service"
	}
	files, err := unitFiles(t, unit)
	if err != nil {
		return "", "", err
	}
	err = eachAssignment(t, files, "Service", "Slice", func(v string, f ConfFile, line int) {
		if validUnitName(v) && strings.HasSuffix(v, ".slice") && !strings.ContainsAny(v, "%@") {
			slice, where = v, fmt.Sprintf("%s:%d", f.Name(), line)
		}
	})
	if err != nil || slice != "" {
		return slice, where, err
	}
	if at := strings.Index(unit, "@"); at > 0 {
		return "system-" + unitNameEscape(unit[:at]) + ".slice", "", nil
	}
	return "system.slice", "", nil
}

// ValidSlice says whether name is a slice name systemd 252 takes: a valid
// unit name ending in ".slice" whose prefix is "-" (RootSlice) or dash
// separated parts, none of them empty ("a-b.slice"; not "-a.slice",
// "a-.slice" or "a--b.slice"), and no template or instance.
func ValidSlice(name string) bool {
	prefix, ok := strings.CutSuffix(name, ".slice")
	if !ok || !validUnitName(name) || strings.Contains(name, "@") {
		return false
	}
	if prefix == "-" {
		return true
	}
	for _, part := range strings.Split(prefix, "-") {
		if part == "" {
			return false
		}
	}
	return true
}

// SliceParent is the slice above slice, as systemd's
// slice_build_parent_slice names it: "a-b.slice" is in "a.slice", a slice
// without a dash in RootSlice; "" for RootSlice itself.
func SliceParent(slice string) string {
	if slice == RootSlice {
		return ""
	}
	prefix := strings.TrimSuffix(slice, ".slice")
	i := strings.LastIndex(prefix, "-")
	if i < 0 {
		return RootSlice
	}
	return prefix[:i] + ".slice"
}

// SliceChain is slice and every slice above it, innermost first, without
// RootSlice ("a-b.slice": a-b.slice, a.slice).
func SliceChain(slice string) []string {
	var out []string
	for s := slice; s != "" && s != RootSlice; s = SliceParent(s) {
		out = append(out, s)
	}
	return out
}

// SliceTasksMax is the TasksMax= slice (a name as ValidSlice takes)
// gets after the next boot, with shares taken of ceiling (TasksCeiling,
// tasks): the last accepted assignment in a [Slice] section of its unit
// file and drop-ins (found as UnitNofile finds a unit's; a slice needs
// no unit file: system.slice.d/*.conf apply without one). A slice has no
// limit unless one is set (Tasks Unlimited, Set false: systemd gives
// DefaultTasksMax= to other units only); an empty TasksMax= gives it the
// manager's DefaultTasksMax= (ManagerTasksMax's, Key "DefaultTasksMax",
// ResetFile and ResetLine naming the empty line), as for a service. It
// also returns the slice's files, in the order read. Errors: a file that
// exists but cannot be read.
func SliceTasksMax(root, slice string, ceiling uint64, overlay map[string][]byte) (TasksSetting, []ConfFile, error) {
	t := tree{root: root, overlay: overlay}
	files, err := unitFiles(t, slice)
	if err != nil {
		return TasksSetting{}, files, err
	}
	accept := func(v string) bool { _, ok := ParseTasksMax(v, ceiling); return ok }
	s, err := lastTasksMax(t, files, "Slice", "TasksMax", accept, ceiling)
	switch {
	case err != nil:
		return TasksSetting{}, files, err
	case !s.Set:
		s.Tasks = Unlimited
		return s, files, nil
	case s.Text != "":
		return s, files, nil
	}
	m, _, err := TasksMaxIn(root, nil, ceiling, overlay)
	m.ResetFile, m.ResetLine = s.File, s.Line
	return m, files, err
}

// SliceTasks is the TasksMax= of one slice above a unit.
type SliceTasks struct {
	// Slice is the slice's name ("system.slice").
	Slice string
	TasksSetting
}

// UnitSliceTasks is the TasksMax= of every slice above unit after the
// next boot (UnitSlice, SliceChain, SliceTasksMax with shares taken of
// ceiling, tasks), innermost first, and the lowest of them (pids.max is
// hierarchical: a unit's tasks are capped by each; ok false when no slice
// sets a limit). Errors: a file that exists but cannot be read.
func UnitSliceTasks(root, unit string, ceiling uint64, overlay map[string][]byte) (all []SliceTasks, lowest SliceTasks, ok bool, err error) {
	slice, _, err := UnitSlice(root, unit, overlay)
	if err != nil {
		return nil, SliceTasks{}, false, err
	}
	for _, s := range SliceChain(slice) {
		set, _, err := SliceTasksMax(root, s, ceiling, overlay)
		if err != nil {
			return all, SliceTasks{}, false, err
		}
		st := SliceTasks{Slice: s, TasksSetting: set}
		all = append(all, st)
		if set.Tasks != Unlimited && (!ok || set.Tasks < lowest.Tasks) {
			lowest, ok = st, true
		}
	}
	return all, lowest, ok, nil
}

// unitNameEscape escapes s for a unit name part as systemd's
// unit_name_escape does: "/" becomes "-", and "-", "\", a leading "."
// and every byte but ASCII letters, digits, ":", "_" and "." become
// \xNN.
func unitNameEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '.' && i == 0, c == '-', c == '\\',
			!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.'):
			fmt.Fprintf(&b, "\\x%02x", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
