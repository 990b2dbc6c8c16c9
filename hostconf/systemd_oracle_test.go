package hostconf_test

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/internal/testenv"

	"github.com/hostprep/hostprep/hostconf"
)

// TestManagerOracle draws random system.conf and system.conf.d drop-in
// sets (names across /etc, /run, /usr/local/lib, /usr/lib, shadowing,
// empty files, lines outside [Manager]) and requires hostconf.ManagerNofile to read
// the files systemd-analyze cat-config lists, in its order, and to take
// the last DefaultLimitNOFILE= of its merged output.
func TestManagerOracle(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze")
	}
	dirs := []string{"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d"}
	rapid.Check(t, func(rt *rapid.T) {
		root := t.TempDir()
		write := func(p, body string) {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
			must(t, os.WriteFile(filepath.Join(root, p), []byte(body), 0o644))
		}
		val := func() string {
			return rapid.SampledFrom([]string{"1024:524288", "65536", "1024:2097152", "infinity", "4096:8192"}).Draw(rt, "v")
		}
		if rapid.Bool().Draw(rt, "main") {
			write("/etc/systemd/system.conf", "[Manager]\n#DefaultLimitNOFILE=1\nDefaultLimitNOFILE="+val()+"\n")
		}
		for i, n := 0, rapid.IntRange(0, 6).Draw(rt, "n"); i < n; i++ {
			p := filepath.Join(rapid.SampledFrom(dirs).Draw(rt, "dir"), rapid.SampledFrom([]string{"10-a.conf", "60-hostprep.conf", "99-z.conf", "A.conf", "x.conf.bak"}).Draw(rt, "name"))
			if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
				continue
			}
			// No /dev/null links here: under --root systemd-analyze resolves
			// them inside the root, where there is no /dev/null (the
			// sysctl oracle covers masks with the real systemd-sysctl).
			switch rapid.IntRange(1, 5).Draw(rt, "kind") {
			case 1:
				write(p, "")
			case 2:
				write(p, "[Service]\nDefaultLimitNOFILE="+val()+"\n")
			default:
				write(p, fmt.Sprintf("[Manager]\nDefaultLimitNOFILE=%s\n", val()))
			}
		}
		out, err := exec.Command("systemd-analyze", "cat-config", "--no-pager", "--root="+root, "systemd/system.conf").Output()
		if err != nil {
			rt.Skip("cat-config: ", err) // no file at all
		}
		var listed []string
		last, section := "", ""
		for _, l := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(l, "# /"):
				listed = append(listed, strings.TrimPrefix(strings.TrimPrefix(l, "# "), root))
			case strings.HasPrefix(l, "["):
				section = l
			case section == "[Manager]" && strings.HasPrefix(l, "DefaultLimitNOFILE="):
				last = strings.TrimPrefix(l, "DefaultLimitNOFILE=")
			}
		}
		m, files, err := hostconf.ManagerNofile(root)
		if err != nil {
			rt.Fatal(err)
		}
		var read []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(root, f.Path)); err == nil && !f.Masked {
				read = append(read, f.Path)
			}
		}
		if strings.Join(read, " ") != strings.Join(listed, " ") {
			rt.Fatalf("cat-config reads %v, simulation %v", listed, read)
		}
		want := "1024:524288" // systemd's default
		if last != "" {
			want = last
			if !strings.Contains(want, ":") {
				want = want + ":" + want
			}
		}
		if m.String() != want {
			rt.Fatalf("DefaultLimitNOFILE: cat-config's last %q, simulation %s at %s", last, m.String(), m.Where())
		}
	})
}

// TestEmptyLimitIsIgnored: "LimitNOFILE=" in a drop-in and
// "DefaultLimitNOFILE=" in a system.conf drop-in do not reset the value
// set before them: systemd rejects the empty value and ignores the line,
// as systemd-analyze verify prints.
func TestEmptyLimitIsIgnored(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"etc/systemd/system/x.service":                 "[Service]\nExecStart=/bin/true\nLimitNOFILE=4096:8192\n",
		"etc/systemd/system/x.service.d/99-admin.conf": "[Service]\nLimitNOFILE=\n",
		"etc/systemd/system.conf":                      "[Manager]\nDefaultLimitNOFILE=2048:65536\n",
		"etc/systemd/system.conf.d/99-admin.conf":      "[Manager]\nDefaultLimitNOFILE=\n",
	}
	for p, body := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), []byte(body), 0o644))
	}
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		out, _ := exec.Command("systemd-analyze", "verify", "--root="+root, "x.service").CombinedOutput()
		if !strings.Contains(string(out), "99-admin.conf:2: Failed to parse resource value, ignoring") {
			t.Errorf("systemd-analyze verify no longer ignores an empty LimitNOFILE=:\n%s", out)
		}
	}
	u, _, err := hostconf.UnitNofile(root, "x")
	must(t, err)
	if u.String() != "4096:8192" {
		t.Errorf("unit LimitNOFILE after an empty assignment: %s at %s, want 4096:8192 from the unit file", u.String(), u.Where())
	}
	m, _, err := hostconf.ManagerNofile(root)
	must(t, err)
	if m.String() != "2048:65536" {
		t.Errorf("DefaultLimitNOFILE after an empty assignment: %s at %s, want 2048:65536 from system.conf", m.String(), m.Where())
	}
}

