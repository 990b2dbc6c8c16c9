package hostconf_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/tune/sysval"
)

// oracleKeys are per-network-namespace keys the sandbox may set freely,
// with their value before each run and the values the generator writes.
var oracleKeys = []struct {
	key      string
	baseline string
	values   []string
}{
	{"net.core.somaxconn", "4321", []string{"128", "1000", "2048", "65535"}},
	{"net.ipv4.tcp_fin_timeout", "42", []string{"10", "20", "30", "60"}},
	{"net.ipv4.tcp_keepalive_probes", "7", []string{"3", "5", "9"}},
	{"net.ipv4.tcp_rmem", "4096 87380 6291456", []string{"4096 131072 6291456", "8192\t65536  4194304", "4096 4096 4096"}},
	{"net.ipv4.conf.all.rp_filter", "0", []string{"1", "2"}},
	{"net.ipv4.conf.default.rp_filter", "0", []string{"1", "2"}},
	{"net.ipv4.conf.lo.rp_filter", "0", []string{"1", "2"}},
}

// oracleNames are the file names drawn: ordering around 60-hostprep.conf
// and 99-sysctl.conf, upper/lower case and punctuation (C-locale order),
// a hidden file and a name without .conf (both ignored at boot).
var oracleNames = []string{"10-a.conf", "50-b.conf", "60-hostprep.conf", "99-sysctl.conf", "99-zz-local.conf",
	"A.conf", "a.conf", "_x.conf", "60-hostprep.conf~", ".hidden.conf", "99-vendor.conf", "zz.conf.bak"}

// oracleRoot is a tree with every directory boot reads; the sandbox
// bind-mounts each one (and /etc/sysctl.conf) over the real one.
type oracleRoot struct {
	dir string
	box *testenv.Sandbox
}

func newOracleRoot(t *testing.T) *oracleRoot {
	t.Helper()
	testenv.RequireFiles(t, "/lib/systemd/systemd-sysctl", "/usr/sbin/sysctl")
	box := testenv.NewSandbox(t)
	r := &oracleRoot{dir: t.TempDir(), box: box}
	var script strings.Builder
	script.WriteString("set -e\nmount -t tmpfs hostprep-test /usr/local/lib\n")
	for _, d := range hostconf.SysctlDirs {
		if d == "/lib/sysctl.d" {
			continue // /lib -> usr/lib here, as in the tree below
		}
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "mkdir -p %s\nmount --bind %s %s\n", d, filepath.Join(r.dir, d), d)
	}
	if fi, err := os.Lstat("/lib"); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := os.Symlink("usr/lib", filepath.Join(r.dir, "lib")); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Skip("/lib is a separate directory on this host; the oracle tree mirrors a merged /usr")
	}
	conf := filepath.Join(r.dir, "etc/sysctl.conf")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/etc/sysctl.conf"); err != nil {
		t.Skip("no /etc/sysctl.conf to bind over")
	}
	fmt.Fprintf(&script, "mount --bind %s /etc/sysctl.conf\n", conf)
	if _, e, c := box.Run("sh", "-c", script.String()); c != 0 {
		t.Fatalf("oracle mounts: %s", e)
	}
	return r
}

