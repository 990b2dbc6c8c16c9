package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// datanodeUnit is a stock IoTDB DataNode unit file: no TasksMax= of its
// own, so systemd gives it DefaultTasksMax= (15% of the task ceiling).
const datanodeUnit = "[Unit]\nDescription=IoTDB DataNode\n[Service]\nExecStart=/opt/iotdb/sbin/start-datanode.sh\n"

// wantTasksVerify runs verify --boot on env and wants the DataNode's
// TasksMax item ok (or not, then exit 1 mentioning each of mention) with
// boot as its boot value.
func wantTasksVerify(t *testing.T, env Env, ok bool, boot string, mention ...string) {
	t.Helper()
	bs, err := VerifyBoot(env)
	if ok {
		must(t, err)
	} else {
		wantCode(t, err, exitcode.Failed, mention...)
	}
	if it := tasksItemOf(bs.Items, "iotdb-datanode.service"); it == nil || it.OK != ok || it.Boot.Value != boot {
		t.Errorf("TasksMax item %+v, want ok %v, boot %q", it, ok, boot)
	}
}

// tasksItemOf is the boot item of unit's TasksMax in items, or nil.
func tasksItemOf(items []BootItem, unit string) *BootItem {
	for i := range items {
		if items[i].Limit == unit+" TasksMax" {
			return &items[i]
		}
	}
	return nil
}

// TestTasksMaxImageRoundTrip: the iotdb profile's systemd.tasks_max goes
// into the same hostprep drop-in as LimitNOFILE for each of its units, in
// an image (--root): the plan lists it, apply writes it, a second apply
// changes nothing, verify --boot and status read it back from the unit's
// files as systemd does (and fail naming a later drop-in that lowers it),
// and rollback leaves the image as it was, byte for byte. Field case:
// the DataNode, started with systemd's default TasksMax (4915 tasks with
// kernel.pid_max 32768), stopped creating session threads, and the only
// remedy was `systemctl set-property`, which tune neither journaled nor
// rolled back.
func TestTasksMaxImageRoundTrip(t *testing.T) {
	h := newHost(t, nil)
	h.env.Image = true
	// the stock host's 99-other.conf sets vm.swappiness 10, which wins over
	// the profile's 0 at boot: not this test's business
	must(t, os.Remove(filepath.Join(h.root, "etc/sysctl.d/99-other.conf")))
	for _, u := range []string{"iotdb-datanode.service", "iotdb-confignode.service"} {
		must(t, os.MkdirAll(filepath.Join(h.root, "lib/systemd/system"), 0o755))
		must(t, os.WriteFile(filepath.Join(h.root, "lib/systemd/system", u), []byte(datanodeUnit), 0o644))
	}
	before := h.snapshot()
	p, err := profiles.Load("iotdb", nil)
	must(t, err)
	if p.Systemd.TasksMax == nil || *p.Systemd.TasksMax != 16384 {
		t.Fatalf("iotdb profile: systemd.tasks_max %v, want 16384", p.Systemd.TasksMax)
	}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	if it := tasksItemOf(pl.Boot, "iotdb-datanode.service"); it == nil || !it.OK || it.Boot.Value != "16384" {
		t.Fatalf("plan: boot item of the DataNode's TasksMax %+v", it)
	}
	_, err = h.apply(p)
	must(t, err)
	dropIn := files.ServiceDropIn("iotdb-datanode")
	got, _ := h.file(dropIn)
	if !strings.Contains(got, "[Service]\nLimitNOFILE=1048576:1048576\nTasksMax=16384\n") {
		t.Fatalf("%s:\n%s", dropIn, got)
	}
	res, err := h.apply(p)
	must(t, err)
	if res.Changed || len(res.Changes) != 0 {
		t.Errorf("second apply: changed %v, %+v", res.Changed, res.Changes)
	}
	bs, err := VerifyBoot(h.env)
	must(t, err)
	it := tasksItemOf(bs.Items, "iotdb-datanode.service")
	if it == nil || !it.OK || it.Want != "16384" || it.Boot.Value != "16384" || it.Boot.File != dropIn {
		t.Fatalf("verify --boot: DataNode TasksMax item %+v", it)
	}
	st, err := StatusOf(h.env)
	must(t, err)
	if it := tasksItemOf(st.Boot, "iotdb-confignode.service"); it == nil || !it.OK {
		t.Errorf("status: ConfigNode TasksMax item %+v", it)
	}
	// A drop-in read after hostprep's lowers it: verify --boot names it.
	later := filepath.Join(h.root, "etc/systemd/system/iotdb-datanode.service.d/99-admin.conf")
	must(t, os.WriteFile(later, []byte("[Service]\nTasksMax=4096\n"), 0o644))
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "iotdb-datanode.service TasksMax", "4096", "99-admin.conf", "below the 16384 hostprep wrote")
	must(t, os.Remove(later))
	// hostprep's own line edited away: named as hostprep's file.
	must(t, os.WriteFile(filepath.Join(h.root, dropIn), []byte(strings.Replace(got, "TasksMax=16384\n", "", 1)), 0o644))
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "iotdb-datanode.service TasksMax", "DefaultTasksMax=15%", "no longer sets TasksMax=")
	must(t, os.WriteFile(filepath.Join(h.root, dropIn), []byte(got), 0o644))
	h.rollback()
	h.assertUnchanged(before)
}

