package testenv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A run killed mid-test (a -timeout panic skips every cleanup) left
// fs.file-max changed and its record behind: the next GuardSysctls puts
// the recorded value back before it records its own, and the record is
// gone once the guarded test ends. (fs.file-max is moved by 1 and always
// restored.)
func TestGuardSysctlsRestoresWhatAKilledRunLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		need(t, "root", "run the tests as root (sudo ./scripts/test.sh)")
	}
	LockGlobalSysctls(t) // it changes fs.file-max before its guard does
	const key = "fs.file-max"
	orig := readSysctl(t, key)
	n, err := strconv.ParseUint(orig, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(sysctlPath(key), []byte(orig), 0o644) })
	saved := LeftSysctlsFile
	LeftSysctlsFile = filepath.Join(t.TempDir(), "left.json")
	t.Cleanup(func() { LeftSysctlsFile = saved })

	// The killed run: changed the key, its record left behind.
	b, _ := json.Marshal(map[string]string{key: orig})
	if err := os.WriteFile(LeftSysctlsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sysctlPath(key), []byte(strconv.FormatUint(n+1, 10)), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("next run", func(t *testing.T) {
		got := GuardSysctls(t, key)
		if got[key] != orig || readSysctl(t, key) != orig {
			t.Errorf("recorded %s, host has %s: want the killed run's %s restored first", got[key], readSysctl(t, key), orig)
		}
		if _, err := os.Stat(LeftSysctlsFile); err != nil {
			t.Errorf("no record while the guarded test runs: %v", err)
		}
	})
	if _, err := os.Stat(LeftSysctlsFile); !os.IsNotExist(err) {
		t.Errorf("the record outlived the guarded test: %v", err)
	}
}
