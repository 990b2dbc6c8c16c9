package hostconf_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// dumpUnits runs `systemd --test --unit=query` as nobody in box and
// returns each unit's dump ("-> Unit NAME:" blocks) as field -> value
// ("Slice" -> "system.slice", "TasksMax" -> "4915" or "infinity"), and
// systemd's log (stderr).
func dumpUnits(t interface{ Fatalf(string, ...any) }, box *testenv.Sandbox, query string) (map[string]map[string]string, string) {
	out, e, _ := box.Run("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"/lib/systemd/systemd", "--test", "--system", "--unit="+query, "--no-pager", "--log-target=console")
	units := map[string]map[string]string{}
	var cur map[string]string
	depth := 0 // the tabs before a field of the current unit
	for _, l := range strings.Split(out, "\n") {
		tabs := len(l) - len(strings.TrimLeft(l, "\t"))
		if i := strings.Index(l, "-> Unit "); i >= 0 && strings.HasSuffix(l, ":") {
			cur, depth = map[string]string{}, tabs+1
			units[strings.TrimSuffix(l[i+len("-> Unit "):], ":")] = cur
			continue
		}
		k, v, ok := strings.Cut(l[tabs:], ": ")
		if cur == nil || !ok || tabs != depth {
			continue
		}
		if _, seen := cur[k]; !seen {
			if k == "TasksMax" && v == strconv.FormatUint(hostconf.Unlimited, 10) {
				v = "infinity"
			}
			cur[k] = v
		}
	}
	return units, e
}

// TestSliceOracle draws a service's Slice= (none, valid nested slices,
// names systemd refuses), template instances (whose default slice is
// system-PREFIX.slice), slice unit files and drop-ins (the slice's own,
// dash-prefix ones such as hostprep-.slice.d, the top-level slice.d)
// with TasksMax= values, and requires hostconf.UnitSlice to name the slice
// Debian's real systemd 252 puts the unit in, hostconf.SliceChain the slices
// above it, and hostconf.SliceTasksMax each slice's TasksMax, as `systemd
// --test` prints them (run as nobody in the sandbox over the drawn
// /etc/systemd). It skips without /lib/systemd/systemd (and setpriv).
func TestSliceOracle(t *testing.T) {
	sb := testenv.NewSystemdBox(t, false)
	box, dir, etc := sb.Sandbox, sb.Dir, sb.EtcDir
	ceiling := hostconf.TasksCeiling(procSysUint(t, "kernel/threads-max"), procSysUint(t, "kernel/pid_max"))
	slices := []string{"system.slice", "hostprep.slice", "hostprep-a.slice", "hostprep-a-b.slice", `system-hostprep\x2doracle.slice`}
	dropDirs := append(append([]string{}, slices...), "hostprep-.slice", "hostprep-a-.slice", "system-.slice")
	rapid.Check(t, func(rt *rapid.T) {
		ents, _ := os.ReadDir(etc) // empty it: the bind mount holds this directory
		for _, e := range ents {
			must(t, os.RemoveAll(filepath.Join(etc, e.Name())))
		}
		write := func(p, body string) {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(etc, p)), 0o755))
			must(t, os.WriteFile(filepath.Join(etc, p), []byte(body), 0o644))
		}
		tasks := func() string {
			return rapid.SampledFrom([]string{"1000", "50%", "", "0", "infinity", "0x3c%", "lots", "12345"}).Draw(rt, "tasks")
		}
		svc := unitOracleName
		query := svc
		if rapid.Bool().Draw(rt, "template") {
			svc, query = "hostprep-oracle@.service", "hostprep-oracle@x.service"
		}
		body := "[Service]\nExecStart=/bin/true\n"
		for i, n := 0, rapid.IntRange(0, 2).Draw(rt, "slicelines"); i < n; i++ {
			body += "Slice=" + rapid.SampledFrom(append([]string{"", "bad", "-hostprep.slice", "hostprep--a.slice", "hostprep-.slice", "x.service", "hostprep@a.slice"}, slices...)).Draw(rt, "slice") + "\n"
		}
		write("system/"+svc, body)
		for _, s := range slices {
			if rapid.IntRange(0, 2).Draw(rt, "slicefile "+s) == 0 {
				write("system/"+s, "[Slice]\nTasksMax="+tasks()+"\n")
			}
		}
		for i, n := 0, rapid.IntRange(0, 4).Draw(rt, "dropins"); i < n; i++ {
			d := rapid.SampledFrom(append([]string{"slice"}, dropDirs...)).Draw(rt, "dropdir")
			sect := rapid.SampledFrom([]string{"Slice", "Slice", "Service"}).Draw(rt, "section")
			write("system/"+d+".d/"+rapid.SampledFrom([]string{"10-a.conf", "50-b.conf"}).Draw(rt, "dropname"), "["+sect+"]\nTasksMax="+tasks()+"\n")
		}
		units, log := dumpUnits(rt, box, query)
		slice, where, why, err := hostconf.UnitSlice(dir, query, nil)
		if err != nil {
			rt.Fatal(err)
		}
		u, ok := units[query]
		if !ok {
			// the unit's slice fails to load: systemd puts the unit in it
			// and cannot start it
			if !strings.Contains(log, "Unit "+slice+" failed to load properly") || hostconf.ValidSlice(slice) || why == "" {
				rt.Fatalf("systemd --test dumped no %s; simulation: slice %s (%s), valid %v, %q\n%s\n%s", query, slice, where, hostconf.ValidSlice(slice), why, log, oracleFiles(dir, etc))
			}
			return
		}
		if why != "" {
			rt.Fatalf("systemd loads %s in %s; simulation: %s", query, u["Slice"], why)
		}
		if u["Slice"] != slice {
			rt.Fatalf("systemd puts %s in %q, simulation %q (%s)\n%v\n%s\n%s", query, u["Slice"], slice, where, u, log, oracleFiles(dir, etc))
		}
		for _, s := range hostconf.SliceChain(slice) {
			d, ok := units[s]
			if !ok {
				rt.Fatalf("systemd --test dumped no %s, a slice above %s\n%s", s, query, oracleFiles(dir, etc))
			}
			got, _, err := hostconf.SliceTasksMax(dir, s, ceiling, nil)
			if err != nil {
				rt.Fatal(err)
			}
			if got.String() != d["TasksMax"] {
				rt.Fatalf("systemd gives %s TasksMax %s, simulation %s (%s=%q at %s)\n%s", s, d["TasksMax"], got.String(), got.Key, got.Text, got.Where(), oracleFiles(dir, etc))
			}
		}
		if want := hostconf.SliceParent(slice); want != "" && units[slice]["Slice"] != want {
			rt.Fatalf("systemd puts %s in %q, simulation %q", slice, units[slice]["Slice"], want)
		}
	})
}
