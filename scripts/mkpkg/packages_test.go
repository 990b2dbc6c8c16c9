package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
)

// testVersion is the version the test binary and its packages carry.
const testVersion = "v9.8.7"

var (
	buildOnce sync.Once
	built     []string
	buildErr  error
	buildDir  string
)

// packages builds hostprep (with testVersion) and its .deb and .rpm once
// for every test of the package, in a directory removed by TestMain.
func packages(t *testing.T) (deb, rpm string) {
	t.Helper()
	buildOnce.Do(func() {
		bin := filepath.Join(buildDir, "hostprep")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version="+testVersion, "-o", bin, "./cmd/hostprep")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			t.Logf("%s", out)
			return
		}
		built, buildErr = Build(Options{Formats: []string{"deb", "rpm"}, Binary: bin, Src: "../..", Version: testVersion, Arch: "amd64", Out: filepath.Join(buildDir, "dist")})
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built[0], built[1]
}

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "mkpkg-test-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	os.Exit(code)
}

// needTool skips when a tool is missing locally and fails in CI.
func needTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		msg := name + " is not installed: apt-get install -y " + pkg
		if testenv.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Every package holds the binary, a man page per command, the example
// units (not enabled) and the docs.
var wantFiles = []string{
	"/usr/bin/hostprep",
	"/usr/share/man/man1/hostprep.1.gz",
	"/usr/share/man/man1/hostprep-ready.1.gz",
	"/usr/share/man/man1/hostprep-tune-apply.1.gz",
	"/usr/lib/systemd/system/hostprep-ready.service",
	"/usr/lib/systemd/system/hostprep-ready.timer",
	"/usr/share/doc/hostprep/README.md",
	"/usr/share/doc/hostprep/docs/packages.md",
	"/usr/share/doc/hostprep/examples/ansible/hostprep-ready.yml",
}

func hasAll(t *testing.T, what, listing string) {
	t.Helper()
	for _, f := range wantFiles {
		if !strings.Contains(listing, f+"\n") {
			t.Errorf("%s lacks %s", what, f)
		}
	}
	if strings.Contains(listing, ".go\n") {
		t.Errorf("%s holds Go source", what)
	}
}

// TestDebContents: the .deb lists every file, carries the version, and its
// units run the packaged binary (/usr/bin/hostprep, not install.sh's
// /usr/local/bin/hostprep).
func TestDebContents(t *testing.T) {
	needTool(t, "dpkg-deb", "dpkg")
	deb, _ := packages(t)
	var files strings.Builder
	for _, l := range strings.Split(run(t, "dpkg-deb", "-c", deb), "\n") {
		if f := strings.Fields(l); len(f) >= 6 {
			files.WriteString(strings.TrimPrefix(f[5], ".") + "\n")
		}
	}
	hasAll(t, "deb", files.String())
	if v := strings.TrimSpace(run(t, "dpkg-deb", "-f", deb, "Version")); v != "9.8.7-1" {
		t.Errorf("deb version %q, want 9.8.7-1", v)
	}
	dir := t.TempDir()
	run(t, "dpkg-deb", "-x", deb, dir)
	unit, err := os.ReadFile(filepath.Join(dir, "usr/lib/systemd/system/hostprep-ready.service"))
	if err != nil || !strings.Contains(string(unit), "ExecStart=/usr/bin/hostprep ready") || strings.Contains(string(unit), "/usr/local/bin") {
		t.Errorf("packaged unit does not run /usr/bin/hostprep: %v\n%s", err, unit)
	}
}

// TestRPMContents: rpm -qpl lists every file, and the docs are %doc.
func TestRPMContents(t *testing.T) {
	needTool(t, "rpm", "rpm")
	_, rpm := packages(t)
	hasAll(t, "rpm", run(t, "rpm", "-qpl", rpm))
	if v := run(t, "rpm", "-qp", "--queryformat", "%{NAME} %{VERSION}-%{RELEASE} %{ARCH}", rpm); v != "hostprep 9.8.7-1 x86_64" {
		t.Errorf("rpm is %q", v)
	}
	if docs := run(t, "rpm", "-qpd", rpm); !strings.Contains(docs, "/usr/share/doc/hostprep/README.md\n") || strings.Contains(docs, "/usr/bin/hostprep") {
		t.Errorf("rpm %%doc files: %s", docs)
	}
}

