package tune

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// TasksMax= of the profile's units (systemd.tasks_max): written into the
// unit's drop-in next to LimitNOFILE (layer_systemd.go), never below what
// the unit gets now (keepTasksMax), checked at boot by tasksItems. A
// TasksMax= written as a share ("15%", systemd's default) is resolved
// against the host's task ceiling as systemd does (hostconf.TasksCeiling; in
// an image, of the image's own sysctl.d values, and not at all when it
// does not set kernel.threads-max: taskCeiling). A slice above the unit
// with a lower TasksMax= caps it (sliceCaps).

const (
	keyPidMax     = "kernel.pid_max"
	keyThreadsMax = "kernel.threads-max"
	// defaultPidMax is the kernel's PID_MAX_DEFAULT, kernel.pid_max when
	// no file sets it (the kernel raises it on hosts with many CPUs).
	defaultPidMax = 32768
)

// tasksMaxText is unit's TasksMax= as the drop-in writes it ("16384",
// "infinity"), or "" when tasks has none for it.
func tasksMaxText(tasks map[string]uint64, unit string) string {
	n, ok := tasks[unit]
	if !ok {
		return ""
	}
	return fmtTasks(n)
}

// fmtTasks is a number of tasks as TasksMax= takes it, or "infinity" for
// hostconf.Unlimited (which profiles.TasksInfinity equals).
func fmtTasks(n uint64) string {
	if n == hostconf.Unlimited {
		return "infinity"
	}
	return strconv.FormatUint(n, 10)
}

// taskCeiling is the task ceiling TasksMax= shares are taken of after
// the next boot (hostconf.TasksCeiling of kernel.threads-max and
// kernel.pid_max), in tasks. known is false when kernel.threads-max is
// not known: in an image whose sysctl configuration (and profile) does
// not set it the kernel sizes it from the RAM of the host the image
// boots on (kernel/fork.c set_max_threads: RAM pages / (8 × THREAD_SIZE
// / PAGE_SIZE), RAM pages / 32 on x86-64, kept within 20 and
// FUTEX_TID_MASK), so no share can be resolved;
// tasks is then the most the ceiling can be (threads-max not taken) and
// why says what is missing.
type taskCeiling struct {
	tasks uint64
	known bool
	why   string
}

// ceilingOf is the taskCeiling of threads (kernel.threads-max, 0: not
// known) and pid (kernel.pid_max), in tasks; in names where threads-max
// was looked for ("the image's sysctl.d").
func ceilingOf(threads, pid uint64, in string) taskCeiling {
	c := taskCeiling{tasks: hostconf.TasksCeiling(threads, pid), known: threads > 0}
	if !c.known {
		c.why = fmt.Sprintf("kernel.threads-max, which systemd takes the share of as well as kernel.pid_max - 1 (%d), is set by no file of %s and the kernel sizes it from the RAM of the host it boots on", c.tasks, in)
	}
	return c
}

// isShare says whether a TasksMax=/DefaultTasksMax= value is a share of
// the task ceiling ("15%", "125‰", "1‱").
func isShare(v string) bool { return strings.ContainsAny(v, "%‰‱") }

// liveThreadsMax is kernel.threads-max on this host now, in tasks; 0 in
// image mode (the kernel sizes it from the RAM of the host the image
// boots on) or when it cannot be read.
func liveThreadsMax(env Env) uint64 {
	if env.ImageMode() {
		return 0
	}
	b, err := env.backend()
	if err != nil {
		return 0
	}
	v, err := b.Get(keyThreadsMax)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	return n
}

// ceilingWhere names where kernel.threads-max is looked for, for
// ceilingOf's why.
func ceilingWhere(env Env) string {
	if env.ImageMode() {
		return "the image's sysctl configuration"
	}
	return "the sysctl configuration (and this host's value could not be read)"
}