// TestTasksMaxNeverLowered: like a nofile limit, the profile's tasks_max
// is at-least: a unit that already gets more (its own TasksMax=, a
// share of the task ceiling, infinity) keeps it in hostprep's drop-in,
// and the plan says so.
func TestTasksMaxNeverLowered(t *testing.T) {
	prof, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [iotdb-datanode]\n  limit_nofile: {soft: 65536, hard: 65536}\n  tasks_max: 16384\n"))
	must(t, err)
	for _, c := range []struct {
		name  string
		tree  map[string]string
		write string // TasksMax= in hostprep's drop-in
		kept  string // in the skip's reason; "" = none
	}{
		{"systemd's 15% of 32767", nil, "16384", ""},
		{"the unit's own 20000", map[string]string{"/lib/systemd/system/iotdb-datanode.service": datanodeUnit + "TasksMax=20000\n"}, "20000",
			"TasksMax kept at 20000 for iotdb-datanode.service (the profile asks for 16384): it already gets 20000 from TasksMax=20000 at /lib/systemd/system/iotdb-datanode.service:5"},
		{"infinity", map[string]string{"/etc/systemd/system/iotdb-datanode.service.d/10-admin.conf": "[Service]\nTasksMax=infinity\n"}, "infinity", "TasksMax kept at infinity"},
		{"DefaultTasksMax=50% with pid_max 4194304 and threads-max 3000000 at boot", map[string]string{"/etc/sysctl.d/50-pid-max.conf": "kernel.pid_max = 4194304\n",
			"/usr/lib/sysctl.d/60-threads.conf": "kernel.threads-max = 3000000\n",
			"/etc/systemd/system.conf":          "[Manager]\nDefaultTasksMax=50%\n"}, "1500000", "1500000 (50% of a task ceiling of 3000000)"},
		{"DefaultTasksMax=50% in an image that does not set threads-max", map[string]string{"/etc/sysctl.d/50-pid-max.conf": "kernel.pid_max = 4194304\n",
			"/etc/systemd/system.conf": "[Manager]\nDefaultTasksMax=50%\n"}, "16384", ""},
		{"the unit's own 0x3c%, base 0", map[string]string{"/etc/sysctl.d/50-threads.conf": "kernel.threads-max = 100000\nkernel.pid_max = 4194304\n",
			"/lib/systemd/system/iotdb-datanode.service": datanodeUnit + "TasksMax=0x3c%\n"}, "60000", "TasksMax kept at 60000"},
		{"the unit's own 060%, octal", map[string]string{"/etc/sysctl.d/50-threads.conf": "kernel.threads-max = 40000\nkernel.pid_max = 4194304\n",
			"/lib/systemd/system/iotdb-datanode.service": datanodeUnit + "TasksMax=060%\n"}, "19200", "TasksMax kept at 19200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := map[string]string{"/lib/systemd/system/iotdb-datanode.service": datanodeUnit}
			for k, v := range c.tree {
				tree[k] = v
			}
			img, env := newImage(t, tree)
			pl, err := NewPlan(prof, env)
			must(t, err)
			var reason string
			for _, s := range pl.Skipped {
				if strings.Contains(s.Reason, "TasksMax kept") {
					reason = s.Reason
				}
			}
			if c.kept == "" && reason != "" || !strings.Contains(reason, c.kept) || c.kept != "" && !strings.Contains(reason, "never lowers") {
				t.Errorf("plan's skip %q, want %q", reason, c.kept)
			}
			_, err = Apply(t.Context(), prof, Options{Env: env})
			must(t, err)
			b, err := os.ReadFile(filepath.Join(img, files.ServiceDropIn("iotdb-datanode")))
			must(t, err)
			if !strings.Contains(string(b), "\nTasksMax="+c.write+"\n") {
				t.Errorf("drop-in, want TasksMax=%s:\n%s", c.write, b)
			}
			_, err = VerifyBoot(env)
			must(t, err)
		})
	}
}

