package facts

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/testenv"
)

// sliceOracleValues are Slice= values: slice names, the unit specifiers
// systemd expands in them (%i %p %j %n %N %%), ones it does not know
// there (%I %P %J %z), an empty value, names that are no slice's (a
// blank inside, "@", another type, no ".slice"), names it assigns but
// cannot load (dashes first, last or doubled) and one taken from the
// host (%H, which preflight leaves unread).
var sliceOracleValues = []string{"brk.slice", "brk-x.slice", "", "brk .slice", "%i.slice", "%I.slice", "%p.slice", "%P.slice", "%j.slice", "%J.slice",
	"%n.slice", "%N.slice", "brk-%i.slice", "brk-%j.slice", "brk-%p.slice", "x%%.slice", "%z.slice", "foo@bar.slice", "foo@.slice", "brk.service",
	"a--b.slice", "a-.slice", "-a.slice", "-.slice", "a.b.slice", "x%", `a\x2db.slice`, "@a.slice", "nonsense", "%H.slice", "brk"}

// sliceOracleUnits are the units drawn: plain ones with and without a
// dash, and instances of a template, one with an escaped instance.
var sliceOracleUnits = []string{"brk.service", "brk-x.service", "brk-tpl@a.service", "brk-tpl@a-b.service", `brk-tpl@x\x2dy.service`}

// systemdDump runs systemd --test for unit as nobody in box and returns
// the settings it prints for each unit it loaded ("brk.slice" ->
// "TasksMax" -> "100"), and what it logged.
func systemdDump(t interface{ Fatalf(string, ...any) }, box *testenv.Sandbox, unit string) (map[string]map[string]string, string) {
	out, e, _ := box.Run("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"/lib/systemd/systemd", "--test", "--system", "--unit="+unit, "--no-pager", "--log-target=console")
	dump := map[string]map[string]string{}
	var cur map[string]string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if i := strings.Index(l, "-> Unit "); i >= 0 {
			cur = map[string]string{}
			dump[strings.TrimSuffix(l[i+len("-> Unit "):], ":")] = cur
			continue
		}
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ": "); ok && cur != nil {
			if _, seen := cur[k]; !seen {
				cur[k] = v
			}
		}
	}
	return dump, e
}

// TestSliceOracle draws a unit (plain or an instance) whose file and
// drop-in set Slice= to sliceOracleValues, and brk.slice with TasksMax=
// lines, and requires the gatherer's unitSlice to give the slice Debian's
// real systemd 252 prints for the unit with `systemd --test` ("Slice:"),
// run as nobody in a sandbox over the drawn /etc/systemd; where systemd
// fails to load the slice the unit cannot start, which unitSlice must
// say; a slice taken from the host (%H) must be said unread. The
// TasksMax sliceTasks reads for brk.slice must be the one systemd prints
// for it (an empty TasksMax= is the manager's default, no line none). It
// skips without /lib/systemd/systemd and setpriv even in CI.
func TestSliceOracle(t *testing.T) {
	sb := testenv.NewSystemdBox(t, false)
	box, dir, etc := sb.Sandbox, sb.Dir, sb.EtcDir
	g := &Gatherer{Root: dir, F: &Facts{Sysctl: map[string]string{}}}
	for _, k := range []string{"kernel.threads-max", "kernel.pid_max"} {
		b, err := os.ReadFile(sysctlkey.File("/proc/sys", k))
		if err != nil {
			t.Fatal(err)
		}
		g.F.Sysctl[k] = strings.TrimSpace(string(b))
	}
	rapid.Check(t, func(rt *rapid.T) {
		ents, _ := os.ReadDir(etc) // empty it: the bind mount holds this directory
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(etc, e.Name())); err != nil {
				rt.Fatal(err)
			}
		}
		lines := func(key string, values []string, most int) string {
			var b strings.Builder
			for i, n := 0, rapid.IntRange(0, most).Draw(rt, "lines"); i < n; i++ {
				b.WriteString(key + "=" + rapid.SampledFrom(values).Draw(rt, key) + "\n")
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
		unit := rapid.SampledFrom(sliceOracleUnits).Draw(rt, "unit")
		file := unit
		if tmpl, ok := hostconf.TemplateOf(unit); ok {
			file = tmpl
		}
		write("system/"+file, "[Unit]\nDescription=hostprep oracle\n[Service]\n"+lines("Slice", sliceOracleValues, 3)+"ExecStart=/bin/true\n")
		if rapid.Bool().Draw(rt, "dropin") {
			write("system/"+unit+".d/50-slice.conf", "[Service]\n"+lines("Slice", sliceOracleValues, 2))
		}
		write("system/brk.slice", "[Slice]\n"+lines("TasksMax", []string{"100", "", "infinity", "5%", "0", "lots", "0x40"}, 3))
		dump, logged := systemdDump(rt, box, unit)
		_, files, err := hostconf.UnitNofile(dir, unit)
		if err != nil {
			rt.Fatal(err)
		}
		slice, _, why, err := hostconf.UnitSliceIn(dir, unit, files, nil)
		if err != nil {
			rt.Fatal(err)
		}
		u, loaded := dump[unit]
		switch {
		case strings.Contains(why, "from the host"):
		case !loaded:
			if !strings.Contains(logged, "failed to load properly") || !strings.Contains(why, "cannot load") {
				rt.Fatalf("systemd --test did not load %s (%s); preflight: slice %q (%s)", unit, logged, slice, why)
			}
		case u["Slice"] != slice || why != "":
			rt.Fatalf("systemd --test puts %s in %q, preflight in %q (%s)", unit, u["Slice"], slice, why)
		}
		s, ok := dump["brk.slice"]
		if !ok {
			return // not loaded: no Slice= named it
		}
		_, sfiles, err := hostconf.UnitNofile(dir, "brk.slice")
		if err != nil {
			rt.Fatal(err)
		}
		least, unseen := g.sliceTasks([]sliceLevel{{name: "brk.slice", label: "brk.slice", files: sfiles}}, tasksCeiling(g.F))
		got := least.limit
		if least.from == "" {
			got = Unlimited
		}
		if want, _ := strconv.ParseUint(s["TasksMax"], 10, 64); got != want || len(unseen) > 0 {
			rt.Fatalf("systemd --test gives brk.slice TasksMax=%s, preflight %d (%s; %q)", s["TasksMax"], got, least.from, unseen)
		}
	})
}
