package redact

import (
	"strings"
	"testing"
)

func TestURLHidesThePassword(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://alice:S3cr3t@127.0.0.1:1883": "tcp://xxxxx@127.0.0.1:1883",
		"tcp://alice@127.0.0.1:1883":        "tcp://xxxxx@127.0.0.1:1883",
		"tcp://a:S3cr3t w@h:1883":           "tcp://xxxxx@h:1883", // does not parse: a space
		"tcp://a:p%zz@h:1883":               "tcp://xxxxx@h:1883", // does not parse: bad escape
		"a:S3cr3t@h":                        "xxxxx@h",
		"tcp://127.0.0.1:1883":              "tcp://127.0.0.1:1883",
	} {
		got := URL(in)
		if got != want || strings.Contains(got, "S3cr3t") {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
