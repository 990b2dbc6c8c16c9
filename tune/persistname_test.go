package tune

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// hostprep has one sysctl.d file. --persist-name is remembered (an apply
// without it keeps the file where it is), and an apply under another name
// moves the file: the one under the former name is taken back (removed,
// or its original restored) instead of staying behind with old values
// that, sorting later, would win at boot while status said ok.
func TestPersistNameIsRememberedAndMoves(t *testing.T) {
	somaxconn := func(name, v string) *profiles.Profile {
		return &profiles.Profile{Name: name, Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: v, Mode: profiles.AtLeast}}}
	}
	backlog := &profiles.Profile{Name: "backlog", Sysctl: map[string]profiles.Sysctl{"net.core.netdev_max_backlog": {Value: "16384", Mode: profiles.AtLeast}}}
	const zz, moved = "/etc/sysctl.d/zz-hostprep.conf", "/etc/sysctl.d/70-hostprep.conf"
	ownedSysctlD := func(h *fakeHost) []string {
		t.Helper()
		st, err := journal.Load(h.env.stateFile())
		must(t, err)
		var out []string
		for p := range st.Files {
			if filepath.Dir(p) == filepath.Join(h.root, "etc/sysctl.d") {
				out = append(out, "/etc/sysctl.d/"+filepath.Base(p))
			}
		}
		slices.Sort(out)
		return out
	}

	t.Run("remembered, then moved", func(t *testing.T) {
		h := newHost(t, nil)
		h.env.PersistName = filepath.Base(zz)
		_, err := h.apply(somaxconn("a", "8192"))
		must(t, err)
		h.env.PersistName = ""
		_, err = h.apply(backlog)
		must(t, err)
		if _, ok := h.file(files.SysctlConf); ok {
			t.Fatalf("an apply without --persist-name wrote %s next to %s", files.SysctlConf, zz)
		}
		if got := ownedSysctlD(h); !slices.Equal(got, []string{zz}) {
			t.Fatalf("owned sysctl.d files = %v, want [%s]", got, zz)
		}

		h.env.PersistName = filepath.Base(moved)
		res, err := h.apply(somaxconn("b", "16384"))
		must(t, err)
		if _, ok := h.file(zz); ok {
			t.Errorf("the file under the former name %s is still there", zz)
		}
		conf, _ := h.file(moved)
		for _, want := range []string{"net.core.somaxconn = 16384", "net.core.netdev_max_backlog = 16384"} {
			if !strings.Contains(conf, want) {
				t.Errorf("%s lacks %q:\n%s", moved, want, conf)
			}
		}
		if got := ownedSysctlD(h); !slices.Equal(got, []string{moved}) {
			t.Errorf("owned sysctl.d files after the move = %v, want [%s]", got, moved)
		}
		if !slices.ContainsFunc(res.Changes, func(c Change) bool { return c.File == filepath.Join(h.root, zz) && c.To == "absent" }) {
			t.Errorf("the move is not a listed change: %+v", res.Changes)
		}
		h.env.PersistName = ""
		if bs, err := VerifyBoot(h.env); err != nil || bs.Failing != 0 {
			t.Fatalf("verify --boot after the move: %v %+v", err, bs)
		}
		s, err := StatusOf(h.env)
		must(t, err)
		if s.Drift != 0 {
			t.Errorf("status after the move: %d drifted: %+v", s.Drift, s.Items)
		}
		h.rollback()
		for _, f := range []string{zz, moved, files.SysctlConf} {
			if _, ok := h.file(f); ok {
				t.Errorf("rollback left %s", f)
			}
		}
	})

	t.Run("an admin's file under the former name gets its bytes back", func(t *testing.T) {
		h := newHost(t, nil)
		const own = "# an admin's file\nnet.core.somaxconn = 4096\n"
		h.layFiles(map[string]string{zz: own})
		h.env.PersistName = filepath.Base(zz)
		_, err := h.apply(somaxconn("a", "8192"))
		must(t, err)
		h.env.PersistName = filepath.Base(moved)
		res, err := h.apply(somaxconn("a", "8192"))
		must(t, err)
		if got, _ := h.file(zz); got != own {
			t.Errorf("%s after the move = %q, want the admin's bytes back", zz, got)
		}
		// Restored, it is the admin's again: it wins at boot (it sorts
		// after 70-hostprep.conf) and the warning says so, not that it is
		// hostprep's file that an apply would take back.
		w := strings.Join(res.Warnings, "\n")
		if !strings.Contains(w, "zz-hostprep.conf:2 sets 4096") || !strings.Contains(w, "does not own") || strings.Contains(w, "it is hostprep's file") {
			t.Errorf("warnings after restoring the admin's file:\n%s", w)
		}
	})

	t.Run("an edited file under the former name is left, with a warning", func(t *testing.T) {
		h := newHost(t, nil)
		h.env.PersistName = filepath.Base(zz)
		_, err := h.apply(somaxconn("a", "8192"))
		must(t, err)
		conf, _ := h.file(zz)
		h.layFiles(map[string]string{zz: conf + "net.core.somaxconn = 1024\n"})
		h.env.PersistName = filepath.Base(moved)
		res, err := h.apply(somaxconn("a", "8192"))
		must(t, err)
		if _, ok := h.file(zz); !ok {
			t.Fatalf("an edited file was taken back")
		}
		w := strings.Join(res.Warnings, "\n")
		if !strings.Contains(w, filepath.Base(zz)) || !strings.Contains(w, "former --persist-name") {
			t.Errorf("no warning about the edited former file:\n%s", w)
		}
		// The name is still remembered with two sysctl.d files journaled.
		h.env.PersistName = ""
		_, err = h.apply(somaxconn("a", "16384"))
		must(t, err)
		if _, ok := h.file(files.SysctlConf); ok {
			t.Errorf("an apply without --persist-name after the move wrote %s instead of keeping %s", files.SysctlConf, moved)
		}
	})
}

