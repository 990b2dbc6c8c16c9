package tune

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/lock"
)

func TestPlanListsEveryChangeAndTouchesNothing(t *testing.T) {
	h := newHost(t, nil)
	before := h.snapshot()
	pl, err := NewPlan(sysTune(), h.env)
	if err != nil {
		t.Fatal(err)
	}
	h.assertUnchanged(before)
	if d := diffSnapshots(before, h.snapshot(), true); len(d) > 0 {
		t.Fatalf("plan changed mtimes: %v", d)
	}
	if !pl.Changed {
		t.Fatal("plan on a stock host: want changed")
	}
	got := map[string]Change{}
	var order []string
	for _, c := range pl.Changes {
		got[c.Target()] = c
		order = append(order, c.Target())
	}
	// Runtime first: fs.nr_open, fs.file-max, reserved ports, then sorted keys.
	if order[0] != "fs.nr_open" || order[1] != "fs.file-max" {
		// file-max on a stock host (9223372036854775807) is already above
		// 2097152, so only nr_open leads.
		if order[0] != "fs.nr_open" {
			t.Fatalf("first change = %s, want fs.nr_open; order %v", order[0], order)
		}
	}
	if c := got["fs.nr_open"]; c.From != "1048576" || c.To != "2097152" || c.Layer != Runtime {
		t.Errorf("fs.nr_open change = %+v", c)
	}
	if c := got["net.ipv4.tcp_rmem"]; c.From != "4096 131072 6291456" || c.To != "1024 4096 16777216" {
		t.Errorf("tcp_rmem change = %+v", c)
	}
	// Listening 1883 (and 22, outside 1024-65535? no: 22 < 1024) plus
	// reserve_ports inside the new range are reserved.
	if c := got["net.ipv4.ip_local_reserved_ports"]; c.To != "1883,8083-8084,8883,18083" {
		t.Errorf("reserved ports change = %+v", c)
	}
	var skippedFileMax bool
	for _, s := range pl.Skipped {
		if s.Key == "fs.file-max" && strings.Contains(s.Reason, "at-least") {
			skippedFileMax = true
		}
	}
	if !skippedFileMax {
		t.Errorf("fs.file-max (host 9223372036854775807 >= 2097152) not skipped with an at-least reason: %+v", pl.Skipped)
	}
	sysctlConf := filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf")
	limitsConf := filepath.Join(h.root, "etc/security/limits.d/60-hostprep.conf")
	if c, ok := got[sysctlConf]; !ok || c.From != "absent" || c.Layer != Persistent {
		t.Errorf("sysctl.d change = %+v (ok %v)", c, ok)
	}
	if _, ok := got[limitsConf]; !ok {
		t.Errorf("no limits.d change in %v", order)
	}
	// Persistent after runtime.
	if idx(order, limitsConf) < idx(order, "net.ipv4.tcp_wmem") {
		t.Errorf("limits file before runtime keys: %v", order)
	}
	// JSON shape.
	b, _ := json.Marshal(pl.Result)
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	for _, k := range []string{"changed", "changes", "skipped", "restart"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON has no %q: %s", k, b)
		}
	}
	var sb strings.Builder
	pl.WriteText(&sb, "plan")
	if !strings.Contains(sb.String(), "fs.nr_open") || !strings.Contains(sb.String(), "LAYER") {
		t.Errorf("text plan:\n%s", sb.String())
	}
}

