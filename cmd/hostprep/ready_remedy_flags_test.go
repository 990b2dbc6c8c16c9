package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestReadyTextsNameFlagsThatExist: a remedy or summary in ready's output
// that tells the user to pass --FLAG must name a flag of the command it
// shows (hostprep preflight --pid PID, hostprep tune apply --service
// UNIT) or, shown with no command, one of ready's own. ready has no --pid,
// --service, --port or --iotdb-home; a remedy that said "pass --pid" under
// ready could not be followed. Checked on the broker and iotdb roles of a
// dry run with no tuning and no probe, whose preflight warns and skips on
// any host (no process is named for the target).
func TestReadyTextsNameFlagsThatExist(t *testing.T) {
	root := newRootCmd()
	flagsOf := func(path string) map[string]bool {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil || c.CommandPath() != "hostprep "+path {
			t.Fatalf("no command %q: %v", path, err)
		}
		names := map[string]bool{}
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
		}
		return names
	}
	command := regexp.MustCompile(`hostprep (tune apply|tune plan|tune verify|tune rollback|preflight|probe mqtt|probe iotdb|ready)\b|\b(prlimit|docker run|ulimit|systemctl|sysctl|mosquitto)\b`)
	flag := regexp.MustCompile(`(?:^|[\s(,])(--[a-z][a-z-]+)`)
	ready := flagsOf("ready")
	for _, prof := range []string{
		"preflight: {sockets: 5000, role: broker}\n",
		"preflight: {sockets: 500, role: iotdb}\n",
	} {
		path := testenv.TempTree(t, map[string]string{"p.yaml": "name: p\n" + prof}) + "/p.yaml"
		out, stderr, code := testenv.Run(t, nil, "ready", "--profile", path, "--no-tune", "--dry-run", "-o", "json")
		if code > 1 {
			t.Fatalf("ready %s: exit %d: %s", prof, code, stderr)
		}
		var res struct {
			Steps []struct {
				Name   string
				Checks []struct{ ID, Summary, Remedy string }
			}
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("ready -o json: %v\n%s", err, out)
		}
		seen := 0
		for _, s := range res.Steps {
			for _, c := range s.Checks {
				for _, text := range []string{c.Summary, c.Remedy} {
					for _, m := range flag.FindAllStringSubmatchIndex(text, -1) {
						name, at := text[m[2]:m[3]], m[2]
						clause := text[:at]
						if i := strings.LastIndexAny(clause, ";:"); i >= 0 {
							clause = clause[i+1:]
						}
						owner := ready
						if cm := command.FindAllStringSubmatch(clause, -1); len(cm) > 0 {
							last := cm[len(cm)-1]
							if last[1] == "" {
								continue // another program's flag (prlimit --pid, docker run --ulimit)
							}
							owner = flagsOf(last[1])
						}
						seen++
						if !owner[strings.TrimPrefix(name, "--")] {
							t.Errorf("%s %s: %q names %s, which the command it shows does not take", s.Name, c.ID, text, name)
						}
					}
				}
			}
		}
		if seen == 0 {
			t.Errorf("profile %q: no check named a flag; the test checked nothing", prof)
		}
	}
}
