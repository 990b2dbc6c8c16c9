package facts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/plural"
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
// says where that is) and its files (hostconf.UnitNofile), err when they
// cannot be listed.
type sliceLevel struct {
	name, label string
	files       []hostconf.ConfFile
	err         error
}

// unitSlices is the chain of slices a unit that is not running goes in,
// nearest first (hostconf.UnitSliceIn, hostconf.SliceChain), each with its files listed once
// for the memory and task limits read from them; unseen names what of
// its Slice= could not be read (the chain is then empty: preflight does
// not guess the slice).
func (g *Gatherer) unitSlices(unit string, files []hostconf.ConfFile) (levels []sliceLevel, unseen []string) {
	slice, where, why, err := hostconf.UnitSliceIn(g.Root, unit, files, nil)
	switch {
	case err != nil:
		return nil, []string{fmt.Sprintf("the Slice= of %s (%v)", unit, err)}
	case why != "":
		return nil, []string{fmt.Sprintf("the slice of %s: %s", unit, why)}
	}
	for _, s := range hostconf.SliceChain(slice) {
		label := s
		if s == slice && where != "" {
			label = fmt.Sprintf("%s (Slice= at %s)", s, where)
		}
		_, sfiles, err := hostconf.UnitNofile(g.Root, s)
		g.readConf(sfiles)
		levels = append(levels, sliceLevel{name: s, label: label, files: sfiles, err: err})
	}
	return levels, nil
}

// sliceTasks is the TasksMax= of the slices a unit that is not running
// goes in that leaves the least room (limit less the pids.current of the
// slice's cgroup now, 0 when it has none; a slice's own default is no
// limit, but an empty TasksMax= is the manager's DefaultTasksMax=, as
// systemd 252's config_parse_tasks_max has it), resolved against ceiling:
// from "" when none limits. What cannot be read is unseen.
func (g *Gatherer) sliceTasks(levels []sliceLevel, ceiling uint64) (least cgroupLimit, unseen []string) {
	accept := func(v string) bool { _, ok := hostconf.ParseTasksMax(v, ceiling); return ok }
	for _, l := range levels {
		v, at := "", ""
		err := l.err
		if err == nil {
			v, at, err = hostconf.LastAccepted(g.Root, l.files, "Slice", "TasksMax", accept)
		}
		if err != nil {
			unseen = append(unseen, fmt.Sprintf("the TasksMax= of %s (%v)", l.label, err))
			continue
		}
		n, _ := hostconf.ParseTasksMax(v, ceiling)
		if v == "" && at != "" {
			// An empty TasksMax= in a slice is the manager's
			// DefaultTasksMax=, as for a service (systemd 252 --test).
			d, mfiles, err := hostconf.TasksMaxIn(g.Root, nil, ceiling, nil)
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
func (g *Gatherer) slicePids(slice string) (uint64, string, error) {
	base := "/sys/fs/cgroup"
	if st, err := os.Stat(g.path("/sys/fs/cgroup/pids")); err == nil && st.IsDir() {
		base = "/sys/fs/cgroup/pids"
	} else if _, err := os.Stat(g.path("/sys/fs/cgroup/cgroup.controllers")); err != nil {
		base = "/sys/fs/cgroup/unified"
	}
	dir := path.Join(base, SliceCgroup(slice))
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
