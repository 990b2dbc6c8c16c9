package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/tune/boot"
)

// A unit that is not running is judged on the limits of the slices its
// next start puts it in as well as its own: each slice's cgroup bounds
// every unit below it. unitSlices finds that chain once, and the memory
// (unitMemory) and task (unitTasks) limits are read from it.

// SliceRef names the slice setting that gives a limit of a unit that is
// not running, for the remedy: raise that setting of that slice.
type SliceRef struct {
	// Slice is the slice's unit name ("brk.slice").
	Slice string `json:"slice"`
	// Key and Value are the setting as written ("MemoryMax", "64M").
	Key   string `json:"key"`
	Value string `json:"value"`
	// At is the FILE:LINE that sets it.
	At string `json:"at"`
}

// sliceLevel is one slice of the chain a unit that is not running goes
// in: its name, how messages name it (the slice the unit's Slice= names
// says where that is) and its files (boot.UnitNofile), err when they
// cannot be listed.
type sliceLevel struct {
	name, label string
	files       []boot.ConfFile
	err         error
}

// unitSlices is the chain of slices a unit that is not running goes in,
// nearest first (unitSlice, sliceChain), each with its files listed once
// for the memory and task limits read from them; unseen names what of
// its Slice= could not be read (the chain is then empty: preflight does
// not guess the slice).
func (g *gatherer) unitSlices(unit string, files []boot.ConfFile) (levels []sliceLevel, unseen []string) {
	slice, where, why, err := g.unitSlice(unit, files)
	switch {
	case err != nil:
		return nil, []string{fmt.Sprintf("the Slice= of %s (%v)", unit, err)}
	case why != "":
		return nil, []string{fmt.Sprintf("the slice of %s: %s", unit, why)}
	}
	for _, s := range sliceChain(slice) {
		label := s
		if s == slice && where != "" {
			label = fmt.Sprintf("%s (Slice= at %s)", s, where)
		}
		_, sfiles, err := boot.UnitNofile(g.root, s)
		g.readConf(sfiles)
		levels = append(levels, sliceLevel{name: s, label: label, files: sfiles, err: err})
	}
	return levels, nil
}

// hostSpecifiers are the specifiers systemd 252's unit_name_printf
// (which Slice= goes through) takes from the host or the manager rather
// than the unit's name (COMMON_SYSTEM_SPECIFIERS, COMMON_CREDS_SPECIFIERS:
// architecture, OS release fields, boot and machine ID, host names,
// kernel release, the manager's user and group): preflight does not read
// them. Any specifier neither here nor in unitSpecifier makes systemd
// ignore the value ("Failed to resolve unit specifiers ...: Invalid
// slot"), %I, %P and %J among them.
const hostSpecifiers = "aAbBHlmMoqvwWgGuU"

// unitSpecifier is what specifier c of unit_name_printf gives for unit
// (a full name, "brk-tpl@a.service"): %i the instance ("" for a unit that
// is no instance), %p the prefix before "@" (or the type), %j the part of
// the prefix after its last dash, %n the name, %N the name without its
// type; ok is false for another specifier.
func unitSpecifier(unit string, c byte) (string, bool) {
	dot := strings.LastIndex(unit, ".")
	if dot < 0 {
		dot = len(unit)
	}
	prefix, instance := unit[:dot], ""
	if at := strings.Index(unit, "@"); at >= 0 && at < dot {
		prefix, instance = unit[:at], unit[at+1:dot]
	}
	switch c {
	case 'i':
		return instance, true
	case 'p':
		return prefix, true
	case 'j':
		return prefix[strings.LastIndex(prefix, "-")+1:], true
	case 'n':
		return unit, true
	case 'N':
		return unit[:dot], true
	}
	return "", false
}

// expandSlice expands the specifiers of a Slice= value for unit as
// systemd 252's specifier_printf does ("%%" is "%", a "%" at the end
// stays). ok is false when systemd ignores the value for a specifier it
// does not know; host is the first specifier it takes from the host
// (hostSpecifiers, "%H"), the name then not known.
func expandSlice(unit, v string) (name string, ok bool, host string) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i++; i == len(v) {
			b.WriteByte('%')
			break
		}
		c := v[i]
		s, known := unitSpecifier(unit, c)
		switch {
		case c == '%':
			b.WriteByte('%')
		case known:
			b.WriteString(s)
		case strings.IndexByte(hostSpecifiers, c) >= 0:
			if host == "" {
				host = "%" + string(c)
			}
		default:
			return "", false, ""
		}
	}
	return b.String(), true, host
}