// unitOracleName is the unit TestUnitOracle writes; no directory of the
// host has it.
const unitOracleName = "hostprep-oracle.service"

// genUnitValue draws a LimitNOFILE=/DefaultLimitNOFILE= value: the forms
// systemd's rlimit_parse takes (base 0 numbers, a leading +, soft:hard)
// and systemd's own 0o and 0b prefixes) and some it refuses (08, 0o8,
// Go's _ form, a trailing U+00A0, soft above hard).
func genUnitValue(t *rapid.T, key string) string {
	if key == "TasksMax" {
		return genTasksValue(t)
	}
	return rapid.SampledFrom([]string{"4096", "8192:16384", "0x1000", "010000", "+8192", "1024:0x4000",
		"0X2000:040000", "08", "0o10000", "0b1000000000000", "0o8", "1_000", "4096\u00a0", "16384:4096", "-5", " 2048 ", "3000:"}).Draw(t, "value")
}

// genTasksValue draws a TasksMax= value: the forms systemd's
// config_parse_tasks_max takes (safe_atou64 numbers, infinity, shares in
// %, ‰ and ‱ whose whole part parse_permyriad reads with safe_atoi, in
// base 0: octal, 0x, 0b, 0o, a sign) and some it refuses (0, above 100%,
// too many decimals, 08%, a negative share).
func genTasksValue(t *rapid.T) string {
	return rapid.SampledFrom([]string{"4096", "0x1000", "010000", "+8192", "infinity", "50%", "12.5%", "125‰", "1‱",
		"0", "101%", "1.125%", "lots", "", " 2048 ", "-5", "1_000", "4194304", "99999999",
		"060%", "0x3c%", "+60%", "010.5%", "0b11%", " 60%", "0o17%", "08%", "-1%", "-0%", "0%", "0x%", "+0x3c%", "0X1f‰",
		"07‱", "060 %", "1_0%", ".5%", "0b+11%", "4294967356%", "0144%", "0145%"}).Draw(t, "tasks")
}

// genUnitLine draws one line of a unit file or drop-in, with its end: an
// assignment of one of keys.
func genUnitLine(t *rapid.T, keys ...string) string {
	var l string
	key := rapid.SampledFrom(keys).Draw(t, "key")
	switch rapid.IntRange(0, 9).Draw(t, "unitline") {
	case 0:
		l = rapid.SampledFrom([]string{"", "# LimitNOFILE=1", "; x", "[Unit]", "[Service]", "Description=x"}).Draw(t, "filler")
		if rapid.IntRange(0, 5).Draw(t, "bad") == 0 {
			// lines that fail the whole file from there on, and some
			// that look like them but do not
			l = rapid.SampledFrom([]string{"[Service", "[\xff]", "Description=\xff\xfe", "Description=\xc0\x80", "[Ser\"vice]", "[Ser\\vice]", "[Service]x",
				"[X-Ünïcode]", "[Ser]vice]", "# \xff", "[Ser vice]"}).Draw(t, "badline")
		}
	case 1:
		// a continuation, perhaps with a comment line inside it
		l = key + "=\\\n" + rapid.SampledFrom([]string{"", "# c\n", "; c\n"}).Draw(t, "inside") + genUnitValue(t, key)
	case 2:
		l = "\v" + key + "=" + genUnitValue(t, key) // \v is no white space to systemd
	default:
		l = rapid.SampledFrom([]string{"", " ", "\t"}).Draw(t, "pad") + key + "=" + genUnitValue(t, key)
	}
	return l + rapid.SampledFrom([]string{"\n", "\n", "\n", "\r\n", "\r", "\x00"}).Draw(t, "eol")
}