func idx(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

func TestApplyTwiceWritesNothingTheSecondTime(t *testing.T) {
	h := newHost(t, nil)
	res, err := h.apply(sysTune())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed {
		t.Fatal("first apply: want changed")
	}
	if h.get("fs.nr_open") != "2097152" || h.get("net.ipv4.tcp_rmem") != "1024 4096 16777216" {
		t.Fatalf("live values not set: nr_open %s tcp_rmem %s", h.get("fs.nr_open"), h.get("net.ipv4.tcp_rmem"))
	}
	limits, ok := h.file("etc/security/limits.d/60-hostprep.conf")
	if !ok || !strings.Contains(limits, "root hard nofile 1048576") || !strings.Contains(limits, "*    soft nofile 1048576") {
		t.Fatalf("limits.d file:\n%s", limits)
	}
	conf, _ := h.file("etc/sysctl.d/60-hostprep.conf")
	if !strings.Contains(conf, "sys-tune") || !strings.Contains(conf, "fs.nr_open = 2097152\n") {
		t.Fatalf("sysctl.d file:\n%s", conf)
	}
	// fs.nr_open is the first line so boot raises it before anything else.
	if strings.Index(conf, "fs.nr_open") > strings.Index(conf, "fs.file-max") {
		t.Errorf("fs.nr_open after fs.file-max in:\n%s", conf)
	}

	before := h.snapshot()
	cb := &countingBackend{Backend: h.backend()}
	env := h.env
	env.Backend = cb
	res2, err := Apply(context.Background(), sysTune(), Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Changed || len(res2.Changes) != 0 {
		t.Fatalf("second apply: changed %v, changes %+v", res2.Changed, res2.Changes)
	}
	if len(cb.writes) != 0 {
		t.Fatalf("second apply wrote /proc/sys: %v", cb.writes)
	}
	if d := diffSnapshots(before, h.snapshot(), true); len(d) > 0 {
		t.Fatalf("second apply changed files or mtimes: %v", d)
	}
	b, _ := json.Marshal(res2)
	if !strings.Contains(string(b), `"changed":false`) {
		t.Errorf("JSON: %s", b)
	}
}

func TestApplyOrderNrOpenThenFileMaxThenLimits(t *testing.T) {
	h := newHost(t, map[string]string{"fs.file-max": "1048576"})
	p := &profiles.Profile{Name: "order", Sysctl: map[string]profiles.Sysctl{
		"net.core.somaxconn": {Value: "8192"},
		"fs.file-max":        {Value: "4194304", Mode: profiles.AtLeast},
		"fs.nr_open":         {Value: "2097152", Mode: profiles.AtLeast},
		"net.core.rmem_max":  {Value: "1048576"},
	}, Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 2097152, Hard: 2097152}}}
	cb := &countingBackend{Backend: h.backend()}
	h.env.Backend = cb
	res, err := h.apply(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fs.nr_open=2097152", "fs.file-max=4194304", "net.core.rmem_max=1048576", "net.core.somaxconn=8192"}
	if strings.Join(cb.writes, " ") != strings.Join(want, " ") {
		t.Fatalf("write order %v, want %v", cb.writes, want)
	}
	last := res.Changes[len(res.Changes)-1]
	if !strings.HasSuffix(last.File, "limits.d/60-hostprep.conf") {
		t.Fatalf("last change %+v, want the limits file after every sysctl", last)
	}
}

func TestFaultAtEveryWriteLeavesHostAsBefore(t *testing.T) {
	// How many writes a clean apply makes.
	h0 := newHost(t, nil)
	cb := &countingBackend{Backend: h0.backend()}
	h0.env.Backend = cb
	if _, err := h0.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	n := len(cb.writes)
	if n < 10 {
		t.Fatalf("only %d writes", n)
	}
	for k := 1; k <= n; k++ {
		h := newHost(t, nil)
		// An earlier apply of another profile, so the journal pre-exists
		// for odd k and is created by this run for even k.
		if k%2 == 1 {
			if _, err := h.apply(&profiles.Profile{Name: "earlier", Sysctl: map[string]profiles.Sysctl{"net.ipv4.tcp_tw_reuse": {Value: "1"}}}); err != nil {
				t.Fatal(err)
			}
		}
		before := h.snapshot()
		fb := &faultBackend{Backend: h.backend(), failAt: k}
		h.env.Backend = fb
		_, err := h.apply(sysTune())
		wantCode(t, err, exitcode.Environment, fb.failed, "EINVAL", "undone")
		h.assertUnchanged(before)
	}
}

// TestOwnedDirNotADirectoryIsRefusedBeforeWriting: a path hostprep must
// write under that is not a directory is found by the plan, before any
// write (exit 3). Write failures during apply are exercised for real in
// TestE2EFileWriteFailureUndoesTheRun (read-only mounts).
func TestOwnedDirNotADirectoryIsRefusedBeforeWriting(t *testing.T) {
	h := newHost(t, nil)
	must(t, os.RemoveAll(filepath.Join(h.root, "etc/security/limits.d")))
	must(t, os.WriteFile(filepath.Join(h.root, "etc/security/limits.d"), []byte("not a dir\n"), 0o644))
	before := h.snapshot()
	_, err := h.apply(sysTune())
	wantCode(t, err, exitcode.Environment, "limits.d", "not a directory")
	h.assertUnchanged(before)
}

func TestApplyAThenBThenRollbackGivesPreAState(t *testing.T) {
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root // systemd runs and emqx is installed: it is to be restarted
	h.layFiles(map[string]string{"/lib/systemd/system/emqx.service": "[Service]\nExecStart=/bin/true\n"})
	before := h.snapshot()
	a := sysTune()
	b := &profiles.Profile{Name: "b", Sysctl: map[string]profiles.Sysctl{
		"net.core.somaxconn":    {Value: "65535"}, // also set by A
		"net.ipv4.tcp_tw_reuse": {Value: "1"},     // only B
		"fs.nr_open":            {Value: "4194304", Mode: profiles.AtLeast},
	}, Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 65536, Hard: 2097152}},
		Systemd: profiles.Systemd{Services: []string{"emqx"}, DefaultLimitNOFILE: &profiles.Limit{Soft: 1024, Hard: 524288}}}
	if _, err := h.apply(a); err != nil {
		t.Fatal(err)
	}
	res, err := h.apply(b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Restart, ",") != "emqx.service" {
		t.Errorf("restart %v, want emqx.service", res.Restart)
	}
	// try-restart: a stopped alternative (a second broker) is not started
	var text strings.Builder
	must(t, res.WriteText(&text, "apply"))
	if !strings.Contains(text.String(), "systemctl daemon-reload && systemctl try-restart emqx.service") {
		t.Errorf("apply text has no try-restart line:\n%s", text.String())
	}
	conf, _ := h.file("etc/sysctl.d/60-hostprep.conf")
	if !strings.Contains(conf, "sys-tune, b") || !strings.Contains(conf, "net.ipv4.tcp_rmem = 1024 4096 16777216") || !strings.Contains(conf, "net.core.somaxconn = 65535") {
		t.Fatalf("sysctl.d after A and B keeps both:\n%s", conf)
	}
	if _, ok := h.file("etc/systemd/system/emqx.service.d/60-hostprep.conf"); !ok {
		t.Fatal("no emqx drop-in")
	}
	st, err := StatusOf(h.env)
	if err != nil || st.Drift != 0 || strings.Join(st.Profiles, ",") != "sys-tune,b" {
		t.Fatalf("status %+v %v", st, err)
	}
	r := h.rollback()
	if len(r.Left) != 0 || !r.Changed {
		t.Fatalf("rollback %+v", r)
	}
	if d := diffSnapshots(before, h.snapshot(), false); len(d) > 0 {
		t.Fatalf("rollback did not restore the pre-A state:\n  %s", strings.Join(d, "\n  "))
	}
	// Rollback again: nothing applied, no-op.
	r = h.rollback()
	if r.Changed || len(r.Notes) == 0 {
		t.Fatalf("second rollback %+v", r)
	}
}