// An apply killed part way through a move is finished, not undone, by
// "apply again": the journal, written before the first change, names the
// new file, and that name wins over the files journaled.
func TestInterruptedMoveKeepsTheNewName(t *testing.T) {
	st := journal.New()
	st.Files["/img/etc/sysctl.d/60-hostprep.conf"] = &journal.File{}
	st.Files["/img/etc/sysctl.d/zz-hostprep.conf"] = &journal.File{}
	st.PersistName = "zz-hostprep.conf"
	if got := (Env{Root: "/img"}).keepPersistName(st).PersistName; got != "zz-hostprep.conf" {
		t.Errorf("persist name with two journaled files = %q, want the journal's zz-hostprep.conf", got)
	}
	st.PersistName = ""
	delete(st.Files, "/img/etc/sysctl.d/60-hostprep.conf")
	if got := (Env{Root: "/img"}).keepPersistName(st).PersistName; got != "zz-hostprep.conf" {
		t.Errorf("persist name of an older journal with one file = %q, want zz-hostprep.conf", got)
	}
	if got := (Env{Root: "/img", PersistName: "b.conf"}).keepPersistName(st).PersistName; got != "b.conf" {
		t.Errorf("a given --persist-name is replaced by the journal's: %q", got)
	}
}

// A --persist-name equal to a vendor file's name in a later sysctl.d
// directory hides that file at boot (only the first of a name is read):
// the plan warns naming it.
func TestPersistNameHidingAVendorFileWarns(t *testing.T) {
	h := newHost(t, nil)
	h.layFiles(map[string]string{"/usr/lib/sysctl.d/99-vendor.conf": "vm.swappiness = 60\n"})
	h.env.PersistName = "99-vendor.conf"
	pl, err := NewPlan(&profiles.Profile{Name: "s", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192", Mode: profiles.AtLeast}}}, h.env)
	must(t, err)
	if w := strings.Join(pl.Warnings, "\n"); !strings.Contains(w, "/etc/sysctl.d/99-vendor.conf hides /usr/lib/sysctl.d/99-vendor.conf") {
		t.Errorf("no warning that hostprep's file hides the vendor's:\n%s", w)
	}
}

// The same for every owned file of a directory with that rule:
// modules-load.d, system.conf.d and unit drop-in directories.
func TestOwnedFilesHidingVendorFilesWarn(t *testing.T) {
	_, p, err := loadCase(t, "host-wide-soft-nofile-stays-1024") // mqtt-broker-1m: conntrack, emqx.service
	must(t, err)
	vendor := []string{"/usr/lib/modules-load.d/60-hostprep.conf", "/usr/lib/systemd/system.conf.d/60-hostprep.conf", "/usr/lib/systemd/system/emqx.service.d/60-hostprep.conf"}
	tree := map[string]string{"/etc/systemd/system.conf": "[Manager]\n"}
	for _, f := range vendor {
		tree[f] = "# vendor\n"
	}
	_, env := newImage(t, tree)
	pl, err := NewPlan(p, env)
	must(t, err)
	w := strings.Join(pl.Warnings, "\n")
	for _, f := range vendor {
		if !strings.Contains(w, "hides "+f) {
			t.Errorf("no warning that hostprep's file hides %s:\n%s", f, w)
		}
	}
}

// A file of the same name in a directory read before hostprep's
// (systemd's /etc/systemd/system.control, /run/systemd/system.control,
// /run/systemd/transient, /run/systemd/generator.early) is not hidden by
// hostprep's drop-in; it hides hostprep's. The plan's "hides" warning
// names only directories read after hostprep's. Field case: "/etc/…/60-hostprep.conf
// hides /run/systemd/system.control/…", the wrong way round.
func TestDropInDoesNotHideEarlierDirs(t *testing.T) {
	before := []string{"/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient", "/run/systemd/generator.early"}
	tree := map[string]string{"/lib/systemd/system/iotdb-datanode.service": datanodeUnit,
		"/usr/lib/systemd/system/iotdb-datanode.service.d/60-hostprep.conf": "# vendor\n"}
	for _, d := range before {
		tree[d+"/iotdb-datanode.service.d/60-hostprep.conf"] = "[Service]\nCPUWeight=50\n"
	}
	_, env := newImage(t, tree)
	pl, err := NewPlan(tasksProfile(t), env)
	must(t, err)
	w := strings.Join(pl.Warnings, "\n")
	for _, d := range before {
		if strings.Contains(w, "hides "+d) {
			t.Errorf("a warning says hostprep's drop-in hides the one in %s, read before it:\n%s", d, w)
		}
	}
	if !strings.Contains(w, "hides /usr/lib/systemd/system/iotdb-datanode.service.d/60-hostprep.conf") {
		t.Errorf("no warning that hostprep's drop-in hides /usr/lib's:\n%s", w)
	}
}

// TestNameAfter: the --persist-name suggested after a winning sysctl.d
// file sorts after it and is a name --persist-name takes, or there is
// none; it never loops (a winner named "~local.conf" or with a UTF-8
// byte hung plan, apply, status and verify --boot at 100% CPU).
func TestNameAfter(t *testing.T) {
	for _, base := range []string{"99-sysctl.conf", "zz-hostprep.conf", "zzzzzzzzzz.conf", "zz~.conf", "~local.conf", "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~.conf", "ü-local.conf", "\x7f.conf", strings.Repeat("~", 250) + ".conf"} {
		name, ok := nameAfter(base)
		if !ok {
			if base[0] < '~' || (base[0] == '~' && len(base) < 190) {
				t.Errorf("%q: no name found, but one exists", base)
			}
			continue
		}
		if name <= base || CheckPersistName(name) != nil {
			t.Errorf("%q: suggested %q (sorts after: %v, valid: %v)", base, name, name > base, CheckPersistName(name))
		}
	}
}