// tasksProfile is a profile that gives iotdb-datanode nofile and
// TasksMax 16384.
func tasksProfile(t *testing.T) *profiles.Profile {
	t.Helper()
	prof, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [iotdb-datanode]\n  limit_nofile: {soft: 65536, hard: 65536}\n  tasks_max: 16384\n"))
	must(t, err)
	return prof
}

// TestTasksMaxMaskedUnit: a unit masked after apply (its unit file in
// /etc a link to /dev/null) is never started, so its TasksMax item is
// not OK, like its LimitNOFILE item: both say the unit is masked. Field
// case: verify --boot flagged LimitNOFILE as masked and said TasksMax ok.
func TestTasksMaxMaskedUnit(t *testing.T) {
	img, env := newImage(t, map[string]string{"/lib/systemd/system/iotdb-datanode.service": datanodeUnit})
	_, err := Apply(t.Context(), tasksProfile(t), Options{Env: env})
	must(t, err)
	must(t, os.Symlink("/dev/null", filepath.Join(img, "etc/systemd/system/iotdb-datanode.service")))
	bs, err := VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "iotdb-datanode.service TasksMax: the unit is masked", "no TasksMax applies", "iotdb-datanode.service LimitNOFILE: the unit is masked")
	if it := tasksItemOf(bs.Items, "iotdb-datanode.service"); it == nil || it.OK {
		t.Errorf("TasksMax item of a masked unit: %+v", it)
	}
}

// TestTasksMaxResetNamed: an empty TasksMax= in a drop-in read after
// hostprep's resets the unit to the manager's default; verify --boot's
// item names that file and line (as SET BY and in the problem) instead
// of guessing between an edit and a reset.
func TestTasksMaxResetNamed(t *testing.T) {
	img, env := newImage(t, map[string]string{"/lib/systemd/system/iotdb-datanode.service": datanodeUnit,
		"/etc/sysctl.d/50-threads.conf": "kernel.threads-max = 100000\n"})
	_, err := Apply(t.Context(), tasksProfile(t), Options{Env: env})
	must(t, err)
	reset := "/etc/systemd/system/iotdb-datanode.service.d/99-admin.conf"
	must(t, os.WriteFile(filepath.Join(img, reset), []byte("[Service]\n# back to the default\nTasksMax=\n"), 0o644))
	bs, err := VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, reset+":3, read after hostprep's drop-in", "resets it with an empty TasksMax=")
	if err != nil && strings.Contains(err.Error(), "(edited)") {
		t.Errorf("the problem still guesses an edit: %v", err)
	}
	if it := tasksItemOf(bs.Items, "iotdb-datanode.service"); it == nil || it.OK || it.Boot.File != reset || it.Boot.Line != 3 {
		t.Errorf("TasksMax item: %+v, want not OK, set by %s:3", it, reset)
	}
}

