package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// FleetRun is one MQTT load run spread over N load generators (`hostprep
// probe mqtt --shard K/N --output json` on each), merged: the shards
// present, the ones missing, and one verdict for the fleet. The HTML
// report renders it from these fields.
type FleetRun struct {
	// RunID is the id every shard of the run carries.
	RunID string `json:"run_id"`
	// Shards is N, the number of load generators the run was split over.
	Shards int `json:"shards"`
	// Present are the shards given, by K.
	Present []ShardRow `json:"present"`
	// Missing are the K of shards no file was given for; any missing
	// shard fails the fleet (check fleet.shards).
	Missing []int `json:"missing,omitempty"`
	// Verdict is the fleet's: the worst of Checks.
	Verdict verdict.Status `json:"verdict"`
	// Checks are the MQTT probe's thresholds judged on the merged result
	// (mqtt.complete, mqtt.loss, mqtt.ack_p95, ...) and fleet.shards.
	Checks []verdict.Check `json:"checks"`
	// Merged is the whole run as one result (mqtt.MergeShards): summed
	// counts, exact percentiles from the merged histograms, the combined
	// per-second series. Nil when a shard is missing (no exact figures
	// for an incomplete fleet).
	Merged *mqtt.Result `json:"merged,omitempty"`
}

// ShardRow is one shard of a FleetRun, as its own result says.
type ShardRow struct {
	K        int            `json:"k"`
	Source   string         `json:"source"`
	Hostname string         `json:"hostname"`
	Verdict  verdict.Status `json:"verdict"`
	// Clients is the shard's share of the fleet's clients; Connected
	// the CONNACKs it got.
	Clients   int   `json:"clients"`
	Connected int64 `json:"connected"`
	Published int64 `json:"published"`
	Acked     int64 `json:"acked"`
	Received  int64 `json:"received"`
	Lost      int64 `json:"lost"`
	// WindowS is the shard's steady window as it ran, s (its window_s:
	// shorter than the others' when it stopped early; the merged
	// result's window is the longest).
	WindowS float64 `json:"window_s"`
	// FirstPublishLateMs is how late its first PUBLISH was written after
	// its scheduled slot (ms); -1 when it published nothing.
	FirstPublishLateMs float64 `json:"first_publish_late_ms"`

	res *mqtt.Result
}

// shardFile is a decoded `probe mqtt --shard` result and its file.
type shardFile struct {
	path string
	res  *mqtt.Result
}