// keepTasksMax raises each unit's TasksMax= per will write to what the
// unit gets now (hostconf.UnitTasksMax: its files, else DefaultTasksMax=,
// else systemd's 15%, a share taken of the task ceiling after the
// sysctls), as keep does for nofile: hostprep never writes a lower one,
// and infinity stays infinity. A kept value is listed as skipped. A share
// of a ceiling that is not known (an image that does not set
// kernel.threads-max) is not kept: the profile's number is written, with
// a note. Errors: exitcode.BadInput for a kernel.pid_max or
// kernel.threads-max in the profile that is not a number;
// exitcode.Environment when a file cannot be read.
func (pl *Plan) keepTasksMax(per *journal.Persisted, targets map[string]target) error {
	if len(per.TasksMax) == 0 {
		return nil
	}
	ceiling, err := pl.tasksCeiling(targets)
	if err != nil {
		return err
	}
	for _, u := range slices.Sorted(maps.Keys(per.TasksMax)) {
		now, _, err := hostconf.UnitTasksMax(pl.env.bootRoot(), u, ceiling.tasks)
		if err != nil {
			return exitcode.Environmentf("tune: %w", err)
		}
		want := per.TasksMax[u]
		if isShare(now.Text) && !ceiling.known {
			pl.Notes = append(pl.Notes, fmt.Sprintf("TasksMax for %s: it gets %s=%s from %s, a share of a task ceiling hostprep cannot know here (%s), so it cannot tell whether that is more than the profile's %s: it writes TasksMax=%s, a number verify --boot can judge",
				u, now.Key, now.Text, now.Where(), ceiling.why, fmtTasks(want), fmtTasks(want)))
			continue
		}
		if now.Tasks <= want {
			continue
		}
		per.TasksMax[u] = now.Tasks
		of := ""
		if isShare(now.Text) {
			of = fmt.Sprintf(" (%s of a task ceiling of %d)", now.Text, ceiling.tasks)
		}
		pl.Skipped = append(pl.Skipped, Skip{File: pl.env.path(files.ServiceDropIn(u)), Layer: Persistent, Current: "TasksMax=" + now.String(),
			Reason: fmt.Sprintf("TasksMax kept at %s for %s (the profile asks for %s): it already gets %s%s from %s=%s at %s, higher than the profile; hostprep never lowers a limit",
				now.String(), u, fmtTasks(want), now.String(), of, now.Key, now.Text, now.Where())})
	}
	return nil
}

// tasksCeiling is the task ceiling a TasksMax= share is taken of after
// this apply: kernel.pid_max and kernel.threads-max each as the profile
// sets it, else the lower of now (on a host) and at boot (effective:
// in an image, the image's sysctl configuration; kernel.threads-max not
// known when it sets none). Errors: as effective's.
func (pl *Plan) tasksCeiling(targets map[string]target) (taskCeiling, error) {
	pid, _, err := pl.effective(keyPidMax, targets, defaultPidMax)
	if err != nil {
		return taskCeiling{}, err
	}
	threads, _, err := pl.effective(keyThreadsMax, targets, 0)
	if err != nil {
		return taskCeiling{}, err
	}
	return ceilingOf(threads, pid, ceilingWhere(pl.env)), nil
}

// bootTasksCeiling is the task ceiling after the next boot of the tree
// under the root with overlay's bytes (numberAtBoot): kernel.pid_max and
// kernel.threads-max as the sysctl configuration sets them, else the
// kernel default kernel.pid_max and this host's kernel.threads-max (none
// in image mode: not known). Errors: exitcode.Environment when a
// configuration file cannot be read.
func bootTasksCeiling(env Env, overlay map[string][]byte) (taskCeiling, error) {
	root := env.bootRoot()
	pid, _, err := numberAtBoot(root, overlay, keyPidMax, defaultPidMax)
	if err != nil {
		return taskCeiling{}, err
	}
	threads, _, err := numberAtBoot(root, overlay, keyThreadsMax, 0)
	if err != nil {
		return taskCeiling{}, err
	}
	if threads == 0 {
		threads = liveThreadsMax(env)
	}
	return ceilingOf(threads, pid, ceilingWhere(env)), nil
}

