package profiles

import (
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	p, err := Parse("w.yaml", []byte("sysctl:\n  net.ipv4.ip_local_port_range: \"1024 65534\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "w.yaml:2:33:") || !strings.Contains(w[0], "parity") || !strings.Contains(w[0], `"1024 65535"`) {
		t.Errorf("warnings %q", w)
	}
}

// TestWarnLowNofile: a nofile below the usual 1024 (--set
// limits.nofile.soft=5) lowers the limit and is warned about, wherever it
// is set.
func TestWarnLowNofile(t *testing.T) {
	p, err := Load("sys-tune", []string{"limits.nofile.soft=5"})
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings(), "\n")
	for _, want := range []string{`--set "limits.nofile.soft=5": limits.nofile.soft 5: lower than the usual default 1024; tune never lowers a nofile limit`} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q\n  lack %q", w, want)
		}
	}
	p, err = Parse("low.yaml", []byte("systemd:\n  default_limit_nofile: {soft: 512, hard: 4096}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "low.yaml:2:32: systemd.default_limit_nofile.soft 512: lower than the usual default 1024") {
		t.Errorf("warnings %q", w)
	}
	for _, name := range BuiltinNames() {
		b, err := Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := b.Warnings(); len(w) > 0 {
			t.Errorf("built-in %s warns: %q", name, w)
		}
	}
}

// TestWarnNofileAboveDefaultNrOpen: a nofile 2097152 with no fs.nr_open,
// which tune plan refuses on a host with the default nr_open 1048576, is
// warned about by validate, saying what to add.
func TestWarnNofileAboveDefaultNrOpen(t *testing.T) {
	p, err := Parse("nr.yaml", []byte("limits:\n  nofile: {soft: 2097152, hard: 2097152}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "nr.yaml:2:33: limits.nofile.hard 2097152: the profile sets no fs.nr_open; hosts with the default 1048576 will refuse this: add fs.nr_open at-least 2097152") {
		t.Errorf("warnings %q", w)
	}
	// The largest hard limit is named; at or below 1048576, or with
	// fs.nr_open in the profile, there is nothing to warn about.
	p, _ = Parse("nr.yaml", []byte("limits:\n  nofile: {soft: 1024, hard: 1048577}\nsystemd:\n  services: [emqx]\n  limit_nofile: {soft: 1024, hard: 4000000}\n"))
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "systemd.limit_nofile.hard 4000000") || !strings.Contains(w[0], "at-least 4000000") {
		t.Errorf("warnings %q", w)
	}
	for _, y := range []string{
		"limits:\n  nofile: {soft: 1048576, hard: 1048576}\n",
		"sysctl:\n  fs.nr_open: {value: \"2097152\", mode: at-least}\nlimits:\n  nofile: {soft: 2097152, hard: 2097152}\n",
	} {
		p, err := Parse("ok.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		if w := p.Warnings(); len(w) != 0 {
			t.Errorf("%q warns %q", y, w)
		}
	}
}
