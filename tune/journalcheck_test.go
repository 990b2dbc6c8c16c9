package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/tune/journal"
)

// TestCraftedJournalIsDamagedNotAPanic: a journal whose fields are
// well-formed JSON but invalid (a short set_sha256, a nil entry, a
// relative path) is "journal damaged", exit 3, for status, verify,
// verify --boot, plan, apply and rollback, never a panic (status and
// verify index the set_sha256 of every owned file).
func TestCraftedJournalIsDamagedNotAPanic(t *testing.T) {
	h := newHost(t, nil)
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(h.env.stateFile())
	must(t, err)
	file := filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf")
	crafts := map[string]func(st *journal.State){
		"short sha":     func(st *journal.State) { st.Files[file].SetSHA256 = "00" },
		"empty sha":     func(st *journal.State) { st.Files[file].SetSHA256 = "" },
		"non-hex sha":   func(st *journal.State) { st.Files[file].SetSHA256 = strings.Repeat("zz", 32) },
		"nil file":      func(st *journal.State) { st.Files[file] = nil },
		"relative path": func(st *journal.State) { st.Files["etc/x.conf"] = st.Files[file] },
		"nil key":       func(st *journal.State) { st.Keys["fs.nr_open"] = nil },
		"persist name":  func(st *journal.State) { st.PersistName = "../../../etc/cron.d/x.conf" },
	}
	for name, craft := range crafts {
		t.Run(name, func(t *testing.T) {
			st, err := journal.Load(h.env.stateFile())
			must(t, err)
			craft(st)
			must(t, journal.Save(h.env.stateFile(), st))
			defer func() { must(t, os.WriteFile(h.env.stateFile(), good, 0o600)) }()
			_, err = StatusOf(h.env)
			wantCode(t, err, exitcode.Environment, "damaged")
			_, _, err = Verify(nil, h.env)
			wantCode(t, err, exitcode.Environment, "damaged")
			_, _, err = Verify(sysTune(), h.env)
			wantCode(t, err, exitcode.Environment, "damaged")
			_, err = VerifyBoot(h.env)
			wantCode(t, err, exitcode.Environment, "damaged")
			_, err = Rollback(t.Context(), h.env)
			wantCode(t, err, exitcode.Environment, "damaged")
		})
	}
}