func TestRollbackRestoresAPreexistingFileByteForByte(t *testing.T) {
	h := newHost(t, nil)
	orig := "# an admin's own file\nfs.nr_open = 1048576\n"
	must(t, os.WriteFile(filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf"), []byte(orig), 0o600))
	before := h.snapshot()
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	h.rollback()
	h.assertUnchanged(before)
}

func TestRollbackLeavesAKeySomeoneElseChanged(t *testing.T) {
	h := newHost(t, nil)
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	h.writeKey("net.core.somaxconn", "50000") // an operator, after hostprep
	st, _ := StatusOf(h.env)
	if st.Drift != 0 {
		t.Errorf("somaxconn 50000 still satisfies at-least 32768; drift %d", st.Drift)
	}
	h.writeKey("net.ipv4.tcp_fin_timeout", "30")
	_, _, err := Verify(nil, h.env)
	wantCode(t, err, exitcode.Failed, "drifted")
	r := h.rollback()
	left := map[string]Skip{}
	for _, s := range r.Left {
		left[s.Key] = s
	}
	if s, ok := left["net.core.somaxconn"]; !ok || s.Current != "50000" {
		t.Fatalf("somaxconn not reported as left alone: %+v", r.Left)
	}
	if _, ok := left["net.ipv4.tcp_fin_timeout"]; !ok {
		t.Fatalf("tcp_fin_timeout not reported: %+v", r.Left)
	}
	if h.get("net.core.somaxconn") != "50000" || h.get("net.ipv4.tcp_fin_timeout") != "30" {
		t.Fatal("rollback overwrote someone else's change")
	}
	if h.get("fs.nr_open") != "1048576" || h.get("net.ipv4.tcp_rmem") != "4096\t131072\t6291456" {
		t.Fatalf("other keys not restored: %s / %q", h.get("fs.nr_open"), h.get("net.ipv4.tcp_rmem"))
	}
	if _, err := os.Stat(filepath.Join(h.root, "var/lib/hostprep/state.json")); !os.IsNotExist(err) {
		t.Fatal("journal not removed")
	}
}

func TestBadProfileChangesNothing(t *testing.T) {
	cases := map[string]*profiles.Profile{
		"bad mode":       {Name: "x", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "1", Mode: "atleast"}}},
		"unknown key":    {Name: "x", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192"}, "net.core.nosuchkey": {Value: "1"}}},
		"soft > hard":    {Name: "x", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 10, Hard: 5}}},
		"rmem disorder":  {Name: "x", Sysctl: map[string]profiles.Sysctl{"net.ipv4.tcp_rmem": {Value: "4096 1024 8192"}}},
		"file-max < nof": {Name: "x", Sysctl: map[string]profiles.Sysctl{"fs.file-max": {Value: "1000"}}, Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 4096, Hard: 4096}}},
		"at-least text":  {Name: "x", Sysctl: map[string]profiles.Sysctl{"net.ipv4.tcp_rmem": {Value: "1 2 3 4", Mode: profiles.AtLeast}}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHost(t, nil)
			before := h.snapshot()
			_, err := h.apply(p)
			wantCode(t, err, exitcode.BadInput)
			h.assertUnchanged(before)
		})
	}
}

