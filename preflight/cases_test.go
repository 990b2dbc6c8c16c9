package preflight

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/internal/hosttest"
)

// caseFile is a field case in testdata/cases (kept equal to the project's
// field cases by TestFieldCasesInSync).
type caseFile struct {
	Role         string   `yaml:"role"`
	Sockets      int      `yaml:"sockets"`
	ConnRate     int      `yaml:"conn_rate"`
	Destinations []string `yaml:"destinations"`
	// Service is --service (a unit name): the recorded target_process
	// names the same unit.
	Service string `yaml:"service"`
	// BatchPoints is --batch-points.
	BatchPoints int `yaml:"batch_points"`
	// IoTDBHome is an IoTDB release (--iotdb-home): path -> content; a
	// .jar's content "... (template: K=V)" is a jar holding
	// iotdb-system.properties.template with the line K=V.
	IoTDBHome map[string]string `yaml:"iotdb_home"`
	Host      yaml.Node         `yaml:"host"`
	Expect    struct {
		Verdict  string   `yaml:"verdict"`
		Fails    []string `yaml:"fails"`
		Warns    []string `yaml:"warns"`
		Mentions []string `yaml:"mentions"`
		// NiceToHave is a further wish in words; niceToHave maps it to
		// phrases.
		NiceToHave string `yaml:"nice_to_have"`
		// Never says what no line may claim ("a line saying infinity
		// covers the target"); neverSays maps it to a check.
		Never string `yaml:"never"`
	} `yaml:"expect"`
}

// caseIDs maps each case's expected problems (in words) to check IDs.
// fails is the exact set of failing checks; warns must all be warnings;
// mentionsIn is the check whose message must contain every expected phrase
// and `mentions` word.
var caseIDs = map[string]struct {
	fails      []string
	warns      []string
	mentionsIn string
	// also are further phrases mentionsIn's message must hold.
	also []string
	// memTotal is RAM (bytes) where the case's numbers imply more than
	// the stock host's and the case records none.
	memTotal uint64
}{
	"conntrack-table-too-small": {fails: []string{"conntrack"}, mentionsIn: "conntrack"},
	// the DataNode's process is not named on this recorded host: fd.soft
	// warns (it cannot see the service's limits) instead of failing.
	"iotdb-role-map-count": {warns: []string{"iotdb.max_map_count", "fd.soft"}, mentionsIn: "iotdb.max_map_count"},
	// the stock login shell's soft 1024 is not the broker's (no process
	// named): fd.soft warns; the listener's backlog fails.
	"listener-backlog-below-somaxconn": {fails: []string{"accept.backlog"}, warns: []string{"fd.soft"}, mentionsIn: "accept.backlog"},
	// infinity resolves to PID 1's hard limit 65536: soft and hard both short.
	"service-limitnofile-infinity": {fails: []string{"fd.soft", "fd.hard"}, mentionsIn: "fd.soft"},
	// the host also has one source address and the default port range:
	// 1M outgoing connections fail on ports too.
	"hard-limit-without-cap-sys-resource": {fails: []string{"fd.soft", "fd.hard", "fd.raise", "ports.ephemeral"}, mentionsIn: "fd.raise"},
	"loadgen-one-source-ip-default-range": {fails: []string{"ports.ephemeral"}, mentionsIn: "ports.ephemeral"},
	"port-range-swallows-service-port":    {warns: []string{"ports.collision"}, mentionsIn: "ports.collision"},
	"service-under-systemd-keeps-1024":    {fails: []string{"fd.soft"}, mentionsIn: "fd.soft"},
	"tcp-mem-in-pages":                    {warns: []string{"mem.tcp_mem"}, mentionsIn: "mem.tcp_mem"},
	// emqx.service is inactive while a broker started from a shell holds
	// 1883: the verdict is on that process's nofile 1024, the fix a
	// restart through the unit.
	"port-owner-is-not-the-unit": {fails: []string{"fd.soft", "fd.hard"}, mentionsIn: "fd.soft"},
	// 2.0.10 reads dn_thrift_max_frame_size; the 1.x line is named as not
	// read (the case's nice_to_have), by the frame check and iotdb.ignored.
	"iotdb-ignored-legacy-key": {fails: []string{"iotdb.frame_size"}, warns: []string{"iotdb.ignored"}, mentionsIn: "iotdb.frame_size",
		also: []string{"thrift_max_frame_size=536870912", "is not read by iotdb 2.0.10 (it reads dn_thrift_max_frame_size)"},
		// the report's frame limit 67108864 is the 64 MiB cap of
		// min(64 MiB, heap / 64): a heap >= 4 GiB, RAM >= 10.7 GiB with
		// MEMORY_SIZE unset; the case records no RAM.
		memTotal: 16 << 30},
}