// loadShard reads path as a `hostprep probe mqtt --output json` result
// if it is one (a "run_id" field). ok is false for anything else (a
// ready result). A probe result that is not a shard, or one that is not
// whole or possible as the probe writes it (mqtt.Result.CheckShardFile:
// histograms missing, an impossible window or shard), is a BadInput
// error naming the file.
func loadShard(path string, b []byte) (sf shardFile, ok bool, err error) {
	var probe struct {
		RunID *string `json:"run_id"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.RunID == nil {
		return sf, false, nil
	}
	var r mqtt.Result
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&r); err != nil {
		return sf, true, exitcode.BadInputf("report merge: %s: not JSON from `hostprep probe mqtt --output json`: %v", path, err)
	}
	if !r.Config.Shard.On() {
		return sf, true, exitcode.BadInputf("report merge: %s: an MQTT probe result of run %s without --shard; merge the shards of a fleet run (probe mqtt --shard K/N) or the JSON of `hostprep ready`", path, r.RunID)
	}
	if err := r.CheckShardFile(); err != nil {
		return sf, true, exitcode.BadInputf("report merge: %s: %v; merge the files the probe wrote, unedited", path, err)
	}
	return shardFile{path: path, res: &r}, true, nil
}

// mergeShards checks that the shard files are the shards of one run,
// each K once, and merges them. Shards of different runs or two files
// for one K are BadInput errors naming the files. Missing shards are
// named in FleetRun.Missing and fail the fleet (check fleet.shards).
func mergeShards(files []shardFile) (*FleetRun, error) {
	byRun := map[string][]string{}
	for _, f := range files {
		byRun[f.res.RunID] = append(byRun[f.res.RunID], f.path)
	}
	if len(byRun) > 1 {
		var runs []string
		for id, paths := range byRun {
			runs = append(runs, fmt.Sprintf("%s (%s)", id, strings.Join(paths, ", ")))
		}
		sort.Strings(runs)
		return nil, exitcode.BadInputf("report merge: shards of %d different runs: %s; a fleet is the shards of one run (same --run-id / --start-at): merge one run at a time", len(runs), strings.Join(runs, "; "))
	}
	first := files[0].res
	run := &FleetRun{RunID: first.RunID, Shards: first.Config.Shard.N}
	byK := map[int]shardFile{}
	var results []*mqtt.Result
	for _, f := range files {
		sh := f.res.Config.Shard
		if sh.N != run.Shards {
			return nil, exitcode.BadInputf("report merge: %s is shard %s of run %s, but %s is a shard of %d: not the same fleet run", f.path, sh, run.RunID, files[0].path, run.Shards)
		}
		if err := mqtt.SameRun(first, f.res, files[0].path, f.path); err != nil {
			return nil, exitcode.BadInputf("report merge: %v", err)
		}
		if old, dup := byK[sh.K]; dup {
			return nil, exitcode.BadInputf("report merge: %s and %s are both shard %s of run %s: each shard runs once; drop one (a rerun of a shard is a new run: rerun the whole fleet)", old.path, f.path, sh, run.RunID)
		}
		byK[sh.K] = f
		results = append(results, f.res)
		run.Present = append(run.Present, shardRow(f))
	}
	sort.Slice(run.Present, func(i, j int) bool { return run.Present[i].K < run.Present[j].K })
	for k := 1; k <= run.Shards; k++ {
		if _, ok := byK[k]; !ok {
			run.Missing = append(run.Missing, k)
		}
	}
	shards := verdict.Check{ID: "fleet.shards", Status: verdict.Pass, Expected: fmt.Sprintf("%d of %s", run.Shards, plural.N(run.Shards, "shard")),
		Observed: fmt.Sprintf("%d of %s", len(byK), plural.N(run.Shards, "shard"))}
	shards.Summary = fmt.Sprintf("all %s of run %s reported", plural.N(run.Shards, "shard"), run.RunID)
	if len(run.Missing) > 0 {
		var names []string
		for _, k := range run.Missing {
			names = append(names, fmt.Sprintf("%d/%d", k, run.Shards))
		}
		shards.Status = verdict.Fail
		shards.Summary = fmt.Sprintf("shard %s of run %s missing: no result file, so the fleet's load and counts are incomplete", strings.Join(names, ", "), run.RunID)
		shards.Remedy = "find why that load generator gave no result (probe exit 3: broker unreachable, clock, start time) and rerun the fleet"
		run.Checks = []verdict.Check{shards}
		run.Verdict = verdict.Fail
		return run, nil
	}
	merged, err := mqtt.MergeShards(results)
	if err != nil {
		return nil, err
	}
	run.Merged = merged
	run.Checks = append([]verdict.Check{shards}, merged.Checks...)
	run.Verdict = verdict.Worst(run.Checks)
	return run, nil
}

func shardRow(f shardFile) ShardRow {
	r := f.res
	row := ShardRow{K: r.Config.Shard.K, Source: f.path, Hostname: r.Hostname, Verdict: r.Verdict, Clients: r.Connects.Target,
		Connected: r.Connects.OK, Published: r.Messages.Published, Acked: r.Messages.Acked, Received: r.Messages.Received,
		Lost: r.Messages.Lost, WindowS: r.WindowSeconds, FirstPublishLateMs: -1, res: r}
	if r.FirstPublish != nil {
		row.FirstPublishLateMs = r.FirstPublish.LateMs
	}
	return row
}

// readFile reads one input of report merge.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, exitcode.BadInputf("report merge: %v: name the JSON files each host wrote (hostprep ready -o json, or probe mqtt --shard K/N -o json)", err)
	}
	return b, nil
}
