// Package report joins the results of `hostprep ready --output json` from
// many hosts into one fleet table (host, verdict, failing checks, measured
// capacity, probe p95/loss), as text, JSON, or a self-contained HTML page
// with per-host charts; and the shards of one fleet MQTT run (`hostprep
// probe mqtt --shard K/N --output json`) into one result with exact
// merged percentiles and one fleet verdict (FleetRun).
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/ready/outcome"
)

// Row is one host of the fleet table. A number that was not measured (the
// step did not run, or had no such figure) is nil, and shown as "-".
type Row struct {
	Host    string          `json:"host"`
	Verdict outcome.Verdict `json:"verdict"`
	Profile string          `json:"profile"`
	Changed bool            `json:"changed"`
	// Failing are the failed check IDs ("preflight/fd.hard"), or a step
	// name when the step failed without a check (could not run).
	Failing []string `json:"failing"`
	// Warnings are the warned check IDs.
	Warnings []string `json:"warnings,omitempty"`
	// CapacitySockets is preflight's measured/estimated capacity,
	// connections; TargetSockets the target it was checked against.
	CapacitySockets *float64 `json:"capacity_sockets"`
	TargetSockets   *float64 `json:"target_sockets"`
	// MQTT probe: PUBLISH->PUBACK p95 and end-to-end p95 in ms, loss as a
	// fraction 0..1.
	MQTTAckP95MS *float64 `json:"mqtt_ack_p95_ms"`
	MQTTE2EP95MS *float64 `json:"mqtt_e2e_p95_ms"`
	MQTTLoss     *float64 `json:"mqtt_loss"`
	// IoTDB probe: p95 response time (ms) and TPS at the target step,
	// highest error rate (0..1) of any step.
	IoTDBP95MS     *float64 `json:"iotdb_p95_ms"`
	IoTDBTPS       *float64 `json:"iotdb_tps"`
	IoTDBErrorRate *float64 `json:"iotdb_error_rate"`
	// Source is the file the row came from.
	Source string `json:"source"`

	run *outcome.Result
}

// Fleet is the merged table, not-ready hosts first, then dry runs (not
// checked), then hosts with warnings, then ready ones; by host name
// within each group.
type Fleet struct {
	Hosts     int            `json:"hosts"`
	ByVerdict map[string]int `json:"by_verdict"`
	Rows      []Row          `json:"rows"`
	// Notes are things the merge decided (a host given twice).
	Notes []string `json:"notes,omitempty"`
	// Run is the fleet MQTT run the shard files make, nil when none was
	// given.
	Run *FleetRun `json:"fleet_run,omitempty"`
}

// Failed reports whether a fleet run was given and its verdict is fail
// (report merge then exits 1). Host rows never fail the report.
func (f *Fleet) Failed() bool { return f.Run != nil && f.Run.Verdict == verdict.Fail }

// Load reads one result file. An unreadable file, invalid JSON, or a JSON
// document that is not a ready result (no host or verdict) is a
// exitcode.BadInput error naming the file.
func Load(path string) (*outcome.Result, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return loadReady(path, b)
}

func loadReady(path string, b []byte) (*outcome.Result, error) {
	var r outcome.Result
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, notAResult(path, b, err)
	}
	if r.Host == "" || r.Verdict == "" {
		return nil, exitcode.BadInputf("report merge: %s: no \"host\" or \"verdict\" field; want the output of `hostprep ready --output json`, or of `hostprep probe mqtt --shard K/N --output json` for a fleet run", path)
	}
	switch r.Verdict {
	case outcome.Ready, outcome.ReadyWithWarnings, outcome.NotReady, outcome.DryRun:
	default:
		return nil, exitcode.BadInputf("report merge: %s: verdict %q: want READY, READY WITH WARNINGS, NOT READY or DRY RUN", path, r.Verdict)
	}
	return &r, nil
}

