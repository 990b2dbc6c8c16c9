package kerneltrial

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"golang.org/x/sys/unix"
)

// trial runs Try and checks that this test's namespace is as before it.
func trial(t *testing.T, writes ...Write) []Result {
	t.Helper()
	testenv.RequireRoot(t)
	before := map[string]string{}
	for _, w := range writes {
		before[w.Key], _ = read(path(w.Key))
	}
	res, err := Try(writes)
	if errors.Is(err, ErrUnavailable) && !testenv.InCI() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range before {
		if now, _ := read(path(k)); now != v {
			t.Fatalf("%s changed in the caller's namespace: %q -> %q", k, v, now)
		}
	}
	if len(res) != len(writes) {
		t.Fatalf("%d results for %d writes", len(res), len(writes))
	}
	return res
}

// A value every kernel refuses (a tcp_rmem field above INT_MAX, the
// int[3] it is stored in) is refused in the trial, the field at fault is
// named, and the nearest value found is one the kernel then takes.
func TestTrialFindsTheNearestAcceptedField(t *testing.T) {
	cur, err := read(path("net.ipv4.tcp_rmem"))
	if err != nil {
		t.Skip("no net.ipv4.tcp_rmem here")
	}
	f := strings.Fields(cur)
	bad := f[0] + " " + f[1] + " 4294967296"
	r := trial(t, Write{Key: "net.ipv4.tcp_rmem", Value: bad})[0]
	if !r.PerNamespace || r.Accepted || r.Err == nil {
		t.Fatalf("%+v: want a refusal in the trial namespace", r)
	}
	if len(r.Faults) != 1 || r.Faults[0].Field != 3 || !r.Faults[0].Found || r.Faults[0].Nearest > 1<<31-1 {
		t.Fatalf("faults %+v: want field 3 with a nearest at most INT_MAX", r.Faults)
	}
	if r.Nearest == "" {
		t.Fatalf("no nearest value: %+v", r)
	}
	again := trial(t, Write{Key: "net.ipv4.tcp_rmem", Value: r.Nearest})[0]
	if !again.Accepted || again.Stored != r.Nearest {
		t.Fatalf("the nearest value %q: %+v", r.Nearest, again)
	}
	// One above the nearest is refused: it is the bound, not a guess.
	n3 := r.Faults[0].Nearest + 1
	above := trial(t, Write{Key: "net.ipv4.tcp_rmem", Value: f[0] + " " + f[1] + " " + strconv.FormatInt(n3, 10)})[0]
	if above.Accepted {
		t.Fatalf("%d accepted: the search stopped short of the bound", n3)
	}
}

// An accepted value is reported with what the kernel stores, and a later
// write sees an earlier one (the order of an apply).
func TestTrialAcceptsAndReadsBack(t *testing.T) {
	res := trial(t,
		Write{Key: "net.core.somaxconn", Value: "12345"},
		Write{Key: "net.ipv4.ip_local_port_range", Value: "20000   40001"},
	)
	for _, r := range res {
		if !r.PerNamespace || !r.Accepted {
			t.Fatalf("%+v: want accepted", r)
		}
	}
	if res[1].Stored != "20000 40001" {
		t.Fatalf("stored %q", res[1].Stored)
	}
}

// Global keys are never written: fs.* is outside any network namespace,
// and the trial learns that without a list.
func TestTrialNeverWritesGlobalKeys(t *testing.T) {
	v, err := read(path("fs.file-max"))
	if err != nil {
		t.Skip(err)
	}
	r := trial(t, Write{Key: "fs.file-max", Value: "1"})[0]
	if r.PerNamespace || r.Accepted || r.Err != nil {
		t.Fatalf("%+v: a global key must not be tried", r)
	}
	if now, _ := read(path("fs.file-max")); now != v {
		t.Fatalf("fs.file-max changed: %s -> %s", v, now)
	}
	if _, err := os.Stat(path("net.ipv4.tcp_mem")); err == nil {
		r := trial(t, Write{Key: "net.ipv4.tcp_mem", Value: "1 2 3"})[0]
		if r.PerNamespace {
			t.Fatalf("tcp_mem (global on every kernel) tried: %+v", r)
		}
	}
}

func TestMidAndGapDoNotOverflow(t *testing.T) {
	const max, min = 1<<63 - 1, -1 << 63
	if g := gap(min, max); g != 1<<64-1 {
		t.Fatalf("gap = %d", g)
	}
	if m := mid(min, max); m != -1 {
		t.Fatalf("mid = %d", m)
	}
	if m := mid(max, 0); m != max-(max/2) {
		t.Fatalf("mid = %d", m)
	}
}

// BufferFloors reports the running kernel's smallest socket buffers, and
// the kernel's own sysctls agree: one byte below the floor is refused
// (EINVAL) for net.core.rmem_max and wmem_max. The refused write changes
// nothing; GuardSysctls puts the keys back should one be taken.
func TestBufferFloorsAreTheSysctlsFloors(t *testing.T) {
	rcv, snd, err := BufferFloors()
	if err != nil {
		t.Fatal(err)
	}
	if rcv <= 1 || snd <= 1 {
		t.Fatalf("floors rcv %d, snd %d: want the kernel's SOCK_MIN_RCVBUF and SOCK_MIN_SNDBUF, above 1", rcv, snd)
	}
	testenv.RequireRoot(t)
	testenv.GuardSysctls(t, "net.core.rmem_max", "net.core.wmem_max")
	for key, floor := range map[string]int64{"net.core.rmem_max": rcv, "net.core.wmem_max": snd} {
		if err := write(path(key), strconv.FormatInt(floor-1, 10)); !errors.Is(err, unix.EINVAL) {
			t.Errorf("%s = %d (one below the floor %d): %v, want EINVAL", key, floor-1, floor, err)
		}
	}
}

// The guard puts back only what leaked from the trial's namespace: a key
// another writer changes while a trial runs (here fs.file-max, set by a
// hook between the trial and the guard) keeps that writer's value, and
// the trial still answers. A plan must never undo someone else's write.
func TestTrialLeavesAnotherWritersChange(t *testing.T) {
	testenv.RequireRoot(t)
	orig := testenv.GuardSysctls(t, "fs.file-max")["fs.file-max"]
	n, err := strconv.ParseInt(orig, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	other := strconv.FormatInt(n+1, 10)
	afterTrial = func() {
		if err := os.WriteFile(path("fs.file-max"), []byte(other), 0); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() {
		afterTrial = nil
		_ = os.WriteFile(path("fs.file-max"), []byte(orig), 0)
	})
	res, err := Try([]Write{{Key: "fs.file-max", Value: "1"}, {Key: "net.core.somaxconn", Value: "4096"}})
	if errors.Is(err, ErrUnavailable) && !testenv.InCI() {
		t.Skip(err)
	}
	if err != nil || len(res) != 2 {
		t.Fatalf("Try: %v, %d results: another writer's change is not the trial's fault", err, len(res))
	}
	if now, _ := read(path("fs.file-max")); now != other {
		t.Fatalf("fs.file-max %s after the trial: the guard put back %s over another writer's %s", now, orig, other)
	}
}