func TestOptionalKeyAbsentIsSkipped(t *testing.T) {
	h := newHost(t, nil)
	p := &profiles.Profile{Name: "x", Sysctl: map[string]profiles.Sysctl{
		"net.netfilter.nf_conntrack_max": {Value: "1048576", Optional: true},
		"net.core.somaxconn":             {Value: "8192"}}}
	res, err := h.apply(p)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range res.Skipped {
		if s.Key == "net.netfilter.nf_conntrack_max" && strings.Contains(s.Reason, "optional") {
			found = true
		}
	}
	if !found {
		t.Fatalf("optional key not skipped: %+v", res.Skipped)
	}
	conf, _ := h.file("etc/sysctl.d/60-hostprep.conf")
	if strings.Contains(conf, "nf_conntrack") {
		t.Fatalf("absent optional key persisted:\n%s", conf)
	}
}

func TestLockHeldFailsWithHolder(t *testing.T) {
	h := newHost(t, nil)
	l, err := lock.Acquire(h.env.LockFile, 0)
	must(t, err)
	defer l.Release()
	before := h.snapshot()
	_, err = h.apply(sysTune())
	wantCode(t, err, exitcode.Environment, "another hostprep apply/rollback holds", h.env.LockFile, "pid ")
	h.assertUnchanged(before)
	_, err = Rollback(context.Background(), h.env)
	wantCode(t, err, exitcode.Environment, "holds")
}

func TestImageModeWritesOnlyFiles(t *testing.T) {
	h := newHost(t, map[string]string{"fs.nr_open": "1048576"})
	h.env.Image = true
	cb := &countingBackend{Backend: h.backend()}
	h.env.Backend = cb
	p := sysTune()
	p.Systemd = profiles.Systemd{Services: []string{"emqx"}}
	res, err := h.apply(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cb.writes) != 0 {
		t.Fatalf("image mode wrote /proc/sys: %v", cb.writes)
	}
	for _, c := range res.Changes {
		if c.Layer != Persistent {
			t.Errorf("image mode change %+v", c)
		}
	}
	conf, _ := h.file("etc/sysctl.d/60-hostprep.conf")
	if !strings.Contains(conf, "net.ipv4.ip_local_reserved_ports = 1883,8083-8084,8883,18083") {
		t.Errorf("image sysctl.d:\n%s", conf)
	}
	if _, ok := h.file("etc/systemd/system/emqx.service.d/60-hostprep.conf"); !ok {
		t.Error("no drop-in in image mode")
	}
	h.rollback()
	if _, ok := h.file("etc/sysctl.d/60-hostprep.conf"); ok {
		t.Error("image rollback left the file")
	}
	if _, err := os.Stat(filepath.Join(h.root, "etc/systemd/system")); !os.IsNotExist(err) {
		t.Error("image rollback left the created drop-in directories")
	}
}

func TestNoSystemdNoDropIns(t *testing.T) {
	h := newHost(t, nil)
	must(t, os.RemoveAll(filepath.Join(h.root, "etc/systemd")))
	p := &profiles.Profile{Name: "x", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 4096, Hard: 8192}},
		Systemd: profiles.Systemd{Services: []string{"emqx"}}}
	pl, err := NewPlan(p, h.env)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pl.Changes {
		if strings.Contains(c.File, "systemd") {
			t.Fatalf("drop-in planned without systemd: %+v", c)
		}
	}
	var why string
	for _, s := range pl.Skipped {
		if strings.Contains(s.Reason, "systemd") {
			why = s.Reason
		}
	}
	if !strings.Contains(why, "not here") {
		t.Fatalf("no skip reason for systemd: %+v", pl.Skipped)
	}
}

