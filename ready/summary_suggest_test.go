package ready

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune"
)

// TestTuneSummarySuggestsRunnableCommands: the tune step's summary names
// the command that shows (dry run) or undoes (apply) the changes as it
// runs — the profile file's path, its --set, the --root — and its pronoun
// agrees with the count ("1 change ... shows it").
func TestTuneSummarySuggestsRunnableCommands(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "zero.yaml")
	if err := os.WriteFile(f, []byte("sysctl: {net.core.somaxconn: {value: \"4096\", mode: at-least}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := profiles.Load(f, []string{"net.core.somaxconn=4096"})
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img")
	if err := os.Mkdir(img, 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{DryRun: true, Tune: tune.Env{Root: img, Image: true, SkipPrivilegeCheck: true}}
	s := tuneStep(t.Context(), p, o)
	want := "would make 1 change (`hostprep tune plan --profile " + f + " --set net.core.somaxconn=4096 --root " + img + "` shows it)"
	if !strings.Contains(s.Summary, want) {
		t.Errorf("dry-run summary %q; want %q", s.Summary, want)
	}
	o.DryRun = false
	s = tuneStep(t.Context(), p, o)
	want = "1 change applied (`hostprep tune rollback --root " + img + "` undoes it)"
	if !strings.Contains(s.Summary, want) {
		t.Errorf("apply summary %q; want %q", s.Summary, want)
	}
}
