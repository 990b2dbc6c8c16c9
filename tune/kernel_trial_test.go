package tune_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/kerneltrial"
	"github.com/hostprep/hostprep/internal/testenv"
)

// kernelTakes is what the running kernel stores for value written to key,
// asked in a scratch network namespace of the test's own (the value
// itself, or the nearest one the kernel accepts), tab-separated as
// /proc/sys prints it. Expected values that depend on the kernel come
// from here, never from a table.
func kernelTakes(t *testing.T, key, value string) string {
	t.Helper()
	testenv.RequireRoot(t)
	res, err := kerneltrial.Try([]kerneltrial.Write{{Key: key, Value: value}})
	if errors.Is(err, kerneltrial.ErrUnavailable) && !testenv.InCI() {
		t.Skip(err)
	}
	if err != nil || !res[0].PerNamespace {
		t.Fatalf("trial of %s: %v %+v", key, err, res)
	}
	v := res[0].Stored
	if !res[0].Accepted {
		v = res[0].Nearest
	}
	if v == "" {
		t.Fatalf("this kernel takes no value near %s %q: %+v", key, value, res[0])
	}
	return strings.ReplaceAll(v, " ", "\t")
}

// A user's profile with a value the kernel refuses stops at plan and at
// apply with exit 2, before any write, naming the key, the field, the
// kernel release and the nearest value the kernel takes; with
// if_refused: nearest the plan uses that value and says so. The refusals
// hold on any kernel: a port range below the namespace's own
// ip_unprivileged_port_start (set to 2000 here, which the trial copies),
// and a tcp_rmem field above INT_MAX, the int it is stored in.
func TestKernelTrialRefusesBeforeAnyWrite(t *testing.T) {
	n := newNetns(t)
	if _, e, c := n.Run("sh", "-c", "echo 2000 > /proc/sys/net/ipv4/ip_unprivileged_port_start"); c != 0 {
		t.Fatal(e)
	}
	near := kernelTakes(t, "net.ipv4.tcp_rmem", "4096 131072 4294967296")
	rel := strings.TrimSpace(n.Sysctl("kernel.osrelease"))
	before := n.Sysctl("net.core.somaxconn")
	p := writeProfile(t, "range.yaml", "sysctl:\n  net.core.somaxconn: \"8192\"\n  net.ipv4.ip_local_port_range: {value: \"1500 65535\", mode: exact}\n")
	for _, verb := range []string{"plan", "apply"} {
		_, errOut, code := n.Hostprep("tune", verb, "--profile", p)
		if code != 2 || !strings.Contains(errOut, "range.yaml:3:") || !strings.Contains(errOut, "field low 1500") ||
			!strings.Contains(errOut, rel) || !strings.Contains(errOut, `"2000 65535"`) || !strings.Contains(errOut, "scratch network namespace") {
			t.Fatalf("%s: exit %d, want 2 naming the field, %s and \"2000 65535\":\n%s", verb, code, rel, errOut)
		}
	}
	// a value given with --set has no entry for if_refused: the fix is
	// the --set of the nearest value
	_, errOut, code := n.Hostprep("tune", "plan", "--profile", p, "--set", "net.ipv4.ip_local_port_range=1500,65535")
	if code != 2 || !strings.Contains(errOut, "--set net.ipv4.ip_local_port_range=2000,65535") || strings.Contains(errOut, "if_refused") {
		t.Fatalf("--set of a refused value: exit %d, want 2 with the fix --set net.ipv4.ip_local_port_range=2000,65535 and no if_refused:\n%s", code, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != before {
		t.Fatalf("somaxconn %s -> %s after a refused profile", before, got)
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Fatal("journal written for a refused profile")
	}

	nearest := writeProfile(t, "nearest.yaml", "sysctl:\n  net.ipv4.tcp_rmem: {value: \"4096 131072 4294967296\", if_refused: nearest}\n")
	out, errOut, code := n.Hostprep("tune", "plan", "--profile", nearest, "-o", "json")
	if code != 0 {
		t.Fatalf("plan with if_refused nearest: exit %d\n%s", code, errOut)
	}
	var r struct {
		Changes []struct{ Key, To, Reason string }
		Notes   []string
		Kernel  struct {
			Release string
			Keys    map[string]string
		} `json:"kernel_check"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Kernel.Keys["net.ipv4.tcp_rmem"] != "trial" || r.Kernel.Release != rel {
		t.Errorf("kernel_check %+v: want tcp_rmem judged by trial on %s", r.Kernel, rel)
	}
	found := false
	for _, c := range r.Changes {
		if c.Key == "net.ipv4.tcp_rmem" {
			found = c.To == strings.ReplaceAll(near, "\t", " ") && strings.Contains(c.Reason, "nearest")
		}
	}
	if !found || !strings.Contains(strings.Join(r.Notes, "\n"), "if_refused nearest writes") {
		t.Errorf("plan does not use and note the nearest value %q:\n%s", near, out)
	}
}

// Field case tcp-rmem-below-this-kernels-floor: a user profile with the
// script's tcp_rmem is judged by this kernel. Where the kernel takes
// "1024 4096 16777216" the plan has it; where it refuses it (6.18: below
// 4096), plan exits 2 naming the value this kernel takes.
func TestCaseTcpRmemBelowThisKernelsFloor(t *testing.T) {
	n := newNetns(t)
	takes := strings.ReplaceAll(kernelTakes(t, "net.ipv4.tcp_rmem", "1024 4096 16777216"), "\t", " ")
	p := writeProfile(t, "rmem.yaml", "sysctl:\n  net.ipv4.tcp_rmem: {value: \"1024 4096 16777216\", mode: exact}\n")
	out, errOut, code := n.Hostprep("tune", "plan", "--profile", p)
	if takes == "1024 4096 16777216" {
		if code != 0 || !strings.Contains(out, "1024 4096 16777216") {
			t.Fatalf("a kernel that takes the value: exit %d\n%s%s", code, out, errOut)
		}
		return
	}
	if code != 2 || !strings.Contains(errOut, `use "`+takes+`"`) || !strings.Contains(errOut, "field min 1024") {
		t.Fatalf("exit %d, want 2 suggesting %q:\n%s%s", code, takes, out, errOut)
	}
	// The built-in sys-tune, the script made valid, plans on this kernel
	// with the value it takes and a note.
	out, errOut, code = n.Hostprep("tune", "plan", "--profile", "sys-tune")
	if code != 0 || !strings.Contains(out, "refuses 1024 4096 16777216, nearest "+takes) {
		t.Fatalf("sys-tune plan: exit %d\n%s%s", code, out, errOut)
	}
}

// Where the trial runs, the plan still names the keys it could not try
// (global ones, judged by the table) in a note, so the text output says
// which way every key was judged, as JSON's kernel_check does.
func TestKernelTrialNamesKeysJudgedByTable(t *testing.T) {
	n := newNetns(t)
	p := writeProfile(t, "mixed.yaml", "sysctl:\n  net.core.somaxconn: {value: \"4096\", mode: at-least}\n  fs.file-max: {value: \"1048576\", mode: at-least}\n")
	out, errOut, code := n.Hostprep("tune", "plan", "--profile", p)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, errOut)
	}
	i := strings.Index(out, "note: judged by hostprep's table")
	if i < 0 {
		t.Fatalf("no note naming the keys judged by the table:\n%s", out)
	}
	note, _, _ := strings.Cut(out[i:], "\n")
	if !strings.Contains(note, "fs.file-max") || strings.Contains(note, "somaxconn") {
		t.Errorf("note %q: want fs.file-max (global) and not net.core.somaxconn (tried)", note)
	}
}

// A bound that depends on how the kernel was built (tcp_fin_timeout is
// seconds x HZ in an int: 2147483 at HZ=1000, 8589934 at HZ=250) is not
// the table's to refuse at load: the table holds the loosest bound, and
// the plan takes this kernel's answer, asked in a namespace of the
// test's own.
func TestKernelTrialJudgesBuildDependentBounds(t *testing.T) {
	n := newNetns(t)
	const v = "2147484" // one above the bound at HZ=1000
	takes := kernelTakes(t, "net.ipv4.tcp_fin_timeout", v)
	p := writeProfile(t, "fin.yaml", "sysctl:\n  net.ipv4.tcp_fin_timeout: {value: \""+v+"\", mode: exact}\n")
	out, errOut, code := n.Hostprep("tune", "plan", "--profile", p)
	if takes == v {
		if code != 0 || !strings.Contains(out, v) {
			t.Fatalf("this kernel takes %s: exit %d, want the plan to have it\n%s%s", v, code, out, errOut)
		}
		return
	}
	if code != 2 || !strings.Contains(errOut, `use "`+takes+`"`) {
		t.Fatalf("this kernel takes %s for %s: exit %d, want 2 suggesting it\n%s%s", takes, v, code, out, errOut)
	}
}
