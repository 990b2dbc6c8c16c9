package tune

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/boot"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// TasksMax= of the profile's units (systemd.tasks_max): written into the
// unit's drop-in next to LimitNOFILE (layer_systemd.go), never below what
// the unit gets now (keepTasksMax), checked at boot by tasksItems. A
// TasksMax= written as a share ("15%", systemd's default) is resolved
// against the host's task ceiling as systemd does (boot.TasksCeiling).

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

// fmtTasks is a number of tasks, or "infinity" for boot.Unlimited (the
// profile's spelling, profiles.TasksInfinity).
func fmtTasks(n uint64) string { return profiles.TasksMax(n).String() }

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

// keepTasksMax raises each unit's TasksMax= per will write to what the
// unit gets now (boot.UnitTasksMax: its files, else DefaultTasksMax=,
// else systemd's 15%, a share taken of the task ceiling after the
// sysctls), as keep does for nofile: hostprep never writes a lower one,
// and infinity stays infinity. A kept value is listed as skipped.
// Errors: exitcode.BadInput for a kernel.pid_max in the profile that is
// not a number; exitcode.Environment when a file cannot be read.
func (pl *Plan) keepTasksMax(per *journal.Persisted, targets map[string]target) error {
	if len(per.TasksMax) == 0 {
		return nil
	}
	ceiling, err := pl.tasksCeiling(targets)
	if err != nil {
		return err
	}
	for _, u := range slices.Sorted(maps.Keys(per.TasksMax)) {
		now, _, err := boot.UnitTasksMax(pl.env.bootRoot(), u, ceiling)
		if err != nil {
			return exitcode.Environmentf("tune: %v", err)
		}
		want := per.TasksMax[u]
		if now.Tasks <= want {
			continue
		}
		per.TasksMax[u] = now.Tasks
		of := ""
		if strings.ContainsAny(now.Text, "%‰‱") {
			of = fmt.Sprintf(" (%s of a task ceiling of %d)", now.Text, ceiling)
		}
		pl.Skipped = append(pl.Skipped, Skip{File: pl.env.path(files.ServiceDropIn(u)), Layer: Persistent, Current: "TasksMax=" + now.String(),
			Reason: fmt.Sprintf("TasksMax kept at %s for %s (the profile asks for %s): it already gets %s%s from %s=%s at %s, higher than the profile; hostprep never lowers a limit",
				now.String(), u, fmtTasks(want), now.String(), of, now.Key, now.Text, now.Where())})
	}
	return nil
}

// tasksCeiling is the task ceiling a TasksMax= share is taken of after
// this apply: kernel.pid_max as the profile sets it, else the lower of
// now and at boot (effective), and kernel.threads-max as the profile
// sets it, else now (not known in image mode). Errors: as effective's.
func (pl *Plan) tasksCeiling(targets map[string]target) (uint64, error) {
	pid, _, err := pl.effective(keyPidMax, targets, defaultPidMax)
	if err != nil {
		return 0, err
	}
	threads := liveThreadsMax(pl.env)
	if t, ok := targets[keyThreadsMax]; ok {
		threads, _ = strconv.ParseUint(t.value, 10, 64)
	}
	return boot.TasksCeiling(threads, pid), nil
}

// tasksItems compares each unit's TasksMax= hostprep persisted with what
// systemd gives it after the next boot (boot.UnitTasksMaxOverlay, shares
// taken of kernel.pid_max at boot and kernel.threads-max now); at least
// the persisted value is OK.
func tasksItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	if ok, _ := env.SystemdDecision(); !ok || len(per.TasksMax) == 0 {
		return nil, nil
	}
	root := env.bootRoot()
	pid, _, err := numberAtBoot(root, overlay, keyPidMax, defaultPidMax)
	if err != nil {
		return nil, err
	}
	ceiling := boot.TasksCeiling(liveThreadsMax(env), pid)
	var out []BootItem
	for _, u := range slices.Sorted(maps.Keys(per.TasksMax)) {
		got, read, err := boot.UnitTasksMaxOverlay(root, u, ceiling, overlay)
		if err != nil {
			return nil, err
		}
		it := tasksItem(env, u, read, per.TasksMax[u], got)
		notStarted(&it, read, u, "TasksMax")
		out = append(out, it)
	}
	return out, nil
}

// tasksItem compares systemd's boot TasksMax= of unit with want, which
// hostprep wrote in the unit's drop-in; read are the unit's files in the
// order systemd reads them. The problem names what wins instead, as
// systemdItem's does, or says that no TasksMax= of the unit is left (a
// later drop-in's empty TasksMax= resets it to the manager's default).
func tasksItem(env Env, unit string, read []boot.ConfFile, want uint64, got boot.TasksSetting) BootItem {
	own := files.ServiceDropIn(unit)
	it := BootItem{Limit: unit + " TasksMax", Want: fmtTasks(want), OK: true, Boot: BootValue{Value: got.String()}, hard: boot.Unlimited}
	switch {
	case got.Set:
		it.Boot.File, it.Boot.Line = got.File.Name(), got.Line
	case got.ResetLine > 0: // the empty TasksMax= that brought the default
		it.Boot.File, it.Boot.Line = got.ResetFile.Name(), got.ResetLine
	}
	if got.Tasks >= want {
		return it
	}
	it.OK = false
	from := got.Where()
	if got.Key == "DefaultTasksMax" {
		from = fmt.Sprintf("the manager's DefaultTasksMax=%s (%s)", got.Text, got.Where())
	}
	head := fmt.Sprintf("%s: after a reboot systemd gives it TasksMax %s from %s, below the %s hostprep wrote", it.Limit, got.String(), from, it.Want)
	switch {
	case got.ResetLine > 0 && got.ResetFile.Path == own:
		it.Problem = fmt.Sprintf("%s: hostprep's drop-in %s was edited (line %d is an empty TasksMax=, a reset to the manager's default); %s writes it again", head, own, got.ResetLine, env.reapply())
		return it
	case got.ResetLine > 0 && readsOwn(read, own) && hiderOf(read, own) < 0:
		it.Problem = fmt.Sprintf("%s: %s, read after hostprep's drop-in %s, resets it with an empty TasksMax= (back to the manager's default); hostprep never edits a file it does not own: remove that line, or give it the value you want", head, got.ResetWhere(), own)
		return it
	case got.Key == "DefaultTasksMax" && readsOwn(read, own) && hiderOf(read, own) < 0:
		it.Problem = fmt.Sprintf("%s: hostprep's drop-in %s no longer sets TasksMax= (edited); %s writes it again", head, own, env.reapply())
		return it
	}
	it.Problem = dropInProblem(env, head, own, read, got.File.Path)
	return it
}

// readsOwn says whether systemd reads hostprep's drop-in own (not masked).
func readsOwn(read []boot.ConfFile, own string) bool {
	return slices.ContainsFunc(read, func(f boot.ConfFile) bool { return f.Path == own && !f.Masked })
}

// hiderOf is the index in read of a file of own's name in a directory
// read first (system.control, /run), which hides hostprep's drop-in own
// and is not hostprep's to remove; -1 when none does.
func hiderOf(read []boot.ConfFile, own string) int {
	return slices.IndexFunc(read, func(f boot.ConfFile) bool {
		return f.Path != own && path.Base(f.Path) == path.Base(own) && path.Base(path.Dir(f.Path)) == path.Base(path.Dir(own))
	})
}