// tasksItems compares each unit's TasksMax= hostprep persisted with what
// systemd gives it after the next boot (hostconf.UnitTasksMaxOverlay, shares
// taken of bootTasksCeiling); at least the persisted value is OK, and a
// share of a ceiling that is not known is not.
func tasksItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	if ok, _ := env.SystemdDecision(); !ok || len(per.TasksMax) == 0 {
		return nil, nil
	}
	root := env.bootRoot()
	ceiling, err := bootTasksCeiling(env, overlay)
	if err != nil {
		return nil, err
	}
	var out []BootItem
	for _, u := range slices.Sorted(maps.Keys(per.TasksMax)) {
		got, read, err := hostconf.UnitTasksMaxOverlay(root, u, ceiling.tasks, overlay)
		if err != nil {
			return nil, err
		}
		it := tasksItem(env, u, read, per.TasksMax[u], got, ceiling)
		notStarted(env, &it, read, u, "TasksMax")
		if it.OK {
			if err := sliceCaps(&it, root, u, per.TasksMax[u], ceiling, overlay); err != nil {
				return nil, err
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// tasksItem compares systemd's boot TasksMax= of unit with want, which
// hostprep wrote in the unit's drop-in; read are the unit's files in the
// order systemd reads them, and shares are taken of ceiling. The problem
// names what wins instead, as systemdItem's does, or the empty
// TasksMax= that resets it to the manager's default; a share of a
// ceiling that is not known is not OK either ("unknown": hostprep cannot
// tell), unless even the most it can be is below want.
func tasksItem(env Env, unit string, read []hostconf.ConfFile, want uint64, got hostconf.TasksSetting, ceiling taskCeiling) BootItem {
	own := files.ServiceDropIn(unit)
	it := BootItem{Limit: unit + " TasksMax", Want: fmtTasks(want), OK: true, Boot: BootValue{Value: got.String()}, hard: hostconf.Unlimited}
	switch {
	case got.Set:
		it.Boot.File, it.Boot.Line = got.File.Name(), got.Line
	case got.ResetLine > 0: // the empty TasksMax= that brought the default
		it.Boot.File, it.Boot.Line = got.ResetFile.Name(), got.ResetLine
	}
	unknown := isShare(got.Text) && !ceiling.known
	if got.Tasks >= want && !unknown {
		return it
	}
	it.OK = false
	from := got.Where()
	if got.Key == "DefaultTasksMax" {
		from = fmt.Sprintf("the manager's DefaultTasksMax=%s (%s)", got.Text, got.Where())
	}
	head := fmt.Sprintf("%s: after a reboot systemd gives it TasksMax %s from %s, below the %s hostprep wrote", it.Limit, got.String(), from, it.Want)
	switch {
	case unknown && got.Tasks >= want:
		it.Boot.Value = "unknown (" + got.Text + ")"
		head = fmt.Sprintf("%s: after a reboot systemd gives it TasksMax=%s from %s, a share of a task ceiling hostprep cannot know here (%s), so it cannot tell whether the unit gets the %s hostprep wrote (a number, as systemd.tasks_max writes, can be judged; so can a share once kernel.threads-max is set in a sysctl.d file)", it.Limit, got.Text, from, ceiling.why, it.Want)
	case unknown:
		it.Boot.Value = "at most " + got.String()
		head = fmt.Sprintf("%s: after a reboot systemd gives it TasksMax=%s from %s, at most %s (of a task ceiling of at most %d), below the %s hostprep wrote", it.Limit, got.Text, from, got.String(), ceiling.tasks, it.Want)
	}
	it.Problem = tasksProblem(env, head, own, read, got)
	return it
}

// sliceCaps marks it, unit u's TasksMax item, not OK when the slice u
// runs in after the next boot cannot be judged (hostconf.UnitSlice: a
// specifier taken from the host, a slice that fails to load), or a slice
// above u (hostconf.ChainTasks: its Slice=, else system.slice, and each
// slice above that by dash prefix) has a
// TasksMax= below want, the one hostprep wrote, or a share of a ceiling
// not known: pids.max is hierarchical, so the slice caps every task of
// the unit. tune writes no slice's TasksMax=; the problem names the
// slice's file and line and the remedy. Errors: exitcode.Environment
// when a file cannot be read.
func sliceCaps(it *BootItem, root, u string, want uint64, ceiling taskCeiling, overlay map[string][]byte) error {
	slice, where, why, err := hostconf.UnitSlice(root, u, overlay)
	if err != nil {
		return exitcode.Environmentf("tune: %w", err)
	}
	if why != "" {
		// the slice is not known, or the unit does not start: no TasksMax
		// it gets can be judged
		it.OK, it.Boot = false, BootValue{Value: "unknown (slice)"}
		it.Problem = fmt.Sprintf("%s: %s; hostprep cannot tell what caps the unit's tasks: name the slice plainly (Slice=NAME.slice)", it.Limit, why)
		return nil
	}
	all, low, ok, err := hostconf.ChainTasks(root, slice, ceiling.tasks, overlay)
	if err != nil {
		return exitcode.Environmentf("tune: %w", err)
	}
	below := ok && low.Tasks < want
	if !below {
		i := slices.IndexFunc(all, func(s hostconf.SliceTasks) bool {
			return s.Tasks != hostconf.Unlimited && isShare(s.Text) && !ceiling.known
		})
		if i < 0 {
			return nil
		}
		low = all[i]
	}
	in := fmt.Sprintf("it runs in %s (systemd's default slice)", slice)
	if where != "" {
		in = fmt.Sprintf("it runs in %s (Slice= at %s)", slice, where)
	}
	from := low.Where()
	if low.Key == "DefaultTasksMax" {
		from = fmt.Sprintf("the manager's DefaultTasksMax=%s (%s), which the empty TasksMax= at %s gives it", low.Text, low.Where(), low.ResetWhere())
	}
	has := fmt.Sprintf("TasksMax %s from %s: pids.max is hierarchical, so the slice caps all the unit's tasks below the %s hostprep wrote in the unit's drop-in", low.String(), from, it.Want)
	it.Boot = BootValue{Value: low.String() + " (" + low.Slice + ")"}
	if !below {
		has = fmt.Sprintf("TasksMax=%s from %s, a share of a task ceiling hostprep cannot know here (%s): pids.max is hierarchical, so the slice caps all the unit's tasks, and hostprep cannot tell whether that reaches the %s it wrote in the unit's drop-in", low.Text, from, ceiling.why, it.Want)
		it.Boot = BootValue{Value: "unknown (" + low.Slice + " " + low.Text + ")"}
	}
	switch {
	case low.Key == "TasksMax":
		it.Boot.File, it.Boot.Line = low.File.Name(), low.Line
	case low.ResetLine > 0: // the empty TasksMax= that gave it the default
		it.Boot.File, it.Boot.Line = low.ResetFile.Name(), low.ResetLine
	}
	it.OK = false
	it.Problem = fmt.Sprintf("%s: %s, and the slice %s above it has %s; tune does not write a slice's TasksMax=: raise it there (or in a drop-in /etc/systemd/system/%s.d/*.conf with [Slice] TasksMax=N read after that line), or run the unit in another slice",
		it.Limit, in, low.Slice, has, low.Slice)
	return nil
}

// tasksProblem is tasksItem's problem after head (what systemd gives the
// unit, from where): the empty TasksMax= that resets it, hostprep's
// drop-in edited, or dropInProblem's.
func tasksProblem(env Env, head, own string, read []hostconf.ConfFile, got hostconf.TasksSetting) string {
	ours := readsOwn(read, own) && hiderOf(read, own) < 0
	switch {
	case got.ResetLine > 0 && got.ResetFile.Path == own:
		return fmt.Sprintf("%s: hostprep's drop-in %s was edited (line %d is an empty TasksMax=, a reset to the manager's default); %s writes it again", head, own, got.ResetLine, env.reapply())
	case got.ResetLine > 0 && ours:
		return fmt.Sprintf("%s: %s, read after hostprep's drop-in %s, resets it with an empty TasksMax= (back to the manager's default); hostprep never edits a file it does not own: remove that line, or give it the value you want", head, got.ResetWhere(), own)
	case got.Key == "DefaultTasksMax" && ours:
		return fmt.Sprintf("%s: hostprep's drop-in %s no longer sets TasksMax= (edited); %s writes it again", head, own, env.reapply())
	}
	return dropInProblem(env, head, own, read, got.File.Path)
}

// readsOwn says whether systemd reads hostprep's drop-in own (not masked).
func readsOwn(read []hostconf.ConfFile, own string) bool {
	return slices.ContainsFunc(read, func(f hostconf.ConfFile) bool { return f.Path == own && !f.Masked })
}

// hiderOf is the index in read of a file of own's name in a directory
// read first (system.control, /run), which hides hostprep's drop-in own
// and is not hostprep's to remove; -1 when none does.
func hiderOf(read []hostconf.ConfFile, own string) int {
	return slices.IndexFunc(read, func(f hostconf.ConfFile) bool {
		return f.Path != own && path.Base(f.Path) == path.Base(own) && path.Base(path.Dir(f.Path)) == path.Base(path.Dir(own))
	})
}