func message(c verdict.Check) string { return hosttest.Message(c) }

func idsWith(cs []verdict.Check, s verdict.Status) []string {
	var out []string
	for _, c := range cs {
		if c.Status == s {
			out = append(out, c.ID)
		}
	}
	sort.Strings(out)
	return out
}

func TestFieldCases(t *testing.T) {
	files, err := filepath.Glob("testdata/cases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in testdata/cases: %v", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			want, ok := caseIDs[name]
			if !ok {
				t.Fatalf("case %s has no check-ID mapping in caseIDs", name)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var cf caseFile
			dec := yaml.NewDecoder(bytes.NewReader(b))
			dec.KnownFields(true)
			if err := dec.Decode(&cf); err != nil {
				t.Fatal(err)
			}
			hostYAML, err := yaml.Marshal(&cf.Host)
			if err != nil {
				t.Fatal(err)
			}
			hf, err := facts.LoadHostYAML(path, bytes.NewReader(hostYAML))
			if err != nil {
				t.Fatal(err)
			}
			if want.memTotal != 0 {
				hf.MemTotal = want.memTotal
			}
			if cf.IoTDBHome != nil {
				if hf.IoTDB, err = facts.ReadIoTDBConfig(iotdbRelease(t, cf.IoTDBHome)); err != nil {
					t.Fatal(err)
				}
			}
			tgt := facts.Target{Sockets: cf.Sockets, Role: facts.Role(cf.Role), ConnRate: cf.ConnRate, Destinations: cf.Destinations}
			tgt.IoTDB.BatchPoints = cf.BatchPoints
			rep, err := Run(t.Context(), Options{Target: tgt, Facts: hf})
			if err != nil {
				t.Fatal(err)
			}
			dump := func() {
				for _, c := range rep.Checks {
					t.Logf("%-5s %-18s %s", c.Status, c.ID, c.Summary)
				}
			}
			if string(rep.Verdict) != cf.Expect.Verdict {
				dump()
				t.Fatalf("verdict %s, want %s", rep.Verdict, cf.Expect.Verdict)
			}
			wantFails := append([]string(nil), want.fails...)
			sort.Strings(wantFails)
			if got := idsWith(rep.Checks, verdict.Fail); strings.Join(got, ",") != strings.Join(wantFails, ",") {
				dump()
				t.Errorf("failing checks %v, want %v", got, wantFails)
			}
			warns := idsWith(rep.Checks, verdict.Warn)
			for _, w := range want.warns {
				if !slices.Contains(warns, w) {
					dump()
					t.Errorf("check %s is not a warning; warnings: %v", w, warns)
				}
			}
			var target *verdict.Check
			for i := range rep.Checks {
				if rep.Checks[i].ID == want.mentionsIn {
					target = &rep.Checks[i]
				}
			}
			if target == nil {
				t.Fatalf("no check %s", want.mentionsIn)
			}
			if cf.Expect.Never != "" {
				// the only "never" a case has: no check says infinity covers the target
				for _, c := range rep.Checks {
					if m := strings.ToLower(message(c)); strings.Contains(m, "infinity covers") || (strings.HasPrefix(c.ID, "fd.") && c.Status == verdict.Pass && strings.Contains(m, "infinity")) {
						t.Errorf("%s (never: %s): %s", c.ID, cf.Expect.Never, message(c))
					}
				}
			}
			msg := strings.ToLower(message(*target))
			phrases := append(append(append(append([]string(nil), cf.Expect.Fails...), cf.Expect.Warns...), cf.Expect.Mentions...), want.also...)
			for _, p := range phrases {
				if !strings.Contains(msg, strings.ToLower(p)) {
					t.Errorf("%s message lacks %q:\n%s", want.mentionsIn, p, message(*target))
				}
			}
		})
	}
}

// iotdbRelease writes a field case's iotdb_home into a directory: files
// as given, and a .jar as a zip holding the template its content names.
func iotdbRelease(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, ".jar") {
			_, tmpl, ok := strings.Cut(content, "(template: ")
			if !ok {
				t.Fatalf("iotdb_home %s: no (template: ...) in %q", p, content)
			}
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			w, err := zw.Create("iotdb-system.properties.template")
			if err == nil {
				_, err = w.Write([]byte(strings.TrimSuffix(tmpl, ")") + "\n"))
			}
			if err == nil {
				err = zw.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			content = buf.String()
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFieldCasesInSync makes sure every shared field case has a copy in
// testdata (the shared tree is next to the repository on the build host).
func TestFieldCasesInSync(t *testing.T) {
	testenv.CasesInSync(t, "preflight", true)
}
