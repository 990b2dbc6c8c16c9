package hostconf_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// The tester's image: an instance alias (job@a.service ->
// worker@.service, what Alias=job@%i.service makes when worker@a is
// enabled) names instance a only; worker@b gets the template's drop-in,
// not job@a.service.d. A template alias (job@.service) names every
// instance, with its drop-ins job@b.service.d and job@.service.d.
func TestInstanceAliasNamesOneInstance(t *testing.T) {
	files := map[string]string{
		"/usr/lib/systemd/system/worker@.service":           "[Service]\nExecStart=/bin/true\nLimitNOFILE=1024\n",
		"/etc/systemd/system/job@a.service":                 "symlink to /lib/systemd/system/worker@.service",
		"/lib":                                              "symlink to usr/lib",
		"/etc/systemd/system/job@a.service.d/zz.conf":       "[Service]\nLimitNOFILE=100000\n",
		"/usr/lib/systemd/system/worker@.service.d/yy.conf": "[Service]\nLimitNOFILE=2048\n",
	}
	root := testenv.TempTree(t, files)
	for unit, want := range map[string]string{"worker@b.service": "2048:2048", "worker@a.service": "100000:100000", "job@a.service": "100000:100000"} {
		got, _, err := hostconf.UnitNofile(root, unit)
		must(t, err)
		if got.String() != want {
			t.Errorf("%s: LimitNOFILE %s at %s, want %s", unit, got, got.Where(), want)
		}
	}
	files["/etc/systemd/system/job@.service"] = "symlink to /lib/systemd/system/worker@.service"
	files["/etc/systemd/system/job@.service.d/zzz.conf"] = "[Service]\nLimitNOFILE=3000\n"
	root = testenv.TempTree(t, files)
	if got, _, _ := hostconf.UnitNofile(root, "worker@b.service"); got.String() != "3000:3000" {
		t.Errorf("worker@b with the template alias job@.service: %s at %s, want job@.service.d/zzz.conf's 3000 (after yy.conf)", got, got.Where())
	}
	files["/etc/systemd/system/job@b.service.d/zzzz.conf"] = "[Service]\nLimitNOFILE=4000\n"
	root = testenv.TempTree(t, files)
	if got, _, _ := hostconf.UnitNofile(root, "worker@b.service"); got.String() != "4000:4000" {
		t.Errorf("worker@b with job@b.service.d: %s at %s, want 4000", got, got.Where())
	}
}

