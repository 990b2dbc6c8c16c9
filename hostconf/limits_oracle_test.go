package hostconf_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// limitsUsers are the sandbox users the oracle logs in as: root (which "*"
// and @group lines do not reach), nobody (group nogroup) and daemon.
var limitsUsers = []string{"root", "nobody", "daemon"}

// limitsDomains are the domains the generator writes: names, groups, and
// uid and gid ranges (root is 0, daemon 1, nobody 65534 in group nogroup
// 65534; limits.conf(5)).
var limitsDomains = []string{"*", "root", "nobody", "daemon", "@nogroup", "@daemon", "@root", "@staff",
	"0:", ":0", "1:", ":1", "2:", "1:100", "65534:", "1:65533", "@65534:", "@:1", "@0:", "@1:100", "x:", ":"}

// TestLimitsOracle draws random limits.conf and limits.d sets, opens a
// session per user with the real pam_limits (runuser) inside the sandbox,
// and requires `ulimit -Sn; ulimit -Hn` to equal hostconf.NofileAtBoot.
//
// The sandbox's processes have hard nofile 20000 and no CAP_SYS_RESOURCE,
// so values stay below 20000; a line that sets only soft does not take
// effect here (Debian's pam_limits then asks for a hard limit taken from
// PID 1 that this process may not raise, and the session keeps soft 1024),
// so the generator writes hard and "-" lines: a soft no line sets is the
// sandbox's 1024, a hard no line sets the inherited 20000.
func TestLimitsOracle(t *testing.T) {
	testenv.RequireFiles(t, "/usr/sbin/runuser", "/etc/pam.d/runuser")
	box := testenv.NewSandbox(t)
	dir := t.TempDir()
	sec := filepath.Join(dir, "etc/security")
	conf := filepath.Join(sec, "limits.conf")
	d := filepath.Join(sec, "limits.d")
	// A copy of /etc/security (the other modules' files) goes over it, so
	// that limits.conf can be missing or a broken link.
	must(t, os.MkdirAll(sec, 0o755))
	if out, err := exec.Command("cp", "-a", "/etc/security/.", sec+"/").CombinedOutput(); err != nil {
		t.Fatalf("copy /etc/security: %v %s", err, out)
	}
	must(t, os.RemoveAll(d))
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(conf, nil, 0o644))
	for _, f := range []string{"/etc/passwd", "/etc/group"} {
		b, err := os.ReadFile(f)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	if _, e, c := box.Run("sh", "-c", fmt.Sprintf("mount --bind %s /etc/security", sec)); c != 0 {
		t.Fatalf("mounts: %s", e)
	}
	rapid.Check(t, func(rt *rapid.T) {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			must(t, os.Remove(filepath.Join(d, e.Name())))
		}
		line := func() string {
			switch rapid.IntRange(0, 8).Draw(rt, "kind") {
			case 0:
				return rapid.SampledFrom([]string{"", "# * hard nofile 5", "  ", "nobody hard nproc 100"}).Draw(rt, "filler")
			case 1:
				// "DOMAIN -": no limits at all for a user it names
				return rapid.SampledFrom([]string{"root -", "nobody -", "@nogroup -", "@daemon -", "* -", "1: -"}).Draw(rt, "nolimits")
			}
			l := fmt.Sprintf("%s %s %s %d%s", rapid.SampledFrom(limitsDomains).Draw(rt, "domain"),
				rapid.SampledFrom([]string{"hard", "-", "hard", "-", "Hard"}).Draw(rt, "type"),
				rapid.SampledFrom([]string{"nofile", "nofile", "nofile", "NOFILE"}).Draw(rt, "item"),
				rapid.IntRange(2000, 19999).Draw(rt, "value"),
				rapid.SampledFrom([]string{"", " # comment", "x", " extra words"}).Draw(rt, "tail"))
			switch rapid.IntRange(0, 9).Draw(rt, "shape") {
			case 0:
				// a comment longer than pam's 1024-byte fgets buffer: the
				// rest comes as a line of its own
				l = "#" + strings.Repeat("x", rapid.SampledFrom([]int{1000, 1021, 1022, 1023}).Draw(rt, "long")) + l
			case 1:
				// a no-break space is no space to sscanf
				l = strings.Replace(l, " ", "\u00a0 ", 1)
			}
			return l
		}
		body := func(label string) string {
			var b strings.Builder
			for i, n := 0, rapid.IntRange(0, 4).Draw(rt, label); i < n; i++ {
				b.WriteString(line() + "\n")
			}
			return b.String()
		}
		must(t, os.RemoveAll(conf))
		switch rapid.IntRange(0, 19).Draw(rt, "limits.conf") {
		case 0: // missing: every session fails
		case 1: // a link to a missing file: the same
			must(t, os.Symlink("/nonexistent-hostprep", conf))
		case 2: // a directory opens and reads as nothing
			must(t, os.Mkdir(conf, 0o755))
		default:
			must(t, os.WriteFile(conf, []byte(body("conf")), 0o644))
		}
		for i, n := 0, rapid.IntRange(0, 4).Draw(rt, "files"); i < n; i++ {
			// ".z.conf": pam's glob does not match hidden names
			name := rapid.SampledFrom([]string{"10-a.conf", "60-hostprep.conf", "90-z.conf", "A.conf", "notes.txt", ".z.conf"}).Draw(rt, "name")
			must(t, os.WriteFile(filepath.Join(d, name), []byte(body("lines")), 0o644))
		}
		if rapid.IntRange(0, 9).Draw(rt, "dangling") == 0 {
			// a limits.d entry pam cannot open fails every session
			must(t, os.Symlink("/nonexistent-hostprep", filepath.Join(d, "95-dangling.conf")))
		}
		for _, u := range limitsUsers {
			out, e, c := box.Run("runuser", "-u", u, "--", "/bin/sh", "-c", "ulimit -Sn; ulimit -Hn")
			n, err := hostconf.NofileAtBoot(dir, u)
			if err != nil {
				rt.Fatal(err)
			}
			if c != 0 {
				if !strings.Contains(e, "cannot open session") || !n.Broken.Set {
					rt.Fatalf("runuser %s: %s (simulation: broken %+v)", u, e, n.Broken)
				}
				continue
			}
			if n.Broken.Set {
				rt.Fatalf("%s: session opened, simulation says %s breaks it", u, n.Broken.File.Name())
			}
			f := strings.Fields(out)
			if len(f) != 2 {
				rt.Fatalf("runuser %s: %q", u, out)
			}
			soft, hard := uint64(1024), uint64(20000)
			if n.Hard.Set {
				hard = n.Hard.Value
			}
			if n.Soft.Set {
				soft = n.Soft.Value
			}
			soft = min(soft, hard)
			if f[0] != strconv.FormatUint(soft, 10) || f[1] != strconv.FormatUint(hard, 10) {
				c, _ := os.ReadFile(conf)
				var ds strings.Builder
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					b, _ := os.ReadFile(filepath.Join(d, e.Name()))
					fmt.Fprintf(&ds, "%s:\n%s", e.Name(), b)
				}
				rt.Fatalf("%s: session gets %s:%s, simulation %d:%d (soft %+v, hard %+v)\nlimits.conf:\n%slimits.d:\n%s", u, f[0], f[1], soft, hard, n.Soft, n.Hard, c, ds.String())
			}
		}
	})
}
