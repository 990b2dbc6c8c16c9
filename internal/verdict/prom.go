package verdict

import (
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Prometheus text exposition format, as node_exporter's textfile collector
// reads it (*.prom files): HELP and TYPE lines, then samples.

// StatusValue is the gauge value of a status: 0 pass, 1 warn, 2 fail, -1
// skip (so "> 0" alerts on problems and skips stay out of it).
func StatusValue(s Status) float64 {
	switch s {
	case Pass:
		return 0
	case Warn:
		return 1
	case Fail:
		return 2
	}
	return -1
}

// Gauge is one extra gauge sample written after the per-check gauges.
type Gauge struct {
	// Name is the full metric name (hostprep_preflight_capacity_sockets).
	Name string
	// Help is the HELP text.
	Help string
	// Labels are optional label pairs.
	Labels map[string]string
	Value  float64
}

var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// WriteProm writes one gauge per check, `<prefix>_check_status{check="ID"}`
// with StatusValue, plus `<prefix>_verdict` and the extra gauges, in the
// text format node_exporter's textfile collector reads. Gauges sharing a
// name are grouped under one HELP/TYPE. prefix is e.g.
// "hostprep_preflight".
func WriteProm(w io.Writer, prefix string, checks []Check, extra []Gauge) error {
	gs := make([]Gauge, 0, len(checks)+1+len(extra))
	for _, c := range checks {
		gs = append(gs, Gauge{Name: prefix + "_check_status", Help: "Status of each check: 0 pass, 1 warn, 2 fail, -1 skip.",
			Labels: map[string]string{"check": c.ID}, Value: StatusValue(c.Status)})
	}
	gs = append(gs, Gauge{Name: prefix + "_verdict", Help: "Overall verdict: 0 pass, 1 warn, 2 fail.", Value: StatusValue(Worst(checks))})
	gs = append(gs, extra...)
	// group by name, keeping first-seen order of names
	var order []string
	byName := map[string][]Gauge{}
	for _, g := range gs {
		if !metricName.MatchString(g.Name) {
			return fmt.Errorf("prometheus metric name %q is invalid", g.Name)
		}
		if _, ok := byName[g.Name]; !ok {
			order = append(order, g.Name)
		}
		byName[g.Name] = append(byName[g.Name], g)
	}
	var b strings.Builder
	for _, name := range order {
		group := byName[name]
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, escapeHelp(group[0].Help), name)
		for _, g := range group {
			fmt.Fprintf(&b, "%s%s %s\n", name, labels(g.Labels), formatValue(g.Value))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func labels(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=\"%s\"", k, escapeLabel(m[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// escapeLabel escapes \, " and newline as the text format requires.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// escapeHelp escapes \ and newline in HELP text.
func escapeHelp(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s)
}

func formatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