// TestTemplateAliasOracle draws a template (worker@.service in
// /run/systemd/system), instance and template alias links to it (as
// `systemctl enable` makes them for Alias=job@%i.service and
// Alias=job@.service), perhaps an unrelated unit file job@b.service
// (an alias that points elsewhere), and drop-ins under every name
// (each name's own drop-in file names, so no hash order matters), and
// requires hostconf.UnitNofile to equal what Debian's systemd 252 prints
// with `systemd --test` for each instance name.
func TestTemplateAliasOracle(t *testing.T) {
	sb := testenv.NewSystemdBox(t, true)
	box, dir, etc, run := sb.Sandbox, sb.Dir, sb.EtcDir, sb.RunDir
	const tmpl = "hpworker@.service"
	ud := newUnitDirs(t, sb)
	dropNames := []string{"hpworker@.service", "hpworker@a.service", "hpworker@b.service", "hpjob@.service", "hpjob@a.service", "hpjob@b.service"}
	rapid.Check(t, func(rt *rapid.T) {
		ud.empty()
		write, link := ud.write, ud.link
		where := rapid.SampledFrom([]string{"/etc/systemd/system", "/run/systemd/system"})
		write("/run/systemd/system", tmpl, "[Service]\nExecStart=/bin/true\nLimitNOFILE=1111\n")
		queries := []string{"hpworker@a.service", "hpworker@b.service"}
		ids := map[string]string{"hpworker@a.service": "hpworker@a.service", "hpworker@b.service": "hpworker@b.service"}
		if rapid.Bool().Draw(rt, "template alias") {
			link(where.Draw(rt, "linkdir"), "hpjob@.service", "/run/systemd/system/"+tmpl)
			ids["hpjob@a.service"], ids["hpjob@b.service"] = "hpworker@a.service", "hpworker@b.service"
		}
		for _, i := range []string{"a", "b"} {
			if rapid.Bool().Draw(rt, "instance alias "+i) {
				link(where.Draw(rt, "linkdir"), "hpjob@"+i+".service", "/run/systemd/system/"+tmpl)
				ids["hpjob@"+i+".service"] = "hpworker@" + i + ".service"
			}
		}
		if _, linked := ids["hpjob@b.service"]; !linked && rapid.Bool().Draw(rt, "other unit") {
			write(where.Draw(rt, "filedir"), "hpjob@b.service", "[Service]\nExecStart=/bin/true\nLimitNOFILE=2222\n")
			ids["hpjob@b.service"] = "hpjob@b.service"
		}
		for _, q := range []string{"hpjob@a.service", "hpjob@b.service"} {
			if _, ok := ids[q]; ok {
				queries = append(queries, q)
			}
		}
		n := 1000
		for i, name := range dropNames {
			for k, c := 0, rapid.IntRange(0, 1).Draw(rt, "dropins"); k < c; k++ {
				n++
				write(where.Draw(rt, "dropindir"), fmt.Sprintf("%s.d/%02d-%d.conf", name, 10+i, k), fmt.Sprintf("[Service]\nLimitNOFILE=%d\n", n))
			}
		}
		query := rapid.SampledFrom(queries).Draw(rt, "query")
		got, _, err := hostconf.UnitNofile(dir, query)
		if err != nil {
			rt.Fatal(err)
		}
		want, _ := systemdTest(rt, box, query, ids[query])
		if got.String() != want {
			rt.Fatalf("systemd --test --unit=%s gives LimitNOFILE %s, simulation %s at %s\n%s", query, want, got.String(), got.Where(), treeListing(dir, etc, run))
		}
	})
}

// unitDirs are /etc/systemd/system and /run/systemd/system of a
// SystemdBox (its EtcDir/system and RunDir), for the alias oracles to
// draw unit files, drop-ins and links into by the path systemd sees.
type unitDirs struct {
	t        *testing.T
	etc, run string
	dirs     map[string]string
}

func newUnitDirs(t *testing.T, sb *testenv.SystemdBox) *unitDirs {
	return &unitDirs{t: t, etc: sb.EtcDir, run: sb.RunDir,
		dirs: map[string]string{"/etc/systemd/system": filepath.Join(sb.EtcDir, "system"), "/run/systemd/system": sb.RunDir}}
}

// empty removes everything below both (the bind mounts hold the
// directories themselves).
func (u *unitDirs) empty() {
	for _, d := range []string{u.etc, u.run} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			must(u.t, os.RemoveAll(filepath.Join(d, e.Name())))
		}
	}
}

// write writes body to p below d, a unit directory as systemd sees it.
func (u *unitDirs) write(d, p, body string) {
	p = filepath.Join(u.dirs[d], p)
	must(u.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(u.t, os.WriteFile(p, []byte(body), 0o644))
}

// link makes name in d, a unit directory as systemd sees it, a
// symbolic link to target.
func (u *unitDirs) link(d, name, target string) {
	must(u.t, os.MkdirAll(u.dirs[d], 0o755))
	must(u.t, os.Symlink(target, filepath.Join(u.dirs[d], name)))
}

// treeListing lists the files and links under each of ds (in dir), for a
// failure message.
func treeListing(dir string, ds ...string) string {
	var files strings.Builder
	for _, d := range ds {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			if l, err := os.Readlink(p); err == nil {
				fmt.Fprintf(&files, "%s -> %s\n", strings.TrimPrefix(p, dir), l)
				return nil
			}
			b, _ := os.ReadFile(p)
			fmt.Fprintf(&files, "%s: %q\n", strings.TrimPrefix(p, dir), b)
			return nil
		})
	}
	return files.String()
}
