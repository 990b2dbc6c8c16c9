package hostconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// TestLongLineOracle: a line of 1 MiB or more (systemd's LONG_LINE_MAX)
// makes config_parse fail the file there (read_line: ENOBUFS, "Line too
// long"): a unit file with one does not load; a drop-in's lines before it
// count, those after it (and a continuation open before it) do not; a
// line one byte shorter is read like any other. hostconf.UnitNofile read such
// a line like any other. Checked against Debian's systemd 252 with
// `systemd --test`, run as nobody in the sandbox.
func TestLongLineOracle(t *testing.T) {
	sb := testenv.NewSystemdBox(t, false)
	box, dir, etc := sb.Sandbox, sb.Dir, sb.EtcDir
	const mib = 1 << 20
	long, short := "#"+strings.Repeat("x", mib-1), "#"+strings.Repeat("x", mib-2)
	longValue := "Description=" + strings.Repeat("x", mib)
	unitHead := "[Service]\nExecStart=/bin/true\nLimitNOFILE=1111\n"
	for _, c := range []struct {
		name, unit, dropin string
		want               string // "" = the unit does not load
	}{
		{"unit, long comment", unitHead + long + "\nLimitNOFILE=2222\n", "", ""},
		{"unit, long value", "[Unit]\n" + longValue + "\n" + unitHead, "", ""},
		{"unit, long last line without newline", unitHead + long, "", ""},
		{"unit, one byte shorter", unitHead + short + "\nLimitNOFILE=2222\n", "", "2222:2222"},
		{"drop-in, long line", unitHead, "[Service]\nLimitNOFILE=3333\n" + long + "\nLimitNOFILE=4444\n", "3333:3333"},
		{"drop-in, continuation open before it", unitHead, "[Service]\nLimitNOFILE=3333\nLimitNOFILE=\\\n" + long + "\n", "3333:3333"},
		{"drop-in, one byte shorter", unitHead, "[Service]\nLimitNOFILE=3333\n" + short + "\nLimitNOFILE=4444\n", "4444:4444"},
	} {
		t.Run(c.name, func(t *testing.T) {
			must(t, os.RemoveAll(filepath.Join(etc, "system")))
			must(t, os.MkdirAll(filepath.Join(etc, "system", unitOracleName+".d"), 0o755))
			must(t, os.WriteFile(filepath.Join(etc, "system", unitOracleName), []byte(c.unit), 0o644))
			if c.dropin != "" {
				must(t, os.WriteFile(filepath.Join(etc, "system", unitOracleName+".d", "50-x.conf"), []byte(c.dropin), 0o644))
			}
			got, read, err := hostconf.UnitNofile(dir, unitOracleName)
			must(t, err)
			want, _ := unitOracle(t, box)
			if want != c.want {
				t.Fatalf("systemd --test gives %q, the case expects %q", want, c.want)
			}
			if broken := read[0].Broken; (broken != "") != (want == "") {
				t.Fatalf("systemd --test loads the unit: %v; the simulation says it fails to: %q", want != "", broken)
			}
			if want != "" && got.String() != want {
				t.Errorf("systemd --test gives LimitNOFILE %s, simulation %s at %s", want, got.String(), got.Where())
			}
		})
	}
}

// A recording (hostconf.KeepSettings) keeps a line too long as a comment of
// that length: the recorded unit fails to load at the same line, and a
// drop-in's lines after it stay unread.
func TestKeepSettingsKeepsLongLine(t *testing.T) {
	long := "ExecStart=/bin/true --token " + strings.Repeat("s", 1<<20)
	for _, c := range []struct{ unit, dropin, want string }{
		{"[Service]\nLimitNOFILE=1111\n" + long + "\nLimitNOFILE=2222\n", "", "a.service:3: the line is 1048576 bytes or longer"},
		{"[Service]\nLimitNOFILE=1111\n", "[Service]\nLimitNOFILE=3333\n" + long + "\nLimitNOFILE=4444\n", "3333:3333 "},
	} {
		files := map[string]string{"/etc/systemd/system/a.service": c.unit}
		if c.dropin != "" {
			files["/etc/systemd/system/a.service.d/50-x.conf"] = c.dropin
		}
		kept := map[string]string{}
		for p, b := range files {
			kept[p] = string(hostconf.KeepSettings([]byte(b), []string{"LimitNOFILE"}))
			if strings.Contains(kept[p], "token") {
				t.Errorf("%s kept the long line's text", p)
			}
		}
		var got [2]string
		for i, tree := range []map[string]string{files, kept} {
			n, read, err := hostconf.UnitNofile(testenv.TempTree(t, tree), "a.service")
			must(t, err)
			got[i] = n.String() + " " + read[0].Broken
		}
		if got[0] != got[1] || !strings.Contains(got[0], c.want) {
			t.Errorf("files give %q, the kept files %q, want %q", got[0], got[1], c.want)
		}
	}
}
