package sysval

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/internal/testenv"
)

// netnsPorts is a shell in a network namespace of its own (unshare
// --net), where net.ipv4.ip_local_reserved_ports is that namespace's:
// each value written there is read back as the kernel prints it, and
// the host's set is never touched.
type netnsPorts struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func newNetnsPorts(t *testing.T) *netnsPorts {
	testenv.RequireUnshare(t)
	const script = `f=/proc/sys/net/ipv4/ip_local_reserved_ports
while IFS= read -r v; do
  if printf '%s\n' "$v" > $f 2>/dev/null; then echo "ok $(cat $f)"; else echo "refused $(cat $f)"; fi
done`
	cmd := exec.Command("unshare", "--net", "sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return &netnsPorts{in: in, out: bufio.NewReader(out)}
}

// write writes v with the white space around it dropped and a newline
// after it, as systemd-sysctl and sysctl --system write a sysctl.d
// value, and returns whether the kernel took it and what it prints
// after.
func (n *netnsPorts) write(t interface{ Fatalf(string, ...any) }, v string) (bool, string) {
	if _, err := fmt.Fprintln(n.in, strings.TrimSpace(v)); err != nil {
		t.Fatalf("netns shell: %v", err)
	}
	l, err := n.out.ReadString('\n')
	if err != nil {
		t.Fatalf("netns shell: %v", err)
	}
	verdict, printed, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
	return verdict == "ok", printed
}

// genPortList draws a port list the way people write one: ports and
// ranges in any order, duplicates and overlaps, numbers in other bases,
// and the mistakes the kernel refuses or takes (blanks, a reversed
// range, 65536, an empty item, a trailing comma).
func genPortList(t *rapid.T) string {
	port := rapid.SampledFrom([]string{"0", "22", "1883", "8083", "8084", "8085", "8090", "65535", "0x1f93", "017623", "65536", "-1", "8084 "})
	var items []string
	for i, n := 0, rapid.IntRange(0, 5).Draw(t, "items"); i < n; i++ {
		a := port.Draw(t, "a")
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			items = append(items, a+"-"+port.Draw(t, "b"))
		case 1:
			items = append(items, rapid.SampledFrom([]string{"8083-8084", "8080-8090", "8084-8083", "", " 8083"}).Draw(t, "range"))
		default:
			items = append(items, a)
		}
	}
	return strings.Join(items, ",") + rapid.SampledFrom([]string{"", "", ",", "\t"}).Draw(t, "end")
}

// TestKernelPortsOracle writes drawn lists to the real kernel's
// ip_local_reserved_ports in a throwaway network namespace and requires
// KernelPorts to take and refuse the same values and to print what the
// kernel prints; EqualKey is then equality of the kernel's sets.
func TestKernelPortsOracle(t *testing.T) {
	ns := newNetnsPorts(t)
	const key = "net.ipv4.ip_local_reserved_ports"
	rapid.Check(t, func(rt *rapid.T) {
		a, b := genPortList(rt), genPortList(rt)
		okA, printedA := ns.write(rt, a)
		got, ok := KernelPorts(a)
		if ok != okA || (ok && got != printedA) {
			rt.Fatalf("%q: the kernel takes it %v and prints %q; KernelPorts %v %q", a, okA, printedA, ok, got)
		}
		okB, printedB := ns.write(rt, b)
		if okA && okB && EqualKey(key, a, b) != (printedA == printedB) {
			rt.Fatalf("%q and %q: the kernel prints %q and %q, EqualKey says %v", a, b, printedA, printedB, EqualKey(key, a, b))
		}
	})
}

// TestPortSetSpellings: the spellings of one set are equal and satisfy
// each other for the port set key, and only for it.
func TestPortSetSpellings(t *testing.T) {
	const key = "net.ipv4.ip_local_reserved_ports"
	for _, c := range []struct {
		a, b string
		eq   bool
	}{
		{"8083,8084", "8083-8084", true},
		{"8084,8083,1883", "1883,8083-8084", true},
		{"8083-8084,8084,8083-8083", "8083-8084", true},
		{"8083-8084\n", "8083,8084", true},
		{"8083", "8083-8084", false},
		{"", "", true},
		{"8083, 8084", "8083-8084", false}, // the kernel refuses the blank
	} {
		if got := EqualKey(key, c.a, c.b); got != c.eq {
			t.Errorf("EqualKey(%q, %q) = %v, want %v", c.a, c.b, got, c.eq)
		}
		if got := SatisfiesKey(key, c.a, c.b, Exact); got != c.eq {
			t.Errorf("SatisfiesKey(%q, %q) = %v, want %v", c.a, c.b, got, c.eq)
		}
	}
	if EqualKey("net.core.somaxconn", "8083,8084", "8083-8084") {
		t.Errorf("EqualKey reads a key that is no port set as one")
	}
}
