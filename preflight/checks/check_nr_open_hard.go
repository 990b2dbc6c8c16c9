package checks

import (
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// fd.nr_open_hard: fs.nr_open, live and at boot, is at or above every
// hard nofile configured on the host. pam_limits fails a session whose
// hard limit exceeds it (sudo: "pam_open_session: Permission denied",
// cron stops), and systemd cannot give a unit more. An invariant of the
// host, whatever the target: no remedy may break it.

func init() {
	register(CheckDef{ID: "fd.nr_open_hard", Doc: "fs.nr_open, live and at boot, >= every hard nofile configured (limits.conf/limits.d, DefaultLimitNOFILE, each unit's LimitNOFILE, PID 1's)", Func: CheckNrOpenHard})
}

// configuredHard is every hard nofile the checks know of, with where it
// is set: Facts.HardNofile, systemd's DefaultLimitNOFILE and PID 1's
// limit.
func ConfiguredHard(f *facts.Facts) []facts.LimitLine {
	out := append([]facts.LimitLine(nil), f.HardNofile...)
	if d := f.Systemd.DefaultLimitNOFILE; d != nil && d.Hard != facts.Unlimited && f.Systemd.DefaultLimitNOFILEFrom != "" && !strings.HasPrefix(f.Systemd.DefaultLimitNOFILEFrom, "systemd's built-in") {
		out = append(out, facts.LimitLine{Value: d.Hard, Domain: "DefaultLimitNOFILE", From: f.Systemd.DefaultLimitNOFILEFrom})
	}
	if p := f.Pid1Nofile; p != nil && p.Hard != facts.Unlimited {
		out = append(out, facts.LimitLine{Value: p.Hard, Domain: "PID 1", From: "/proc/1/limits"})
	}
	return out
}

func CheckNrOpenHard(f *facts.Facts, t facts.Target) verdict.Check {
	live, ok := f.SysInt("fs.nr_open")
	if !ok {
		return skip("fs.nr_open not readable")
	}
	boot, bootFrom := int64(profiles.DefaultNrOpen), "kernel default: no sysctl.d file sets it"
	if b := f.BootNrOpen; b != nil {
		boot, bootFrom = int64(b.Value), b.From
	}
	lines := ConfiguredHard(f)
	var top facts.LimitLine
	var over []string
	for _, l := range lines {
		if l.Value > top.Value {
			top = l
		}
		if int64(l.Value) > min(live, boot) {
			over = append(over, fmt.Sprintf("%s hard nofile %d (%s)", l.Domain, l.Value, l.From))
		}
	}
	obs := fmt.Sprintf("fs.nr_open %d live, %d at boot (%s); highest hard nofile configured %d", live, boot, bootFrom, top.Value)
	if top.From != "" {
		obs += fmt.Sprintf(" (%s, %s)", top.Domain, top.From)
	}
	exp := "fs.nr_open, live and at boot, >= every hard nofile configured"
	if len(over) == 0 {
		return pass(fmt.Sprintf("fs.nr_open (%d live, %d at boot) covers every hard nofile configured (%s)", live, boot, plural.N(len(lines), "line")), obs, exp)
	}
	when := "live and at boot"
	switch {
	case live >= int64(top.Value):
		when = "at boot"
	case boot >= int64(top.Value):
		when = "live"
	}
	return fail(fmt.Sprintf("fs.nr_open is below %s configured %s: pam_limits fails those sessions (sudo: \"pam_open_session: Permission denied\") and systemd cannot give those units their limit: %s",
		pluralWord(len(over), "a hard nofile", "hard nofile limits"), when, strings.Join(over, "; ")), obs, exp,
		tuneApply(t, NrOpenHardSet(t, top.Value))+" (now and at boot, in its own /etc/sysctl.d/60-hostprep.conf), or lower those lines")
}

// nrOpenHardSet is fd.nr_open_hard's --set: fs.nr_open at the highest
// hard nofile configured, never below the profile's own value.
func NrOpenHardSet(t facts.Target, top uint64) string { return AtLeast(t, "fs.nr_open", int64(top)) }