// notAResult is the BadInput error for a file that does not decode as
// one result object (err): a probe result cut short or edited (it has a
// "run_id" but no longer parses), a JSON array (several results in one
// file), or anything else, each said as what it is.
func notAResult(path string, b []byte, err error) error {
	trimmed := bytes.TrimSpace(b)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		return exitcode.BadInputf("report merge: %s: a JSON array, not a result file: pass each result as the file that wrote it (one `hostprep ready --output json` or `hostprep probe mqtt --shard K/N --output json` object per file)", path)
	case bytes.Contains(b, []byte(`"run_id"`)):
		return exitcode.BadInputf("report merge: %s: not a whole probe result (%v): it was cut short or edited; merge the files `hostprep probe mqtt --shard K/N --output json` wrote, unedited", path, err)
	}
	return exitcode.BadInputf("report merge: %s: not JSON of a result file (%v): want the output of `hostprep ready --output json` or of `hostprep probe mqtt --shard K/N --output json`", path, err)
}

// Merge loads every file and builds the fleet table. When the same host
// appears in several files a real run beats a dry run, else the most
// recent run (by "started") wins, and a note says so (laterRun). Shard results of `hostprep probe mqtt --shard` are merged
// into Fleet.Run (see mergeShards for their errors). No files is a
// BadInput error.
func Merge(paths []string) (*Fleet, error) {
	if len(paths) == 0 {
		return nil, exitcode.BadInputf("report merge: no files given; pass the JSON files of `hostprep ready --output json` or `hostprep probe mqtt --shard K/N --output json`, e.g. reports/*.json")
	}
	byHost := map[string]Row{}
	var notes []string
	var shards []shardFile
	for _, p := range paths {
		b, err := readFile(p)
		if err != nil {
			return nil, err
		}
		sf, isShard, err := loadShard(p, b)
		if err != nil {
			return nil, err
		}
		if isShard {
			shards = append(shards, sf)
			continue
		}
		if err := notIoTDBProbe(p, b); err != nil {
			return nil, err
		}
		r, err := loadReady(p, b)
		if err != nil {
			return nil, err
		}
		row := rowOf(r, p)
		if old, ok := byHost[r.Host]; ok {
			row = laterRun(old, row, &notes)
		}
		byHost[r.Host] = row
	}
	f := &Fleet{ByVerdict: map[string]int{}, Notes: notes}
	if len(shards) > 0 {
		run, err := mergeShards(shards)
		if err != nil {
			return nil, err
		}
		f.Run = run
	}
	for _, row := range byHost {
		f.Rows = append(f.Rows, row)
		f.ByVerdict[string(row.Verdict)]++
	}
	f.Hosts = len(f.Rows)
	sort.Slice(f.Rows, func(i, j int) bool {
		a, b := f.Rows[i], f.Rows[j]
		if rank(a.Verdict) != rank(b.Verdict) {
			return rank(a.Verdict) < rank(b.Verdict)
		}
		return a.Host < b.Host
	})
	return f, nil
}