// validSliceUnitName says whether name is a name systemd 252 assigns as
// a unit's Slice= (unit_name_is_valid with UNIT_NAME_PLAIN, then
// unit_set_slice's type check): shorter than 256 bytes, ending in
// ".slice" after at least one byte, each byte before it an ASCII letter
// or digit or one of ":-_.\" (no "@": an instance or template slice is
// refused).
func validSliceUnitName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".slice")
	if !ok || stem == "" || len(name) >= 256 {
		return false
	}
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(`:-_.\`, c) >= 0) {
			return false
		}
	}
	return true
}

// loadableSlice says whether systemd 252 can load a slice so named
// (slice_name_is_valid): "-.slice", or a name whose dashes are neither
// first, last nor two together. A unit whose Slice= names another slice
// is assigned it but does not start ("Unit a--b.slice failed to load
// properly").
func loadableSlice(name string) bool {
	if name == "-.slice" {
		return true
	}
	stem := strings.TrimSuffix(name, ".slice")
	return !strings.HasPrefix(stem, "-") && !strings.HasSuffix(stem, "-") && !strings.Contains(stem, "--")
}

// unitSlice is the slice a unit's cgroup goes in, as systemd 252 places
// it: its last Slice= that systemd takes (config_parse_unit_slice: the
// value with its specifiers expanded, expandSlice, must be a slice's
// unit name, validSliceUnitName; an empty value, one that is not, or one
// with a specifier systemd does not know is logged and ignored, the one
// before kept) and where that is set, else for an instance of a template
// the template's own slice (getty@tty1.service: system-getty.slice),
// else system.slice (unit_set_default_slice). why says, with slice "",
// why the slice is not known: a specifier taken from the host, or a
// slice systemd cannot load. Errors: a file that exists but cannot be
// read.
func (g *gatherer) unitSlice(unit string, files []boot.ConfFile) (slice, where, why string, err error) {
	asg, err := boot.Assignments(g.root, files, "Service", "Slice")
	if err != nil {
		return "", "", "", err
	}
	for _, a := range asg {
		name, ok, host := expandSlice(unit, a.Value)
		switch {
		case !ok:
		case host != "":
			slice, where, why = "", a.Where, fmt.Sprintf("Slice=%s (%s) takes %s from the host, which preflight does not read", a.Value, a.Where, host)
		case validSliceUnitName(name):
			slice, where, why = name, a.Where, ""
		}
	}
	switch {
	case why != "":
		return "", where, why, nil
	case slice != "" && !loadableSlice(slice):
		return "", where, fmt.Sprintf("Slice=%s (%s) names a slice systemd cannot load (a dash first, last or doubled: systemd.slice(5)), so the unit does not start", slice, where), nil
	case slice != "":
		return slice, where, "", nil
	}
	if _, ok := boot.TemplateOf(unit); ok {
		return "system-" + unitNameEscape(unit[:strings.Index(unit, "@")]) + ".slice", "", "", nil
	}
	return "system.slice", "", "", nil
}

// sliceTasks is the TasksMax= of the slices a unit that is not running
// goes in that leaves the least room (limit less the pids.current of the
// slice's cgroup now, 0 when it has none; a slice's own default is no
// limit, but an empty TasksMax= is the manager's DefaultTasksMax=, as
// systemd 252's config_parse_tasks_max has it), resolved against ceiling:
// from "" when none limits. What cannot be read is unseen.
func (g *gatherer) sliceTasks(levels []sliceLevel, ceiling uint64) (least cgroupLimit, unseen []string) {
	accept := func(v string) bool { _, ok := boot.ParseTasksMax(v, ceiling); return ok }
	for _, l := range levels {
		v, at := "", ""
		err := l.err
		if err == nil {
			v, at, err = boot.LastAccepted(g.root, l.files, "Slice", "TasksMax", accept)
		}
		if err != nil {
			unseen = append(unseen, fmt.Sprintf("the TasksMax= of %s (%v)", l.label, err))
			continue
		}
		n, _ := boot.ParseTasksMax(v, ceiling)
		if v == "" && at != "" {
			// An empty TasksMax= in a slice is the manager's
			// DefaultTasksMax=, as for a service (systemd 252 --test).
			d, mfiles, err := boot.TasksMaxIn(g.root, nil, ceiling, nil)
			g.readConf(mfiles)
			if err != nil {
				unseen = append(unseen, fmt.Sprintf("the DefaultTasksMax= an empty TasksMax= of %s takes (%v)", l.label, err))
				continue
			}
			v, n = "", d.Tasks
			if d.Set && d.Text == "" {
				n = Unlimited // an empty DefaultTasksMax= is no limit
			}
			at = fmt.Sprintf("%s: empty, so DefaultTasksMax=%s (%s)", at, d.Text, d.Where())
		}
		if at == "" || n == Unlimited {
			continue
		}
		cur, file, err := g.slicePids(l.name)
		if err != nil {
			unseen = append(unseen, fmt.Sprintf("the tasks in %s, whose TasksMax= is %s (%v)", l.label, v, err))
			continue
		}
		from := fmt.Sprintf("TasksMax=%s (%s) of %s (tasks: %s)", v, at, l.label, file)
		if strings.ContainsAny(v, "%‰‱") {
			from = fmt.Sprintf("TasksMax=%s (%s, of %s) of %s (tasks: %s)", v, at, plural.N(ceiling, "task"), l.label, file)
		}
		c := cgroupLimit{limit: n, usage: cur, from: from, slice: &SliceRef{Slice: l.name, Key: "TasksMax", Value: v, At: at}}
		least = lessRoom(least, c)
	}
	return least, unseen
}

// slicePids reads the tasks a slice's cgroup holds now (pids.current of
// the pids controller: /sys/fs/cgroup/pids on cgroup v1 or a hybrid
// host, else the v2 hierarchy) and the file; 0 ("none now") when the
// cgroup does not exist. Errors: a pids.current that cannot be read or
// parsed.
func (g *gatherer) slicePids(slice string) (uint64, string, error) {
	base := "/sys/fs/cgroup"
	if st, err := os.Stat(g.path("/sys/fs/cgroup/pids")); err == nil && st.IsDir() {
		base = "/sys/fs/cgroup/pids"
	} else if _, err := os.Stat(g.path("/sys/fs/cgroup/cgroup.controllers")); err != nil {
		base = "/sys/fs/cgroup/unified"
	}
	dir := path.Join(base, sliceCgroup(slice))
	if _, err := os.Stat(g.path(dir)); errors.Is(err, fs.ErrNotExist) {
		return 0, "none now, " + dir + " does not exist", nil
	}
	file := path.Join(dir, "pids.current")
	b, err := os.ReadFile(g.path(file))
	if err != nil {
		return 0, file, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, file, err
}
