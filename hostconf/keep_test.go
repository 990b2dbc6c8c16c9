package hostconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/hostconf"
)

// TestKeepSettingsReadsTheSame: a unit's files kept with KeepSettings
// (what preflight --record writes) give the same LimitNOFILE= and
// TasksMax=, from the same FILE:LINE, and fail to load where the
// originals do, as the files themselves — for drawn files with
// continuations (comment lines inside), bare CR and NUL line ends, byte
// order marks and lines that stop systemd's parser — and hold none of the
// other assignments' values.
func TestKeepSettingsReadsTheSame(t *testing.T) {
	const unit = "hostprep-keep.service"
	keys := []string{"LimitNOFILE", "TasksMax"}
	rapid.Check(t, func(rt *rapid.T) {
		files := map[string]string{
			"lib/systemd/system/" + unit: genUnitFile(rt, "Service", "LimitNOFILE", "TasksMax", "Environment"),
		}
		for _, name := range rapid.SliceOfDistinct(rapid.SampledFrom([]string{"10-a.conf", "50-b.conf", "90-c.conf"}), rapid.ID).Draw(rt, "dropins") {
			files["etc/systemd/system/"+unit+".d/"+name] = genUnitFile(rt, "Service", "LimitNOFILE", "TasksMax", "Environment")
		}
		read := func(keep bool) string {
			root, err := os.MkdirTemp("", "keep")
			if err != nil {
				rt.Fatal(err)
			}
			defer os.RemoveAll(root)
			for p, b := range files {
				if keep {
					b = string(hostconf.KeepSettings([]byte(b), keys))
				}
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
				must(t, os.WriteFile(filepath.Join(root, p), []byte(b), 0o644))
			}
			n, read, err := hostconf.UnitNofile(root, unit)
			if err != nil {
				rt.Fatal(err)
			}
			tasks, _, err := hostconf.UnitTasksMax(root, unit, 30000)
			if err != nil {
				rt.Fatal(err)
			}
			if env, where, err := hostconf.LastSetting(root, read, "Service", "Environment"); keep && (env != "" || err != nil) {
				rt.Fatalf("the kept files still set Environment=%s at %s (%v)", env, where, err)
			}
			var broken []string
			for _, f := range read {
				// an assignment that is not UTF-8 is kept as "\xff": the
				// same line fails, the reason quotes what is kept
				where, _, _ := strings.Cut(f.Broken, ": the line")
				broken = append(broken, where)
			}
			return strings.Join([]string{n.String(), n.Where(), tasks.String(), tasks.Where(), strings.Join(broken, ";")}, " | ")
		}
		if a, b := read(false), read(true); a != b {
			rt.Fatalf("kept files read as %q, the files as %q", b, a)
		}
	})
}
