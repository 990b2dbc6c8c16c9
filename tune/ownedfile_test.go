package tune

import (
	"slices"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/journal"
)

// TestFileLayersApplyAsUnits guards that every owned file a plan writes
// belongs to the file layer that planned it, and that apply runs each
// file layer as a layer of its own, in plan order: sysctl.d,
// modules-load.d, limits.d, verify-at-boot, systemd.
func TestFileLayersApplyAsUnits(t *testing.T) {
	_, env := newImage(t, map[string]string{"/etc/systemd/system.conf": "[Manager]\n"})
	p := sysTune()
	p.Sysctl["net.netfilter.nf_conntrack_max"] = profiles.Sysctl{Value: "262144", Mode: profiles.AtLeast}
	p.Systemd = profiles.Systemd{DefaultLimitNOFILE: &profiles.Limit{Soft: 1024, Hard: 1048576}, Services: []string{"emqx"}}
	v := &journal.VerifyUnit{Bin: DefaultBin, TextfileDir: DefaultTextfileDir, Every: "1h"}
	pl, err := PlanFor(p, Options{Env: env, VerifyAtBoot: v})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range pl.fileLayers() {
		names = append(names, l.name)
		for _, f := range l.steps {
			if f.layer != l.name {
				t.Errorf("%s of layer %q applied with layer %q", f.path, f.layer, l.name)
			}
		}
	}
	want := []string{layerSysctlD, layerModules, layerLimitsD, layerVerifyUnit, layerSystemd}
	if !slices.Equal(names, want) {
		t.Fatalf("file layers = %q, want %q", names, want)
	}
	for _, f := range pl.files {
		if f.layer == "" {
			t.Errorf("%s has no layer", f.path)
		}
	}
}