// genUnitFile draws a file: a section header and lines, perhaps after a
// UTF-8 byte order mark.
func genUnitFile(t *rapid.T, section string, keys ...string) string {
	var b strings.Builder
	if rapid.IntRange(0, 4).Draw(t, "bom") == 0 {
		b.WriteString("\ufeff")
	}
	b.WriteString("[" + section + "]\n")
	for i, n := 0, rapid.IntRange(0, 4).Draw(t, "lines"); i < n; i++ {
		b.WriteString(genUnitLine(t, keys...))
	}
	return b.String()
}

// unitOracle runs systemd --test for the unit as nobody in box (where
// dir's etc/systemd is /etc/systemd) and returns "soft:hard" of its
// LimitNOFILE and its TasksMax (in tasks, or "infinity"); both "" when
// systemd fails to load the unit.
func unitOracle(t interface{ Fatalf(string, ...any) }, box *testenv.Sandbox) (nofile, tasks string) {
	return systemdTest(t, box, unitOracleName, unitOracleName)
}

// systemdTest runs `systemd --test --unit=query` as nobody in box and
// returns "soft:hard" of the LimitNOFILE and the TasksMax (in tasks, or
// "infinity") of id, the unit query loads as (its unit file's name);
// both "" when systemd fails to load it.
func systemdTest(t interface{ Fatalf(string, ...any) }, box *testenv.Sandbox, query, id string) (nofile, tasks string) {
	out, e, _ := box.Run("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"/lib/systemd/systemd", "--test", "--system", "--unit="+query, "--no-pager", "--log-target=console")
	if strings.Contains(e, id+" failed to load properly") {
		// a unit file systemd cannot parse: the unit is not loaded and
		// never started, whatever the dump shows of it
		return "", ""
	}
	in := false
	hard := ""
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case strings.Contains(l, "-> Unit "+id+":"):
			in = true
		case in && strings.Contains(l, "-> Unit "):
			in = false
		case in && len(f) == 2 && f[0] == "LimitNOFILE:":
			hard = f[1]
		case in && len(f) == 2 && f[0] == "LimitNOFILESoft:" && hard != "":
			nofile = f[1] + ":" + hard
		case in && len(f) == 2 && f[0] == "TasksMax:":
			tasks = f[1]
			if tasks == strconv.FormatUint(hostconf.Unlimited, 10) {
				tasks = "infinity"
			}
		}
	}
	if nofile == "" || tasks == "" {
		t.Fatalf("systemd --test --unit=%s printed no LimitNOFILE or TasksMax for %s:\n%s\n%s", query, id, out, e)
	}
	return nofile, tasks
}

// TestUnitOracle draws a unit file, drop-ins and system.conf with the
// shapes systemd's config_parse reads in its own way (a byte order mark,
// backslash continuations with comment lines inside, bare CR and NUL
// line ends, \v before a key, base-0 and "+" numbers, values it refuses,
// lines that fail the rest of the file: invalid UTF-8, a bad section
// header, and the unit with them when the unit file has one) and
// requires hostconf.UnitNofile to equal the LimitNOFILE and
// hostconf.UnitTasksMax the TasksMax (numbers, infinity and shares of the
// host's task ceiling) that Debian's real systemd 252 prints for the unit
// with `systemd --test`, run as nobody in the sandbox over the drawn
// /etc/systemd (when no file of the unit sets LimitNOFILE, both must agree
// on that; a unit that sets no TasksMax gets systemd's 15%). It skips
// without /lib/systemd/systemd (and setpriv) even in CI.
func TestUnitOracle(t *testing.T) {
	sb := testenv.NewSystemdBox(t, false)
	box, dir, etc := sb.Sandbox, sb.Dir, sb.EtcDir
	// systemd --test does not apply system.conf's DefaultLimitNOFILE
	// (measured: it prints the process's own limits for a unit that sets
	// none), so the manager's files are TestManagerOracle's; here a unit
	// that sets nothing must get what --test prints for a bare unit.
	must(t, os.MkdirAll(filepath.Join(etc, "system"), 0o755))
	must(t, os.WriteFile(filepath.Join(etc, "system", unitOracleName), []byte("[Service]\nExecStart=/bin/true\n"), 0o644))
	unset, _ := unitOracle(t, box)
	ceiling := hostconf.TasksCeiling(procSysUint(t, "kernel/threads-max"), procSysUint(t, "kernel/pid_max"))
	rapid.Check(t, func(rt *rapid.T) {
		ents, _ := os.ReadDir(etc) // empty it: the bind mount holds this directory
		for _, e := range ents {
			must(t, os.RemoveAll(filepath.Join(etc, e.Name())))
		}
		write := func(p, body string) {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(etc, p)), 0o755))
			must(t, os.WriteFile(filepath.Join(etc, p), []byte(body), 0o644))
		}
		write("system/"+unitOracleName, "[Unit]\nDescription=hostprep oracle\n[Service]\nExecStart=/bin/true\n"+genUnitFile(rt, "Service", "LimitNOFILE", "TasksMax"))
		for i, n := 0, rapid.IntRange(0, 3).Draw(rt, "dropins"); i < n; i++ {
			name := rapid.SampledFrom([]string{"10-a.conf", "60-hostprep.conf", "99-z.conf"}).Draw(rt, "dropin")
			write("system/"+unitOracleName+".d/"+name, genUnitFile(rt, "Service", "LimitNOFILE", "TasksMax"))
		}
		want, wantTasks := unitOracle(rt, box)
		got, read, err := hostconf.UnitNofile(dir, unitOracleName)
		if err != nil {
			rt.Fatal(err)
		}
		if broken := read[0].Broken; broken != "" || want == "" {
			if broken == "" || want != "" {
				rt.Fatalf("systemd --test loads %s: %v (LimitNOFILE %q); the simulation says it fails to: %q", unitOracleName, want != "", want, broken)
			}
			return // neither loads the unit
		}
		tasks, _, err := hostconf.UnitTasksMax(dir, unitOracleName, ceiling)
		if err != nil {
			rt.Fatal(err)
		}
		if tasks.String() != wantTasks {
			rt.Fatalf("systemd --test gives %s TasksMax %s, simulation %s (%s=%q at %s, of a ceiling of %d tasks)\n%s", unitOracleName, wantTasks, tasks.String(), tasks.Key, tasks.Text, tasks.Where(), ceiling, oracleFiles(dir, etc))
		}
		if !strings.HasPrefix(got.File.Path, "/etc/systemd/system/") && want == unset {
			return // no file of the unit sets it, for both
		}
		if got.String() != want {
			rt.Fatalf("systemd --test gives %s LimitNOFILE %s, simulation %s at %s\n%s", unitOracleName, want, got.String(), got.Where(), oracleFiles(dir, etc))
		}
	})
}