func TestGlobalNetKeyHiddenInNetNSIsSkippedWithAWarning(t *testing.T) {
	h := newHost(t, map[string]string{"net.core.netdev_max_backlog": "<absent>"})
	p := &profiles.Profile{Name: "x", Sysctl: map[string]profiles.Sysctl{
		"net.core.netdev_max_backlog": {Value: "16384", Mode: profiles.AtLeast},
		"net.core.somaxconn":          {Value: "8192"}}}
	// In the initial namespace an absent key is an error.
	_, err := NewPlan(p, h.env)
	wantCode(t, err, exitcode.BadInput, "net.core.netdev_max_backlog", "optional: true")
	// In another network namespace it is skipped with a warning.
	for _, l := range [][2]string{{"self/ns/net", "net:[4026531840]"}, {"1/ns/net", "net:[4026532000]"}} {
		must(t, os.MkdirAll(filepath.Join(h.proc, filepath.Dir(l[0])), 0o755))
		must(t, os.Symlink(l[1], filepath.Join(h.proc, l[0])))
	}
	pl, err := NewPlan(p, h.env)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Warnings) != 1 || !strings.Contains(pl.Warnings[0], "set this one on the host") {
		t.Fatalf("warnings %v", pl.Warnings)
	}
	if len(pl.Changes) == 0 || pl.Changes[0].Key != "net.core.somaxconn" {
		t.Fatalf("changes %+v", pl.Changes)
	}
}

// TestImageJournalRollsBackOnTheBootedImage: --root writes the journal
// into the image with image paths; on the booted image (another root) the
// paths are rebased, so rollback there removes the files.
func TestImageJournalRollsBackOnTheBootedImage(t *testing.T) {
	h := newHost(t, nil)
	before := h.snapshot()
	h.env.Image = true
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	booted := h.root + "-booted"
	must(t, os.Rename(h.root, booted))
	env := h.env
	env.Image, env.Root = false, booted
	st, err := StatusOf(env)
	if err != nil || st.Drift != 0 || len(st.Items) != 2 {
		t.Fatalf("status on the booted image: %+v %v", st, err)
	}
	// Nothing is live in an image's journal, so every persisted key gets a
	// row of its own with its value after the boot and the line setting it.
	var text strings.Builder
	must(t, st.WriteText(&text))
	if !regexp.MustCompile(`(?m)^after the next boot:\n(.*\n)*fs\.nr_open +2097152 +2097152 +/etc/sysctl\.d/60-hostprep\.conf:\d+ +ok$`).MatchString(text.String()) {
		t.Errorf("status text shows no boot value per key:\n%s", text.String())
	}
	r, err := Rollback(context.Background(), env)
	if err != nil || len(r.Left) != 0 {
		t.Fatalf("rollback %+v %v", r, err)
	}
	must(t, os.Rename(booted, h.root))
	h.assertUnchanged(before)
}

// A listener on a fixed port below the current ephemeral range (9090) is
// reserved when the new range covers it; one inside the current range
// (44087, as bind to port 0 gives) is named in a warning instead, since
// reserving a port the kernel handed out would keep it out of use for good.
func TestPlanReservesFixedListenersNotKernelAssignedOnes(t *testing.T) {
	h := newHost(t, nil)
	tcp := procNetTCP +
		"   3: 00000000:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 100 0 0 10 0\n" +
		"   4: 0100007F:AC37 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1004 1 0000000000000000 100 0 0 10 0\n"
	must(t, os.WriteFile(filepath.Join(h.proc, "net", "tcp"), []byte(tcp), 0o644))
	pl, err := PlanFor(sysTune(), Options{Env: h.env})
	if err != nil {
		t.Fatal(err)
	}
	var reserved string
	for _, c := range pl.Changes {
		if c.Key == "net.ipv4.ip_local_reserved_ports" {
			reserved = c.To
		}
	}
	if reserved != "1883,8083-8084,8883,9090,18083" {
		t.Errorf("reserved ports = %q, want 9090 added and 44087 left out", reserved)
	}
	var warned bool
	for _, w := range pl.Warnings {
		if strings.Contains(w, "44087") && strings.Contains(w, "reserve_ports") {
			warned = true
			// One port: the words around it agree with the count.
			if !strings.Contains(w, "port 44087 lies") || !strings.Contains(w, "assigned it;") {
				t.Errorf("warning about one port speaks of several: %q", w)
			}
		}
	}
	if !warned {
		t.Errorf("no warning naming 44087: %q", pl.Warnings)
	}
}