// run resets the oracle keys, runs cmd in the sandbox and returns the
// keys' values after it (fields joined by one space).
func (r *oracleRoot) run(t fataler, cmd string) map[string]string {
	var sh strings.Builder
	for _, k := range oracleKeys {
		fmt.Fprintf(&sh, "printf '%%s' '%s' > /proc/sys/%s\n", k.baseline, strings.ReplaceAll(k.key, ".", "/"))
	}
	sh.WriteString(cmd + " >/dev/null 2>&1 || true\n")
	for _, k := range oracleKeys {
		fmt.Fprintf(&sh, "echo \"$(cat /proc/sys/%s)\"\n", strings.ReplaceAll(k.key, ".", "/"))
	}
	out, e, c := r.box.Run("sh", "-c", sh.String())
	if c != 0 {
		t.Fatalf("sandbox run: %s", e)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(oracleKeys) {
		t.Fatalf("sandbox output %q", out)
	}
	got := map[string]string{}
	for i, k := range oracleKeys {
		got[k.key] = strings.Join(strings.Fields(lines[i]), " ")
	}
	return got
}

// fataler is *testing.T or *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// clear empties every directory of the tree and /etc/sysctl.conf.
func (r *oracleRoot) clear(t fataler) {
	for _, d := range hostconf.SysctlDirs {
		if d == "/lib/sysctl.d" {
			continue
		}
		ents, _ := os.ReadDir(filepath.Join(r.dir, d))
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(r.dir, d, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(r.dir, "etc/sysctl.conf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// genKey spells key one of the ways the loaders accept, and two with
// "..": a ".." path component (net/ipv4/../core/somaxconn: systemd-sysctl
// refuses to write it, path_is_normalized; procps opens the path and the
// kernel follows it when the directory before it exists) and a doubled
// dot (net..core.somaxconn: an empty component, dropped by both).
func genKey(t *rapid.T, key string) string {
	switch rapid.IntRange(0, 6).Draw(t, "spelling") {
	case 0:
		return strings.ReplaceAll(key, ".", "/") // net/core/somaxconn
	case 1:
		if !strings.Contains(key, ".conf.") {
			return "/" + strings.ReplaceAll(key, ".", "/")
		}
	case 2:
		if !strings.Contains(key, ".conf.") {
			return strings.Replace(strings.ReplaceAll(key, ".", "/"), "/", "/./", 1) // net/./core/somaxconn
		}
	case 3:
		if !strings.Contains(key, ".conf.") {
			p := strings.ReplaceAll(key, ".", "/")
			// net/../net/core/somaxconn, net/ipv4/../core/somaxconn
			// (a directory that exists), net/nosuch/../core/somaxconn
			up := rapid.SampledFrom([]string{"", "/ipv4", "/core", "/nosuch"}).Draw(t, "updir")
			return p[:strings.Index(p, "/")] + up + "/../" + p[strings.Index(p, "/")+1:]
		}
	case 4:
		return strings.Replace(key, ".", "..", 1) // net..core.somaxconn
	}
	return key
}

// genTail draws what follows a value: nothing, or text the kernel ignores
// after the fields the key takes (a comment, an extra field), or for a
// one-field key text that makes it refuse the write (a glued letter, a
// trailing no-break space, which systemd does not strip).
func genTail(t *rapid.T, fields int) string {
	tails := []string{"", "", "", " # keep", " ; x", " 65535"}
	if fields == 1 {
		tails = append(tails, "\u00a0", "x")
	}
	return rapid.SampledFrom(tails).Draw(t, "tail")
}

// genLine draws one line of a sysctl.d file.
func genLine(t *rapid.T) string {
	pad := rapid.SampledFrom([]string{"", " ", "\t", "  "})
	switch rapid.IntRange(0, 9).Draw(t, "line") {
	case 0:
		return rapid.SampledFrom([]string{"", "# net.core.somaxconn = 1", "; comment", "   ", "not an assignment"}).Draw(t, "filler")
	case 1:
		k := oracleKeys[rapid.IntRange(4, 6).Draw(t, "rp")]
		return pad.Draw(t, "p0") + rapid.SampledFrom([]string{"", "-"}).Draw(t, "dash") + "net.ipv4.conf.*.rp_filter" + pad.Draw(t, "p1") + "=" + pad.Draw(t, "p2") + rapid.SampledFrom(k.values).Draw(t, "gv")
	case 2:
		k := oracleKeys[rapid.IntRange(4, 6).Draw(t, "rpx")]
		return "-" + k.key // excluded from globs (systemd)
	}
	k := oracleKeys[rapid.IntRange(0, len(oracleKeys)-1).Draw(t, "key")]
	// \v and \f before a key: procps strips them, systemd does not.
	lead := rapid.SampledFrom([]string{"", "", "", "", "\v", "\f"}).Draw(t, "lead")
	return lead + pad.Draw(t, "p0") + rapid.SampledFrom([]string{"", "-"}).Draw(t, "dash") + genKey(t, k.key) +
		pad.Draw(t, "p1") + "=" + pad.Draw(t, "p2") + rapid.SampledFrom(k.values).Draw(t, "v") +
		genTail(t, len(strings.Fields(k.baseline))) + pad.Draw(t, "p3")
}

// genFiles writes a random file set into the tree: files in random
// directories (names repeated across directories shadow), empty files,
// symlinks to /dev/null, symlinks to other files (relative and absolute),
// the Debian 99-sysctl.conf -> ../sysctl.conf link, and /etc/sysctl.conf.
func (r *oracleRoot) genFiles(t *rapid.T) {
	dirs := []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}
	var regular []string
	body := func(label string) string {
		n := rapid.IntRange(0, 6).Draw(t, label)
		var b strings.Builder
		for i := 0; i < n; i++ {
			// A bare CR or a NUL ends a line for systemd's read_line, not
			// for procps' fgets. Not after a tcp_rmem line: procps then
			// writes "4096 131072 6291456\r...", the kernel stores the
			// fields before the CR and refuses the rest, a partial write
			// the simulation reports as refused without following it.
			l := genLine(t)
			eols := []string{"\n", "\n", "\n", "\r\n", "\r", "\x00"}
			if strings.Contains(l, "tcp_rmem") {
				eols = eols[:4]
			}
			b.WriteString(l + rapid.SampledFrom(eols).Draw(t, "eol"))
		}
		return b.String()
	}
	if rapid.Bool().Draw(t, "sysctl.conf") {
		if err := os.WriteFile(filepath.Join(r.dir, "etc/sysctl.conf"), []byte(body("conf")), 0o644); err != nil {
			t.Fatal(err)
		}
		regular = append(regular, "/etc/sysctl.conf")
	}
	nfiles := rapid.IntRange(0, 7).Draw(t, "files")
	for i := 0; i < nfiles; i++ {
		d := rapid.SampledFrom(dirs).Draw(t, "dir")
		name := rapid.SampledFrom(oracleNames).Draw(t, "name")
		p := filepath.Join(d, name)
		host := filepath.Join(r.dir, p)
		if _, err := os.Lstat(host); err == nil {
			continue
		}
		var err error
		switch kind := rapid.IntRange(0, 9).Draw(t, "kind"); {
		case kind == 0:
			err = os.WriteFile(host, nil, 0o644)
		case kind == 1:
			err = os.Symlink("/dev/null", host)
		case kind == 3:
			// a broken link hides the name in later directories
			err = os.Symlink("/nonexistent-hostprep.conf", host)
		case kind == 4 && rapid.Bool().Draw(t, "dir"):
			err = os.Mkdir(host, 0o755) // so does a directory named *.conf
		case kind == 2 && len(regular) > 0:
			target := rapid.SampledFrom(regular).Draw(t, "target")
			if rapid.Bool().Draw(t, "relative") {
				rel, _ := filepath.Rel(d, target)
				target = rel
			}
			err = os.Symlink(target, host)
		default:
			err = os.WriteFile(host, []byte(body("lines")), 0o644)
			if !strings.HasPrefix(d, "/lib/") {
				regular = append(regular, p)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// simulated is what hostconf.ReadSysctlWith predicts for every oracle key.
func (r *oracleRoot) simulated(t fataler, loader hostconf.Loader) map[string]string {
	s, err := hostconf.ReadSysctlWith(r.dir, loader)
	if err != nil {
		t.Fatal(err)
	}
	s.Dir = func(d string) bool { // the sandbox's kernel: this one
		fi, err := os.Stat(filepath.Join("/proc/sys", d))
		return err == nil && fi.IsDir()
	}
	want := map[string]string{}
	for _, k := range oracleKeys {
		// what the kernel keeps of a write: the key's fields, read as
		// proc_dointvec reads them (a refused write keeps what was there)
		n := len(strings.Fields(k.baseline))
		took := func(v string) bool { f, ok := sysval.Written(v, n); return ok && len(f) == n }
		want[k.key] = k.baseline
		if set, ok := s.LookupAccepted(k.key, took); ok {
			f, _ := sysval.Written(set.Value, n)
			want[k.key] = strings.Join(f, " ")
		}
		want[k.key] = strings.Join(strings.Fields(want[k.key]), " ")
	}
	return want
}

func (r *oracleRoot) dump() string {
	var b strings.Builder
	filepath.Walk(r.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || (fi.IsDir() && !strings.HasSuffix(p, ".conf")) {
			return nil
		}
		if fi.IsDir() {
			fmt.Fprintf(&b, "/%s/ (a directory)\n", strings.TrimPrefix(p, r.dir+"/"))
			return nil
		}
		rel, _ := filepath.Rel(r.dir, p)
		if fi.Mode()&os.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			fmt.Fprintf(&b, "/%s -> %s\n", rel, t)
			return nil
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "/%s:\n%s", rel, data)
		return nil
	})
	return b.String()
}

// TestSysctlOracle draws random sysctl.d file sets, applies each with
// Debian's real /lib/systemd/systemd-sysctl and procps `sysctl --system`
// inside the sandbox, and requires the live values to equal what
// hostconf.ReadSysctlWith predicts for that loader, over at least 500 cases.
func TestSysctlOracle(t *testing.T) {
	r := newOracleRoot(t)
	if f := flag.Lookup("rapid.checks"); f != nil {
		if n, _ := strconv.Atoi(f.Value.String()); n < 500 {
			was := f.Value.String()
			must(t, f.Value.Set("500"))
			t.Cleanup(func() { _ = f.Value.Set(was) }) // the next test draws its own number
		}
	}
	cases := 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		r.clear(rt)
		r.genFiles(rt)
		for _, l := range []struct {
			loader hostconf.Loader
			cmd    string
		}{{hostconf.SystemdSysctl, "/lib/systemd/systemd-sysctl"}, {hostconf.ProcpsSystem, "sysctl -q --system"}} {
			got := r.run(rt, l.cmd)
			want := r.simulated(rt, l.loader)
			for _, k := range oracleKeys {
				if got[k.key] != want[k.key] {
					rt.Fatalf("%s: %s is %q after boot, simulation says %q\nfiles:\n%s", l.loader, k.key, got[k.key], want[k.key], r.dump())
				}
			}
		}
	})
	if cases < 500 && !t.Failed() {
		t.Fatalf("only %d cases ran, want >= 500", cases)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSysctlLongLineOracle: a line of 1 MiB or more (LONG_LINE_MAX) makes
// systemd-sysctl stop reading the file there ("Failed to read file,
// ignoring"), so only the lines before it count; procps reads on.
func TestSysctlLongLineOracle(t *testing.T) {
	r := newOracleRoot(t)
	r.clear(t)
	body := "net.ipv4.tcp_fin_timeout = 20\n# " + strings.Repeat("x", 1<<20) + "\nnet.core.somaxconn = 1000\n"
	must(t, os.WriteFile(filepath.Join(r.dir, "etc/sysctl.d/70-x.conf"), []byte(body), 0o644))
	for _, l := range []struct {
		loader hostconf.Loader
		cmd    string
	}{{hostconf.SystemdSysctl, "/lib/systemd/systemd-sysctl"}, {hostconf.ProcpsSystem, "sysctl -q --system"}} {
		got, want := r.run(t, l.cmd), r.simulated(t, l.loader)
		for _, k := range []string{"net.ipv4.tcp_fin_timeout", "net.core.somaxconn"} {
			if got[k] != want[k] {
				t.Errorf("%s: %s is %q after a file with a 1 MiB line, simulation says %q", l.loader, k, got[k], want[k])
			}
		}
	}
}

// TestSysctlDotDotOracle: a ".." component in a key is a different key
// to systemd-sysctl, which then refuses to write it (the path is not
// normalized: EINVAL), while procps opens the path and the kernel
// follows the ".." when the directory before it exists (net/nosuch/..
// is ENOENT); an empty component (net..core) is dropped by both.
// Boot.Lookup says the same for each loader.
func TestSysctlDotDotOracle(t *testing.T) {
	r := newOracleRoot(t)
	r.clear(t)
	body := "net/../net/core/somaxconn = 1000\nnet..ipv4.tcp_fin_timeout = 20\nnet/nosuch/../ipv4/tcp_keepalive_probes = 3\n"
	must(t, os.WriteFile(filepath.Join(r.dir, "etc/sysctl.d/70-x.conf"), []byte(body), 0o644))
	for _, l := range []struct {
		loader                     hostconf.Loader
		cmd                        string
		somaxconn, timeout, probes string
	}{{hostconf.SystemdSysctl, "/lib/systemd/systemd-sysctl", "4321", "20", "7"}, {hostconf.ProcpsSystem, "sysctl -q --system", "1000", "20", "7"}} {
		got, want := r.run(t, l.cmd), r.simulated(t, l.loader)
		for k, v := range map[string]string{"net.core.somaxconn": l.somaxconn, "net.ipv4.tcp_fin_timeout": l.timeout, "net.ipv4.tcp_keepalive_probes": l.probes} {
			if got[k] != v {
				t.Errorf("%s: %s is %q after %q, the test expected %q", l.loader, k, got[k], body, v)
			}
			if want[k] != got[k] {
				t.Errorf("%s: %s is %q after %q, simulation says %q", l.loader, k, got[k], body, want[k])
			}
		}
	}
}
