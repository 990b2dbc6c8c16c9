package hostconf

import (
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/unitname"
)

// RootSlice is systemd's root slice, the root cgroup: it is above every
// other slice and takes no TasksMax= (the root cgroup has no pids.max).
const RootSlice = "-.slice"

// UnitSlice is UnitSliceIn for unit (emqx or emqx.service) with the
// files UnitNofile lists for it, as if the files in overlay (paths
// relative to root) had the given bytes.
func UnitSlice(root, unit string, overlay map[string][]byte) (slice, where, why string, err error) {
	unit = unitname.Service(unit)
	files, err := unitFiles(tree{root: root, overlay: overlay}, unit)
	if err != nil {
		return "", "", "", err
	}
	return UnitSliceIn(root, unit, files, overlay)
}

// UnitSliceIn is the slice unit (a full name, "brk-tpl@a.service") runs
// in after the next boot, as systemd 252 places it, files being the
// unit's (as UnitNofile lists them): its last Slice= in a [Service]
// section that systemd takes (config_parse_unit_slice: the value with
// its specifiers expanded, expandSlice, must be a slice's unit name,
// sliceUnitName; an empty value, one that is not, or one with a
// specifier systemd does not know is logged and ignored, the one before
// kept), and where is the FILE:LINE of that line; else for an instance
// of a template system-PREFIX.slice (getty@tty1.service:
// system-getty.slice, the prefix escaped as unit_name_escape does), else
// system.slice (unit_set_default_slice), where "". why, when not "",
// says the unit's slice cannot be judged: a specifier systemd takes from
// the host, which this model does not read (slice ""), or a name
// ValidSlice refuses, such as "a--b.slice" (slice is that name: systemd
// puts the unit in it, the slice fails to load and the unit does not
// start). Errors: a file that exists but cannot be read.
func UnitSliceIn(root, unit string, files []ConfFile, overlay map[string][]byte) (slice, where, why string, err error) {
	err = eachAssignment(tree{root: root, overlay: overlay}, files, "Service", "Slice", func(v string, f ConfFile, line int) {
		name, ok, host := expandSlice(unit, v)
		at := fmt.Sprintf("%s:%d", f.Name(), line)
		switch {
		case !ok:
		case host != "":
			slice, where, why = "", at, fmt.Sprintf("Slice=%s (%s) takes %s from the host, which hostprep does not read", v, at, host)
		case sliceUnitName(name):
			slice, where, why = name, at, ""
		}
	})
	switch {
	case err != nil || why != "":
		return slice, where, why, err
	case slice != "" && !ValidSlice(slice):
		return slice, where, fmt.Sprintf("Slice=%s (%s) names a slice systemd cannot load (a dash first, last or doubled: systemd.slice(5)), so the unit does not start", slice, where), nil
	case slice != "":
		return slice, where, "", nil
	}
	if at := strings.Index(unit, "@"); at > 0 {
		return "system-" + unitNameEscape(unit[:at]) + ".slice", "", "", nil
	}
	return "system.slice", "", "", nil
}

// ValidSlice says whether name is a slice name systemd 252 can load
// (slice_name_is_valid): a slice's unit name (sliceUnitName) whose stem
// is "-" (RootSlice) or dash separated parts, none of them empty
// ("a-b.slice"; not "-a.slice", "a-.slice" or "a--b.slice").
func ValidSlice(name string) bool {
	if !sliceUnitName(name) {
		return false
	}
	stem := strings.TrimSuffix(name, ".slice")
	return stem == "-" || !strings.HasPrefix(stem, "-") && !strings.HasSuffix(stem, "-") && !strings.Contains(stem, "--")
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

// ChainTasks is the TasksMax= of slice and every slice above it after
// the next boot (SliceChain, SliceTasksMax with shares taken of ceiling,
// tasks), innermost first, and the lowest of them (pids.max is
// hierarchical: a unit's tasks are capped by each; ok false when no slice
// sets a limit). Errors: a file that exists but cannot be read.
func ChainTasks(root, slice string, ceiling uint64, overlay map[string][]byte) (all []SliceTasks, lowest SliceTasks, ok bool, err error) {
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
