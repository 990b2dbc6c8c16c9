package tune

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	prom "github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/tune/files"
)

// The results of one `tune verify --textfile DIR` run (what
// hostprep-verify.service runs, layer_verifyunit.go): a node_exporter
// textfile, one log line per drifted item (the unit's stdout goes to the
// journal) and the last result next to hostprep's journal, which `tune
// status` shows.

// TextfileName is the file a verify run writes in the textfile directory.
const TextfileName = "hostprep_tune.prom"

// lastVerifyName is the last verify run's result, next to the journal.
const lastVerifyName = "last-verify.json"

// DriftRecord is one item a verify run compared.
type DriftRecord struct {
	// Key is the sysctl key, owned file or "pid N".
	Key string `json:"key"`
	// Wanted is what hostprep applied (with its mode when not exact);
	// Live the value now.
	Wanted string `json:"wanted"`
	Live   string `json:"live"`
	Drift  bool   `json:"drift"`
	// File says Key is an owned file's path (its values are SHA-256
	// prefixes).
	File bool `json:"file,omitempty"`
	// Writer names who set Live instead, where hostprep knows it: the
	// file:line that sets the key after hostprep's own at boot (a later
	// sysctl.d file, /etc/sysctl.conf, ufw's IPT_SYSCTL file when the boot
	// model reads it); "" when not known.
	Writer string `json:"writer,omitempty"`
}

// VerifyRecord is the result of one verify run, as `tune status` shows it.
type VerifyRecord struct {
	At    time.Time     `json:"at"`
	Drift int           `json:"drift"`
	Items []DriftRecord `json:"items"`
	// Interrupted is Status.Interrupted of that run.
	Interrupted string `json:"interrupted,omitempty"`
	// Textfile is the node_exporter file written.
	Textfile string `json:"textfile,omitempty"`
}

// verifyRecord builds the record of status s, taken at.
func verifyRecord(env Env, s *Status, at time.Time) VerifyRecord {
	r := VerifyRecord{At: at.UTC(), Items: []DriftRecord{}, Interrupted: s.Interrupted}
	for _, it := range s.Items {
		want := it.Set
		if it.Mode != "" && it.Mode != "exact" {
			want += " (" + it.Mode + ")"
		}
		d := DriftRecord{Key: Change{Key: it.Key, File: it.File, PID: it.PID}.Target(), Wanted: want, Live: it.Live, Drift: !it.OK && it.Drift != notReached, File: it.File != ""}
		if d.Drift {
			r.Drift++
			d.Writer = writerOf(env, it)
		}
		r.Items = append(r.Items, d)
	}
	return r
}

// writerOf names who set it's live value instead of hostprep, where
// hostprep can tell: the file:line the boot model says sets the key after
// hostprep's own file (it also runs at every `sysctl --system` and may
// have run late), behind the program that applies it when that is not
// systemd-sysctl (hostconf.Writers: "ufw /etc/ufw/sysctl.conf:1"); ""
// when no file but hostprep's sets it (a program wrote it at run time:
// not known).
func writerOf(env Env, it ItemStatus) string {
	if it.Key == "" || it.Boot == nil || it.Boot.File == "" || it.Boot.File == env.sysctlConf() {
		return ""
	}
	at := fmt.Sprintf("%s:%d", it.Boot.File, it.Boot.Line)
	if it.Boot.Writer != "" && it.Boot.Writer != "systemd-sysctl" {
		return it.Boot.Writer + " " + at // the program (hostconf.Writers): "ufw /etc/ufw/sysctl.conf:1"
	}
	return at
}