// dpkg runs dpkg, waiting while another apt or dpkg holds its lock.
func dpkg(t *testing.T, args ...string) (string, error) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; {
		out, err := exec.Command("dpkg", args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "lock") || time.Now().After(deadline) {
			return string(out), err
		}
		time.Sleep(2 * time.Second)
	}
}

func installed(t *testing.T) bool {
	out, _ := exec.Command("dpkg-query", "-W", "-f=${db:Status-Status}", "hostprep").Output()
	return strings.TrimSpace(string(out)) == "installed"
}

// TestDebInstallsAndRemoves installs the .deb with dpkg -i, runs the
// installed hostprep, and removes it with dpkg -r, which leaves none of
// its files. The machine is left as found: the test skips when hostprep
// is installed already (as a package or in /usr/bin), and a failed run
// purges what it installed.
func TestDebInstallsAndRemoves(t *testing.T) {
	needTool(t, "dpkg", "dpkg")
	if os.Geteuid() != 0 {
		if testenv.InCI() {
			t.Fatal("installing a package needs root")
		}
		t.Skip("installing a package needs root")
	}
	if installed(t) {
		t.Skip("a hostprep package is installed on this host: not replacing it")
	}
	if _, err := os.Lstat("/usr/bin/hostprep"); err == nil {
		t.Skip("/usr/bin/hostprep exists: not replacing it")
	}
	deb, _ := packages(t)
	t.Cleanup(func() {
		if out, _ := exec.Command("dpkg-query", "-W", "-f=${db:Status-Status}", "hostprep").Output(); strings.TrimSpace(string(out)) != "not-installed" && len(out) > 0 {
			if out, err := dpkg(t, "--purge", "hostprep"); err != nil {
				t.Errorf("dpkg --purge hostprep: %v\n%s", err, out)
			}
		}
	})
	if out, err := dpkg(t, "-i", deb); err != nil {
		t.Fatalf("dpkg -i: %v\n%s", err, out)
	}
	if !installed(t) {
		t.Fatal("dpkg -i succeeded but hostprep is not installed")
	}
	if v := run(t, "/usr/bin/hostprep", "--version"); !strings.Contains(v, testVersion) {
		t.Errorf("installed hostprep --version: %q", v)
	}
	var owned []string
	for _, f := range strings.Split(strings.TrimSpace(run(t, "dpkg", "-L", "hostprep")), "\n") {
		if st, err := os.Lstat(f); err != nil {
			t.Errorf("dpkg -L lists %s, not on disk: %v", f, err)
		} else if !st.IsDir() {
			owned = append(owned, f)
		}
	}
	if len(owned) < len(wantFiles) {
		t.Errorf("only %d files installed", len(owned))
	}
	if out, err := dpkg(t, "-r", "hostprep"); err != nil {
		t.Fatalf("dpkg -r: %v\n%s", err, out)
	}
	if installed(t) {
		t.Error("hostprep still installed after dpkg -r")
	}
	for _, f := range owned {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("dpkg -r left %s", f)
		}
	}
}

// packageVersion orders as dpkg and rpm need: a tag is the version, a
// commit past it a prerelease of it, an untagged checkout 0.0.0~git.
func TestPackageVersion(t *testing.T) {
	for in, want := range map[string][2]string{
		"v1.2.0":        {"1.2.0", ""},
		"1.2.0":         {"1.2.0", ""},
		"v1.2.0-3-gabc": {"1.2.0", "3.gabc"},
		"0a57aaf-dirty": {"0.0.0", "git.0a57aaf.dirty"},
		"dev":           {"0.0.0", "git.dev"},
	} {
		if v, pre := packageVersion(in); v != want[0] || pre != want[1] {
			t.Errorf("packageVersion(%q) = %q, %q; want %q, %q", in, v, pre, want[0], want[1])
		}
	}
}

// Bad options name the flag and the fix.
func TestOptionsCheck(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hostprep")
	os.WriteFile(bin, []byte("x"), 0o755)
	ok := Options{Formats: []string{"deb"}, Binary: bin, Src: "../..", Version: "v1", Out: t.TempDir()}
	if err := ok.check(); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*Options){
		"--format":  func(o *Options) { o.Formats = []string{"tgz"} },
		"--binary":  func(o *Options) { o.Binary = "" },
		"--version": func(o *Options) { o.Version = "" },
		"--src":     func(o *Options) { o.Src = t.TempDir() },
	} {
		o := ok
		mod(&o)
		if err := o.check(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
