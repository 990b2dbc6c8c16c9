package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// A refused IoTDB login names the settings of the command that ran:
// `ready` said "check --user and --password-file", flags it does not
// have (its are --iotdb-user and --iotdb-password-file); a user the
// profile gave is named by its key. `probe iotdb` keeps --user and
// --password-file. Against the real IoTDB with a wrong password.
func TestIoTDBRefusedLoginNamesTheCallersSettings(t *testing.T) {
	addr := testenv.IoTDB(t)
	host, port, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	write := func(name, user string) string {
		p := filepath.Join(dir, name)
		doc := fmt.Sprintf("probe: {iotdb: {host: %s, port: %s, steps: [1], step_duration: 1s%s}}\n", host, port, user)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	io, withUser := write("io.yaml", ""), write("user.yaml", ", user: root")
	env := []string{"HOSTPREP_IOTDB_PASSWORD=wrong-" + t.Name()}
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"ready", "--profile", io, "--no-tune", "-o", "json"}, []string{"--iotdb-user", "--iotdb-password-file or $HOSTPREP_IOTDB_PASSWORD"}, []string{"--user", "--password-file"}},
		{[]string{"ready", "--profile", io, "--no-tune", "--iotdb-user", "root"}, []string{"check --iotdb-user and the password (--iotdb-password-file or $HOSTPREP_IOTDB_PASSWORD)"}, []string{"--user", "--password-file"}},
		{[]string{"ready", "--profile", withUser, "--no-tune"}, []string{"check probe.iotdb.user (or --iotdb-user) and the password (--iotdb-password-file"}, []string{"--user", "--password-file"}},
		{[]string{"probe", "iotdb", "--host", host, "--port", port, "--steps", "1", "--step-duration", "1s"}, []string{"check --user and the password (--password-file or $HOSTPREP_IOTDB_PASSWORD)"}, nil},
	} {
		stdout, stderr, code := testenv.Run(t, env, c.args...)
		out := stdout + stderr
		if code != 3 || !strings.Contains(out, "refused the login") {
			t.Errorf("%v: exit %d, want 3 with a refused login\n%s", c.args, code, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: want %q in\n%s", c.args, w, out)
			}
		}
		own := strings.NewReplacer("--iotdb-user", "", "--iotdb-password-file", "").Replace(out)
		for _, n := range c.not {
			if strings.Contains(own, n) {
				t.Errorf("%v: names %s, a flag it does not have:\n%s", c.args, n, out)
			}
		}
	}
}
