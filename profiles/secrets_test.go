package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadErrorsNeverEchoFileContent: a file that is not a profile (an
// .env file, a shadow or passwd line, a multi-line text) given as
// --profile or through include: is reported by file:line:col and the kind
// of problem, never by its content. A known key's scalar value may be
// echoed, cut short.
func TestLoadErrorsNeverEchoFileContent(t *testing.T) {
	const secret = "SECRETKEY123"
	cases := map[string]string{
		"env line":          "api_key=" + secret + "\n",
		"shadow line":       "root:" + secret + ":20228:0:99999:7::\n",
		"passwd lines":      "root:x:0:0:" + secret + ":/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		"key: value":        "password: " + secret + "\n",
		"list item":         "- " + secret + "\n",
		"known key list":    "description: [" + secret + "]\n",
		"sysctl bad key":    "sysctl:\n  \"k=" + secret + "\": 1\n  \"k=" + secret + "\": 2\n",
		"sysctl bad field":  "sysctl:\n  net.core.somaxconn: {value: \"1\", " + secret + "=x: 1}\n",
		"unknown dup field": "x y " + secret + ": 1\nx y " + secret + ": 2\n",
	}
	dir := t.TempDir()
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".env")
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			inc := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+"-inc.yaml")
			if err := os.WriteFile(inc, []byte("include: ["+file+"]\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, ref := range []string{file, inc} {
				_, err := Load(ref, nil)
				if err == nil {
					t.Fatalf("Load(%s) accepted a non-profile", ref)
				}
				msg := err.Error()
				if strings.Contains(msg, secret) {
					t.Errorf("Load(%s) error echoes the file's content: %s", ref, msg)
				}
				if !strings.Contains(msg, file+":") {
					t.Errorf("Load(%s) error does not name %s:line:col: %s", ref, file, msg)
				}
			}
		})
	}
}

// TestLoadErrorsClipKnownValues: a wrong scalar value of a known key is
// echoed, cut to a few dozen characters and one line.
func TestLoadErrorsClipKnownValues(t *testing.T) {
	long := strings.Repeat("x", 500)
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte("preflight:\n  sockets: "+long+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file, nil)
	if err == nil {
		t.Fatal("accepted sockets: xxx…")
	}
	if msg := err.Error(); strings.Contains(msg, long[:maxEcho+1]) || !strings.Contains(msg, long[:maxEcho]+"…") {
		t.Errorf("want the value cut to %d characters: %s", maxEcho, msg)
	}
}