// WriteVerifyResults records s, the status a verify run found: it writes
// DIR/hostprep_tune.prom atomically (hostprep_tune_drift{key, wanted,
// live, writer} 0 or 1 per item, hostprep_tune_drift_items,
// hostprep_tune_interrupted, hostprep_tune_verify_timestamp_seconds),
// prints one line per drifted item on w and saves the record next to the
// journal for `tune status`. Errors: exitcode.BadInput when dir is not an
// existing directory (node_exporter's textfile directory is created by its
// package); exitcode.Environment when a file cannot be written.
func WriteVerifyResults(env Env, s *Status, dir string, w io.Writer) error {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return exitcode.BadInputf("--textfile %s: not an existing directory; give node_exporter's textfile directory (--collector.textfile.directory; %s on Debian)", dir, DefaultTextfileDir)
	}
	rec := verifyRecord(env, s, time.Now())
	rec.Textfile = filepath.Join(dir, TextfileName)
	var gs []prom.Gauge
	for _, d := range rec.Items {
		v := 0.0
		if d.Drift {
			v = 1
		}
		gs = append(gs, prom.Gauge{Name: "hostprep_tune_drift", Help: "1 when an item hostprep applied no longer has the value it set (labels: wanted, live, writer where known), else 0.",
			Labels: map[string]string{"key": d.Key, "wanted": d.Wanted, "live": d.Live, "writer": d.Writer}, Value: v})
	}
	interrupted := 0.0
	if rec.Interrupted != "" {
		interrupted = 1
	}
	gs = append(gs,
		prom.Gauge{Name: "hostprep_tune_drift_items", Help: "Items that drifted from what hostprep applied.", Value: float64(rec.Drift)},
		prom.Gauge{Name: "hostprep_tune_interrupted", Help: "1 when the last apply or rollback was killed part way.", Value: interrupted},
		prom.Gauge{Name: "hostprep_tune_verify_timestamp_seconds", Help: "When hostprep tune verify last ran (Unix time).", Value: float64(rec.At.Unix())})
	var b bytes.Buffer
	check := prom.Check{ID: "drift", Status: prom.Pass}
	if rec.Drift > 0 || rec.Interrupted != "" {
		check.Status = prom.Fail
	}
	if err := prom.WriteProm(&b, "hostprep_tune", []prom.Check{check}, gs); err != nil {
		return exitcode.Environmentf("tune verify: %w", err)
	}
	if err := files.WriteAtomic(rec.Textfile, b.Bytes(), 0o644); err != nil {
		return exitcode.Environmentf("tune verify: writing %s: %w", rec.Textfile, err)
	}
	for _, d := range rec.Items {
		if !d.Drift {
			continue
		}
		writer := "writer not known (no file hostprep reads sets it after hostprep's own: a program changed it at run time)"
		switch {
		case d.Writer != "":
			writer = "written by " + d.Writer
		case d.File:
			writer = "the file was edited or replaced since hostprep wrote it"
		}
		fmt.Fprintf(w, "DRIFT %s: wanted %s, live %s; %s; %s sets it again\n", d.Key, d.Wanted, d.Live, writer, env.suggest("apply", driftProfile(s)...))
	}
	if rec.Interrupted != "" {
		fmt.Fprintf(w, "INTERRUPTED: %s\n", rec.Interrupted)
	}
	fmt.Fprintf(w, "hostprep tune verify: %d of %s drifted; wrote %s\n", rec.Drift, plural.N(len(rec.Items), "item"), rec.Textfile)
	if !s.Applied {
		return nil // nothing applied: no journal directory to keep a record in
	}
	j, err := json.MarshalIndent(rec, "", "  ")
	if err == nil {
		err = files.WriteAtomic(filepath.Join(filepath.Dir(env.stateFile()), lastVerifyName), append(j, '\n'), 0o644)
	}
	if err != nil {
		return exitcode.Environmentf("tune verify: keeping the result for tune status: %w", err)
	}
	return nil
}

// lastVerify reads the last verify run's record (nil when there is none
// or it cannot be read).
func lastVerify(env Env) *VerifyRecord {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(env.stateFile()), lastVerifyName))
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return nil
	}
	var r VerifyRecord
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}

// writeLastVerify prints the last verify run's result, if any.
func (s *Status) writeLastVerify(w io.Writer) {
	r := s.LastVerify
	if r == nil {
		return
	}
	fmt.Fprintf(w, "last verify (hostprep-verify.service) at %s: %d of %s drifted", r.At.Format("2006-01-02 15:04:05Z"), r.Drift, plural.N(len(r.Items), "item"))
	for _, d := range r.Items {
		if d.Drift {
			fmt.Fprintf(w, "; %s wanted %s, live %s", d.Key, d.Wanted, d.Live)
			if d.Writer != "" {
				fmt.Fprintf(w, " (written by %s)", d.Writer)
			}
		}
	}
	fmt.Fprintln(w)
}
