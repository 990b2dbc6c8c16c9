package preflight

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/verdict"
)

func caseReport(t *testing.T) *Report {
	t.Helper()
	f := host(t, `target_process: {managed_by: systemd, unit: mosquitto.service, nofile_soft: 1024, nofile_hard: 524288}
listening_ports: [22, 40000]`)
	r, err := Run(t.Context(), Options{Target: facts.Target{Sockets: 50000, Role: facts.Broker, ConnRate: 500}, Facts: f})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTextFailuresFirstAndColourOnlyWhenAsked(t *testing.T) {
	r := caseReport(t)
	var plain, colour bytes.Buffer
	if err := WriteText(&plain, r, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteText(&colour, r, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("plain text output contains ANSI escapes")
	}
	if !strings.Contains(colour.String(), "\x1b[31mFAIL") {
		t.Error("colour output does not paint FAIL red")
	}
	// status column order: all FAIL lines, then WARN, PASS, SKIP
	rank := map[string]int{"FAIL": 0, "WARN": 1, "PASS": 2, "SKIP": 3}
	last, rows := -1, 0
	for _, line := range strings.Split(plain.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if k, ok := rank[f[0]]; ok && line[0] != ' ' {
			if k < last {
				t.Fatalf("%s after a less severe status:\n%s", line, plain.String())
			}
			last, rows = k, rows+1
		}
	}
	if rows != len(checks.CheckIDs()) {
		t.Errorf("%d status rows, want one per check (%d)", rows, len(checks.CheckIDs()))
	}
	for _, want := range []string{"remedy: give the profile systemd.limit_nofile {soft: ", "and mosquitto.service in systemd.services, then `hostprep tune apply --profile PROFILE` and systemctl daemon-reload && systemctl restart mosquitto.service", "observed: soft nofile 1024", "capacity: about"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := caseReport(t)
	var buf bytes.Buffer
	if err := Write(&buf, "json", r, false); err != nil {
		t.Fatal(err)
	}
	var back Report
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict != verdict.Fail || len(back.Checks) != len(r.Checks) || back.Capacity.LimitedBy != "fd.soft" || back.Capacity.Sockets != 960 {
		t.Errorf("round trip: verdict %s, %d checks, capacity %+v", back.Verdict, len(back.Checks), back.Capacity)
	}
	if err := Write(&buf, "yaml", r, false); err == nil {
		t.Error("unknown format accepted")
	}
}