// TestTasksMaxImageCeiling: in an image the task ceiling a share is taken
// of comes from the image's own sysctl configuration, kernel.pid_max
// and kernel.threads-max both (systemd takes the lower of threads-max
// and pid_max - 1); threads-max that the image does not set is sized by
// the kernel from the RAM of the host it boots on, so a share cannot be
// judged ok then: verify --boot says it cannot tell, and the plan does
// not claim a number it cannot know ("already gets 629145 (15% of
// 4194303)") but writes the profile's. Field cases: Debian's
// 50-pid-max.conf with a drop-in's TasksMax=1% was judged 41943, ok (a
// host with threads-max 192730 gives 1927); an image's threads-max 8000
// with TasksMax=60% was judged 19660, ok (systemd: 4800).
func TestTasksMaxImageCeiling(t *testing.T) {
	const pidMax = "/usr/lib/sysctl.d/50-pid-max.conf"
	later := "/etc/systemd/system/iotdb-datanode.service.d/99-admin.conf"
	for _, c := range []struct {
		name    string
		tree    map[string]string
		later   string // TasksMax= of a drop-in after hostprep's
		ok      bool
		boot    string
		mention []string
	}{
		{"1% of pid_max 4194304, threads-max unset", map[string]string{pidMax: "kernel.pid_max = 4194304\n"}, "1%", false, "unknown (1%)",
			[]string{"cannot tell", "kernel.threads-max", "by no file of the image's sysctl configuration", "a number, as systemd.tasks_max writes, can be judged", later + ":2"}},
		{"1% of pid_max 4194304, threads-max 192730", map[string]string{pidMax: "kernel.pid_max = 4194304\n", "/etc/sysctl.d/10-threads.conf": "kernel.threads-max = 192730\n"}, "1%", false, "1927",
			[]string{"TasksMax 1927 from " + later + ":2, below the 28909"}}, // the plan keeps systemd's 15% of 192730
		{"60% of threads-max 8000", map[string]string{"/etc/sysctl.d/10-threads.conf": "kernel.threads-max = 8000\n"}, "60%", false, "4800",
			[]string{"TasksMax 4800 from " + later + ":2, below the 16384"}},
		{"0.1% of at most 32767 is below anyway", nil, "0.1%", false, "at most 32",
			[]string{"at most 32 (of a task ceiling of at most 32767), below the 16384"}},
		{"60% of threads-max 100000", map[string]string{pidMax: "kernel.pid_max = 4194304\n", "/etc/sysctl.d/10-threads.conf": "kernel.threads-max = 100000\n"}, "60%", true, "60000", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := map[string]string{"/lib/systemd/system/iotdb-datanode.service": datanodeUnit}
			for k, v := range c.tree {
				tree[k] = v
			}
			img, env := newImage(t, tree)
			pl, err := NewPlan(tasksProfile(t), env)
			must(t, err)
			for _, s := range pl.Skipped {
				if strings.Contains(s.Reason, "TasksMax kept") && !strings.Contains(s.Reason, "of a task ceiling of 192730") {
					t.Errorf("plan keeps a TasksMax: %s", s.Reason)
				}
			}
			_, err = Apply(t.Context(), tasksProfile(t), Options{Env: env})
			must(t, err)
			must(t, os.WriteFile(filepath.Join(img, later), []byte("[Service]\nTasksMax="+c.later+"\n"), 0o644))
			wantTasksVerify(t, env, c.ok, c.boot, c.mention...)
		})
	}
	// The plan: systemd's 15% of a ceiling it cannot know is not kept.
	_, env := newImage(t, map[string]string{pidMax: "kernel.pid_max = 4194304\n", "/lib/systemd/system/iotdb-datanode.service": datanodeUnit})
	pl, err := NewPlan(tasksProfile(t), env)
	must(t, err)
	all := strings.Join(append(append([]string{}, pl.Notes...), pl.Warnings...), "\n")
	for _, s := range pl.Skipped {
		all += "\n" + s.Reason
	}
	if strings.Contains(all, "629145") || !strings.Contains(all, "cannot know here") || !strings.Contains(all, "it writes TasksMax=16384") {
		t.Errorf("plan's messages:\n%s", all)
	}
}