// notIoTDBProbe refuses the JSON of `hostprep probe iotdb` (its
// "scenario", "knee" and "steps" fields) with why: one without --shard
// is not a ready result (report merge shows a host's IoTDB probe from its
// ready result); shard results are not merged (each shard's steps start when
// that shard reaches them, not on a common schedule, so there is no
// common window to put the fleet's operations over, and summing the
// shards' TPS, each over its own step, is no fleet rate). A BadInput
// error naming the file; nil for anything else.
func notIoTDBProbe(path string, b []byte) error {
	var probe struct {
		Scenario *string         `json:"scenario"`
		Knee     json.RawMessage `json:"knee"`
		Steps    json.RawMessage `json:"steps"`
		Shard    string          `json:"shard"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.Scenario == nil || probe.Knee == nil || probe.Steps == nil {
		return nil
	}
	if probe.Shard == "" {
		return exitcode.BadInputf("report merge: %s is a `hostprep probe iotdb` result: report merge takes `hostprep ready` results (whose IoTDB probe it shows per host) and MQTT fleet shards; read an IoTDB probe's result on its own, or merge the JSON of `hostprep ready`", path)
	}
	return exitcode.BadInputf("report merge: %s is a `hostprep probe iotdb` result of shard %s: IoTDB shard results are not merged (each shard's steps start when that shard gets to them, with no common window, so the shards' TPS cannot be added into a fleet rate); read each shard's ops and TPS, or merge the JSON of `hostprep ready`", path, probe.Shard)
}

// laterRun is the row kept for a host found in two files, with a note
// that says which and why: a real run beats a dry run (a dry run plans
// the tuning and skips the probes, so it cannot stand for a host that was
// readied), else the later run by "started" wins.
func laterRun(old, row Row, notes *[]string) Row {
	keep, why := row, "the later run"
	switch oldDry, newDry := old.run.DryRun, row.run.DryRun; {
	case oldDry != newDry:
		why = "a real run, not the dry run"
		if newDry {
			keep = old
		}
	case old.run.Started.After(row.run.Started):
		keep = old
	}
	*notes = append(*notes, fmt.Sprintf("host %s is in %s and %s; kept %s (%s)", row.run.Host, old.Source, row.Source, keep.Source, why))
	return keep
}

func rank(v outcome.Verdict) int {
	switch v {
	case outcome.NotReady:
		return 0
	case outcome.DryRun: // not checked: not known to be ready
		return 1
	case outcome.ReadyWithWarnings:
		return 2
	}
	return 3
}

func metric(r *outcome.Result, step, name string) *float64 {
	s := r.Step(step)
	if s == nil {
		return nil
	}
	v, ok := s.Metrics[name]
	if !ok {
		return nil
	}
	return &v
}

func rowOf(r *outcome.Result, src string) Row {
	row := Row{
		Host: r.Host, Verdict: r.Verdict, Profile: r.Profile, Changed: r.Changed, Source: src, run: r,
		Failing:         []string{},
		CapacitySockets: metric(r, outcome.StepPreflight, outcome.MetricCapacitySockets),
		TargetSockets:   metric(r, outcome.StepPreflight, outcome.MetricTargetSockets),
		MQTTAckP95MS:    metric(r, outcome.StepProbeMQTT, outcome.MetricAckP95MS),
		MQTTE2EP95MS:    metric(r, outcome.StepProbeMQTT, outcome.MetricE2EP95MS),
		MQTTLoss:        metric(r, outcome.StepProbeMQTT, outcome.MetricLoss),
		IoTDBP95MS:      metric(r, outcome.StepProbeIoTDB, outcome.MetricP95MS),
		IoTDBTPS:        metric(r, outcome.StepProbeIoTDB, outcome.MetricTPS),
		IoTDBErrorRate:  metric(r, outcome.StepProbeIoTDB, outcome.MetricErrorRate),
	}
	for _, s := range r.Steps {
		failed := false
		for _, c := range s.Checks {
			switch c.Status {
			case "fail":
				row.Failing = append(row.Failing, s.Name+"/"+c.ID)
				failed = true
			case "warn":
				row.Warnings = append(row.Warnings, s.Name+"/"+c.ID)
			}
		}
		if s.Verdict == "fail" && !failed {
			row.Failing = append(row.Failing, s.Name)
		}
	}
	return row
}

func num(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3g%%", *p*100)
}

// cells are the table columns shared by text and HTML.
func (r Row) cells() []string {
	failing := strings.Join(r.Failing, ", ")
	if failing == "" {
		failing = "-"
	}
	capacity := num(r.CapacitySockets, "%.0f")
	if r.TargetSockets != nil && r.CapacitySockets != nil {
		capacity += " / " + num(r.TargetSockets, "%.0f")
	}
	return []string{
		r.Host, string(r.Verdict), failing, capacity,
		num(r.MQTTAckP95MS, "%.1f"), num(r.MQTTE2EP95MS, "%.1f"), pct(r.MQTTLoss),
		num(r.IoTDBP95MS, "%.1f"), num(r.IoTDBTPS, "%.0f"), pct(r.IoTDBErrorRate),
	}
}

var header = []string{"HOST", "VERDICT", "FAILING", "CAPACITY/TARGET (conns)", "MQTT ACK P95 ms", "MQTT E2E P95 ms", "MQTT LOSS", "IOTDB P95 ms", "IOTDB TPS", "IOTDB ERR"}
