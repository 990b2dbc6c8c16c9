package facts

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// memOracleUnit is the unit TestMemoryLimitOracle writes; no directory of
// the host has it.
const memOracleUnit = "hostprep-memoracle.service"

// memOracleValues are values of MemoryMax=/MemoryHigh=/MemoryLimit=: the
// forms systemd.resource-control(5) documents (bytes, K/M/G/T suffixes
// of 1024, percentages of physical memory, "infinity", an empty reset)
// and the ones parse_size takes beyond them (fractions, "10.M", parts,
// B, a + sign), and some it refuses or ignores (lower case, parts out of
// order, 0, over 100 %, 2^64-1, overflow, 0x). Percentages with a
// leading 0 are left out: systemd reads "010%" in base 0 (8 %), as it
// does for TasksMax=, which parseTasksMax does not.
var memOracleValues = []string{"64M", "1G", "1.5G", "0.0625G", "10.M", "1G 512M", "1G512M", "512M 1G", "1K1K", "100", "4096B", "+64M", "2T", "15E", "16E",
	"0", "infinity", "", "5%", "12.5%", "0.5%", "100%", "101%", "125‰", "1‱", "0%", "64m", "-1", "18446744073709551615", "18446744073709551614", "0x40M", "64 M", "1.%", "lots"}

// memOracle runs systemd --test for memOracleUnit as nobody in box (whose
// /etc/systemd is the test's) and returns the MemoryMax, MemoryHigh and
// MemoryLimit it prints for it, bytes.
func memOracle(t interface{ Fatalf(string, ...any) }, box *testenv.Sandbox) map[string]uint64 {
	out, e, _ := box.Run("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"/lib/systemd/systemd", "--test", "--system", "--unit="+memOracleUnit, "--no-pager", "--log-target=console")
	got := map[string]uint64{}
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		f := strings.Fields(l)
		switch {
		case strings.Contains(l, "-> Unit "):
			in = strings.Contains(l, "-> Unit "+memOracleUnit+":")
		case in && len(f) == 2 && (f[0] == "MemoryMax:" || f[0] == "MemoryHigh:" || f[0] == "MemoryLimit:"):
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatalf("systemd --test: %s", l)
			}
			got[strings.TrimSuffix(f[0], ":")] = n
		}
	}
	if len(got) != 3 {
		t.Fatalf("systemd --test printed no memory limits for %s:\n%s\n%s", memOracleUnit, out, e)
	}
	return got
}

// TestMemoryLimitOracle draws a unit file and drop-ins setting
// MemoryMax=, MemoryHigh= and MemoryLimit= to memOracleValues and
// requires the gatherer's reading (boot's unit file listing and
// LastAccepted, parseMemoryLimit) to give the bytes Debian's real
// systemd 252 prints for the unit with `systemd --test`, run as nobody in
// a sandbox over the drawn /etc/systemd (`systemctl --root=DIR show`
// refuses --root, and systemd-analyze verify only says which values it
// ignores). Percentages are of this host's MemTotal, as systemd's. It
// skips without /lib/systemd/systemd and setpriv even in CI.
func TestMemoryLimitOracle(t *testing.T) {
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var totalKiB uint64
	fmt.Sscanf(string(meminfo), "MemTotal: %d kB", &totalKiB)
	sb := testenv.NewSystemdBox(t, false)
	box, dir, etc := sb.Sandbox, sb.Dir, sb.EtcDir
	g := &Gatherer{Root: dir, F: &Facts{MemTotal: totalKiB << 10, PageSize: int64(os.Getpagesize())}}
	rapid.Check(t, func(rt *rapid.T) {
		ents, _ := os.ReadDir(etc) // empty it: the bind mount holds this directory
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(etc, e.Name())); err != nil {
				rt.Fatal(err)
			}
		}
		file := func(section string) string {
			var b strings.Builder
			b.WriteString("[" + section + "]\n")
			for i, n := 0, rapid.IntRange(0, 4).Draw(rt, "lines"); i < n; i++ {
				key := rapid.SampledFrom([]string{"MemoryMax", "MemoryHigh", "MemoryLimit"}).Draw(rt, "key")
				fmt.Fprintf(&b, "%s=%s\n", key, rapid.SampledFrom(memOracleValues).Draw(rt, "value"))
			}
			return b.String()
		}
		write := func(p, body string) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(etc, p)), 0o755); err != nil {
				rt.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(etc, p), []byte(body), 0o644); err != nil {
				rt.Fatal(err)
			}
		}
		write("system/"+memOracleUnit, "[Unit]\nDescription=hostprep oracle\n"+file("Service")+"ExecStart=/bin/true\n")
		for i, n := 0, rapid.IntRange(0, 2).Draw(rt, "dropins"); i < n; i++ {
			write("system/"+memOracleUnit+".d/"+rapid.SampledFrom([]string{"10-a.conf", "60-hostprep.conf"}).Draw(rt, "dropin"), file("Service"))
		}
		want := memOracle(rt, box)
		_, files, err := hostconf.UnitNofile(dir, memOracleUnit)
		if err != nil {
			rt.Fatal(err)
		}
		m, _, err := g.readUnitMem(files, "Service")
		if err != nil {
			rt.Fatal(err)
		}
		for key, w := range want {
			if got := m[key]; got.bytes != w {
				rt.Fatalf("systemd --test gives %s=%d, preflight %d (%q at %s)", key, w, got.bytes, got.value, got.where)
			}
		}
	})
}