// TestTasksMaxSliceCaps: a slice above the unit with a lower TasksMax=
// caps the unit's tasks (pids.max is hierarchical), so the unit's
// TasksMax item is not ok and names the slice's file and line and that
// tune writes no slice limit; the plan warns. Slices are read as systemd
// reads them: the unit's Slice= (else system.slice), each slice above it
// by dash prefix, their unit files and drop-ins. Field case: a
// system.slice.d drop-in's TasksMax=1000 under a unit given 16384, and
// plan, apply and verify --boot said 16384, ok.
func TestTasksMaxSliceCaps(t *testing.T) {
	const unitFile = "/lib/systemd/system/iotdb-datanode.service"
	for _, c := range []struct {
		name    string
		tree    map[string]string
		ok      bool
		boot    string
		mention []string
	}{
		{"system.slice drop-in", map[string]string{"/etc/systemd/system/system.slice.d/50-cap.conf": "[Slice]\nTasksMax=1000\n"}, false, "1000 (system.slice)",
			[]string{"it runs in system.slice (systemd's default slice)", "TasksMax 1000 from /etc/systemd/system/system.slice.d/50-cap.conf:2", "tune does not write a slice's TasksMax="}},
		{"the unit's Slice=", map[string]string{unitFile: datanodeUnit + "Slice=iotdb.slice\n", "/etc/systemd/system/iotdb.slice": "[Unit]\nDescription=IoTDB\n[Slice]\nTasksMax=2000\n"}, false, "2000 (iotdb.slice)",
			[]string{"it runs in iotdb.slice (Slice= at " + unitFile + ":5)", "TasksMax 2000 from /etc/systemd/system/iotdb.slice:4"}},
		{"a slice above the unit's by dash prefix", map[string]string{unitFile: datanodeUnit + "Slice=iotdb-data.slice\n",
			"/usr/lib/systemd/system/iotdb.slice":                "[Slice]\nTasksMax=3000\n",
			"/etc/systemd/system/iotdb-data.slice.d/10-max.conf": "[Slice]\nTasksMax=infinity\n"}, false, "3000 (iotdb.slice)",
			[]string{"the slice iotdb.slice above it has TasksMax 3000 from /usr/lib/systemd/system/iotdb.slice:2"}},
		{"a slice's higher limit", map[string]string{"/etc/systemd/system/system.slice.d/50-cap.conf": "[Slice]\nTasksMax=50000\n"}, true, "16384", nil},
		{"a slice's share of a ceiling not known", map[string]string{"/etc/systemd/system/system.slice.d/50-cap.conf": "[Slice]\nTasksMax=80%\n"}, false, "unknown (system.slice 80%)",
			[]string{"TasksMax=80% from /etc/systemd/system/system.slice.d/50-cap.conf:2, a share of a task ceiling hostprep cannot know here"}},
		{"a slice's share of a known ceiling", map[string]string{"/etc/systemd/system/system.slice.d/50-cap.conf": "[Slice]\nTasksMax=10%\n",
			"/etc/sysctl.d/50-threads.conf": "kernel.threads-max = 100000\n"}, false, "3276 (system.slice)", []string{"TasksMax 3276 from"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tree := map[string]string{unitFile: datanodeUnit}
			for k, v := range c.tree {
				tree[k] = v
			}
			_, env := newImage(t, tree)
			pl, err := NewPlan(tasksProfile(t), env)
			must(t, err)
			warned := strings.Contains(strings.Join(pl.Warnings, "\n"), "tune does not write a slice's TasksMax=")
			if warned == c.ok {
				t.Errorf("plan warns of the slice: %v, want %v:\n%s", warned, !c.ok, strings.Join(pl.Warnings, "\n"))
			}
			_, err = Apply(t.Context(), tasksProfile(t), Options{Env: env})
			must(t, err)
			wantTasksVerify(t, env, c.ok, c.boot, c.mention...)
			st, err := StatusOf(env)
			must(t, err)
			if it := tasksItemOf(st.Boot, "iotdb-datanode.service"); it == nil || it.OK != c.ok {
				t.Errorf("status: TasksMax item %+v, want ok %v", it, c.ok)
			}
		})
	}
}
