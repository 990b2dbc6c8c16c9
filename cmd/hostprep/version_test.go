package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

func TestVersionFlag(t *testing.T) {
	stdout, _, code := testenv.Run(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "hostprep version ") {
		t.Errorf("--version: exit %d, stdout %q", code, stdout)
	}
}

// --version follows -o json like every other answer.
func TestVersionJSON(t *testing.T) {
	stdout, _, code := testenv.Run(t, nil, "-o", "json", "--version")
	var obj struct{ Version string }
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil || code != 0 || obj.Version == "" {
		t.Errorf("hostprep -o json --version: exit %d, %q (%v)", code, stdout, err)
	}
}