// oracleFiles lists the files under etc (in dir) with their bytes, for a
// failure message.
func oracleFiles(dir, etc string) string { return treeListing(dir, etc) }

// procSysUint reads a whole number from /proc/sys/NAME (0 when it cannot).
func procSysUint(t *testing.T, name string) uint64 {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		t.Logf("/proc/sys/%s: %v", name, err)
		return 0
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// TestUnitAliasOracle draws a unit file (in /etc/systemd/system or
// /run/systemd/system, perhaps with a copy in /etc hiding the one in
// /run), alias links to it (relative or absolute, one perhaps an alias
// of the other, as `systemctl enable` makes them for Alias=) and
// drop-ins under every name and the shared prefix name, and requires
// hostconf.UnitNofile for the unit, or for either alias, to equal the
// LimitNOFILE Debian's systemd 252 prints with `systemd --test` for
// that name. Drop-in names are drawn so that no two aliases share one:
// systemd walks a unit's aliases in hash order.
func TestUnitAliasOracle(t *testing.T) {
	sb := testenv.NewSystemdBox(t, true)
	box, dir, etc, run := sb.Sandbox, sb.Dir, sb.EtcDir, sb.RunDir
	const unit, a1, a2 = "hostprep-oracle.service", "hostprep-alias.service", "hostprep-oracle-two.service"
	ud := newUnitDirs(t, sb)
	dropNames := map[string][]string{
		unit: {"10-a.conf", "50-f.conf", "90-z.conf"}, "hostprep-.service": {"10-a.conf", "50-f.conf", "90-z.conf"},
		a1: {"10-a.conf", "21-a1.conf"}, a2: {"90-z.conf", "22-a2.conf"},
	}
	rapid.Check(t, func(rt *rapid.T) {
		ud.empty()
		n := 1000
		write, link := ud.write, ud.link
		where := rapid.SampledFrom([]string{"/etc/systemd/system", "/run/systemd/system"})
		fragDir := where.Draw(rt, "unitdir")
		write(fragDir, unit, "[Service]\nExecStart=/bin/true\nLimitNOFILE=1111\n")
		if fragDir == "/run/systemd/system" && rapid.Bool().Draw(rt, "copy") {
			write("/etc/systemd/system", unit, "[Service]\nExecStart=/bin/true\nLimitNOFILE=2222\n")
		}
		names := []string{unit}
		for _, a := range []string{a1, a2} {
			if !rapid.Bool().Draw(rt, "alias "+a) {
				continue
			}
			d := where.Draw(rt, "aliasdir")
			target := unit
			if a == a2 && len(names) == 2 && rapid.Bool().Draw(rt, "chain") {
				target = a1 // an alias of the alias
			}
			switch rapid.IntRange(0, 2).Draw(rt, "linkform") {
			case 0:
				link(d, a, path.Join(fragDir, target)) // absolute, to the unit file's directory
			case 1:
				link(d, a, "/etc/systemd/system/"+target) // absolute, perhaps to the copy, perhaps dangling
			default:
				link(d, a, target) // relative: the same directory
			}
			names = append(names, a)
		}
		for _, name := range append(slices.Clone(names), "hostprep-.service") {
			for i, k := 0, rapid.IntRange(0, 2).Draw(rt, "dropins"); i < k; i++ {
				n++
				write(where.Draw(rt, "dropindir"), name+".d/"+rapid.SampledFrom(dropNames[name]).Draw(rt, "dropin"), fmt.Sprintf("[Service]\nLimitNOFILE=%d\n", n))
			}
		}
		query := rapid.SampledFrom(names).Draw(rt, "query")
		got, _, err := hostconf.UnitNofile(dir, query)
		if err != nil {
			rt.Fatal(err)
		}
		want, _ := systemdTest(rt, box, query, unit)
		if got.String() != want {
			rt.Fatalf("systemd --test --unit=%s gives LimitNOFILE %s, simulation %s at %s\n%s", query, want, got.String(), got.Where(), treeListing(dir, etc, run))
		}
	})
}

// TestTasksShareOracle: each TasksMax= share whose whole part systemd
// 252's parse_permyriad reads with safe_atoi in base 0 ("060%" is 48%,
// "0x3c%" 60%, "0b11%" 3%) gives, by hostconf.UnitTasksMax, the TasksMax
// Debian's real systemd prints for the unit with `systemd --test`, and
// the expected number of a 10000-task ceiling. Field case: a drop-in's
// TasksMax=060% was judged 60% (ok) and a unit's 0x3c% as invalid, so
// tune "raised" that unit's 60% to a lower number.
func TestTasksShareOracle(t *testing.T) {
	cases := []struct {
		v    string
		want uint64 // of a ceiling of 10000 tasks; 0: refused, the default applies
	}{
		{"060%", 4800}, {"0x3c%", 6000}, {"+60%", 6000}, {"010.5%", 850}, {"0b11%", 300}, {"0o17%", 1500},
		{"0X1f‰", 310}, {"07‱", 7}, {"+0x3c%", 6000}, {"0144%", 10000},
		{"08%", 0}, {"-1%", 0}, {"0x%", 0}, {"060 %", 0}, {"1_0%", 0}, {".5%", 0}, {"0145%", 0}, {"4294967356%", 0},
	}
	for _, c := range cases {
		root := t.TempDir()
		p := filepath.Join(root, "etc/systemd/system", unitOracleName)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("[Service]\nExecStart=/bin/true\nTasksMax="+c.v+"\n"), 0o644))
		s, _, err := hostconf.UnitTasksMax(root, unitOracleName, 10000)
		must(t, err)
		want, wantKey := c.want, "TasksMax"
		if want == 0 {
			want, wantKey = 1500, "DefaultTasksMax" // systemd's 15%
		}
		if s.Tasks != want || s.Key != wantKey {
			t.Errorf("TasksMax=%s: %d tasks from %s=%q, want %d from %s", c.v, s.Tasks, s.Key, s.Text, want, wantKey)
		}
	}
	sb := testenv.NewSystemdBox(t, false)
	box, dir, etc := sb.Sandbox, sb.Dir, sb.EtcDir
	must(t, os.MkdirAll(filepath.Join(etc, "system"), 0o755))
	ceiling := hostconf.TasksCeiling(procSysUint(t, "kernel/threads-max"), procSysUint(t, "kernel/pid_max"))
	for _, c := range append(cases, struct {
		v    string
		want uint64
	}{" 60%", 6000}) {
		must(t, os.WriteFile(filepath.Join(etc, "system", unitOracleName), []byte("[Service]\nExecStart=/bin/true\nTasksMax="+c.v+"\n"), 0o644))
		_, want := unitOracle(t, box)
		s, _, err := hostconf.UnitTasksMax(dir, unitOracleName, ceiling)
		must(t, err)
		if s.String() != want {
			t.Errorf("TasksMax=%q: systemd --test gives %s, simulation %s (%s=%q, of a ceiling of %d tasks)", c.v, want, s.String(), s.Key, s.Text, ceiling)
		}
	}
}
