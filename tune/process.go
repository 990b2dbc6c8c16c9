package tune

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

func fmtLimit(soft, hard uint64) string {
	f := func(v uint64) string {
		if v == unix.RLIM_INFINITY {
			return "unlimited"
		}
		return strconv.FormatUint(v, 10)
	}
	return f(soft) + ":" + f(hard)
}

// servicePID returns the MainPID of a running systemd unit.
func servicePID(env Env, unit string) (int, error) {
	if !env.systemdRunning() {
		return 0, exitcode.Environmentf("--service %s: systemd is not running here (no /run/systemd/system), so there is no unit to look up; pass the process with --pid PID", unit)
	}
	out, err := exec.Command("systemctl", "show", "--property", "MainPID", "--value", files.UnitName(unit)).Output()
	if err != nil {
		return 0, exitcode.Environmentf("--service %s: systemctl show: %w", unit, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		return 0, exitcode.Environmentf("--service %s: the unit has no running main process (MainPID %q); start it or pass --pid", unit, strings.TrimSpace(string(out)))
	}
	return pid, nil
}

// planProcs plans raising RLIMIT_NOFILE of --pid and --service processes
// to the profile's nofile (never lowering either field).
func (pl *Plan) planProcs(p *profiles.Profile, opts Options) error {
	if len(opts.PIDs) == 0 && len(opts.Services) == 0 {
		return nil
	}
	if pl.env.ImageMode() {
		return exitcode.BadInputf("--pid/--service raise a running process's limit; they cannot be combined with --root (image mode)")
	}
	type target struct {
		pid     int
		service string
		l       *profiles.Limit
	}
	var ts []target
	for _, pid := range opts.PIDs {
		if p.Limits.Nofile == nil {
			return exitcode.BadInputf("--pid %d: profile %s sets no limits.nofile to raise it to", pid, p.Name)
		}
		ts = append(ts, target{pid: pid, l: p.Limits.Nofile})
	}
	for _, s := range opts.Services {
		l := p.Systemd.LimitNOFILE
		if l == nil {
			l = p.Limits.Nofile
		}
		if l == nil {
			return exitcode.BadInputf("--service %s: profile %s sets no systemd.limit_nofile or limits.nofile", s, p.Name)
		}
		pid, err := servicePID(pl.env, s)
		if err != nil {
			return err
		}
		ts = append(ts, target{pid: pid, service: files.UnitName(s), l: l})
	}
	caps, _ := effectiveCaps()
	for _, t := range ts {
		var cur unix.Rlimit
		if err := unix.Prlimit(t.pid, unix.RLIMIT_NOFILE, nil, &cur); err != nil {
			if errors.Is(err, unix.ESRCH) {
				if t.service != "" {
					return exitcode.BadInputf("--service %s: its main process %d has exited; start the unit (systemctl start %s), or leave --service out", t.service, t.pid, t.service)
				}
				return exitcode.BadInputf("--pid %d: no such process; pass the PID of a running process, e.g. --pid $(pidof mosquitto)", t.pid)
			}
			return exitcode.Environmentf("--pid %d: reading RLIMIT_NOFILE: %w", t.pid, err)
		}
		step := procStep{pid: t.pid, service: t.service, curSoft: cur.Cur, curHard: cur.Max,
			wantSoft: max(cur.Cur, t.l.Soft), wantHard: max(cur.Max, t.l.Hard)}
		step.wantSoft = min(step.wantSoft, step.wantHard)
		if step.wantSoft == cur.Cur && step.wantHard == cur.Max {
			pl.Skipped = append(pl.Skipped, Skip{PID: t.pid, Layer: Process, Current: fmtLimit(cur.Cur, cur.Max), Reason: "RLIMIT_NOFILE already at least " + fmtLimit(t.l.Soft, t.l.Hard)})
			continue
		}
		if st, err := procStartTime(t.pid); err == nil {
			step.startTime = st
		} else {
			return exitcode.Environmentf("--pid %d: reading its start time: %w", t.pid, err)
		}
		if step.wantHard > cur.Max && !hasCap(caps, capSysResource) {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("pid %d: raising its hard nofile above %d needs CAP_SYS_RESOURCE, which this process lacks; apply will refuse (exit 3, nothing changed): the ceiling for this process is its hard limit %d", t.pid, cur.Max, cur.Max))
		}
		pl.procs = append(pl.procs, step)
		reason := "limits.nofile (prlimit)"
		if t.service != "" {
			reason = t.service + " main process (prlimit)"
		}
		pl.Changes = append(pl.Changes, Change{PID: t.pid, Layer: Process, From: fmtLimit(cur.Cur, cur.Max), To: fmtLimit(step.wantSoft, step.wantHard), Reason: reason})
	}
	return nil
}

// procStartTime returns field 22 of /proc/PID/stat (starttime, clock
// ticks after boot), which tells a process from a later one that reuses
// its pid.
func procStartTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %s", pid, plural.N(len(f)+2, "field"))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// checkProcs refuses, before anything is changed, a process step the
// kernel would refuse: hostprep must be allowed to change the process's
// limits at all (probed with a prlimit that sets its current values), and
// raising a hard limit needs CAP_SYS_RESOURCE. The error names the real
// ceiling (the process's hard limit) and what to do instead.
func checkProcs(steps []procStep) error {
	caps, _ := effectiveCaps()
	for _, s := range steps {
		cur := unix.Rlimit{Cur: s.curSoft, Max: s.curHard}
		if err := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, &cur, nil); err != nil {
			return exitcode.Environmentf("tune apply: pid %d: hostprep may not change its RLIMIT_NOFILE: prlimit: %v (%s); nothing was changed", s.pid, err, errnoName(err))
		}
		if s.wantHard > s.curHard && !hasCap(caps, capSysResource) {
			return exitcode.Environmentf("tune apply: pid %d: raising its RLIMIT_NOFILE to %s needs CAP_SYS_RESOURCE to lift the hard limit above %d, and hostprep lacks it here; the ceiling for this process is %d (soft %d can go up to it); nothing was changed: restart the process under the new limits (systemd LimitNOFILE, limits.d), or run hostprep with CAP_SYS_RESOURCE", s.pid, fmtLimit(s.wantSoft, s.wantHard), s.curHard, s.curHard, s.curSoft)
		}
	}
	return nil
}

// setNofile sets a process's RLIMIT_NOFILE when apply raises it (tests
// replace it to inject a refusal after the up-front check passed, e.g. a
// process that exits in between).
var setNofile = func(pid int, l unix.Rlimit) error {
	return unix.Prlimit(pid, unix.RLIMIT_NOFILE, &l, nil)
}

// raise applies one process step.
func raise(s procStep) ProcessResult {
	r := ProcessResult{PID: s.pid, Service: s.service, From: fmtLimit(s.curSoft, s.curHard), To: fmtLimit(s.wantSoft, s.wantHard)}
	err := setNofile(s.pid, unix.Rlimit{Cur: s.wantSoft, Max: s.wantHard})
	if err == nil {
		r.Now = r.To
		return r
	}
	r.Now = r.From
	r.Error = fmt.Sprintf("pid %d: prlimit RLIMIT_NOFILE %s: %v (%s)", s.pid, r.To, err, errnoName(err))
	return r
}

// restoreProc puts a journaled process's RLIMIT_NOFILE back to orig when
// it is still the process hostprep raised (same pid and start time) and
// still has the limit hostprep set. It returns what it did: "restored",
// "gone" (exited or pid reused), "original" (already back) or "changed"
// (someone else changed it since; left alone), with the live limit.
func restoreProc(pid int, startTime uint64, orig, set unix.Rlimit) (string, string, error) {
	st, err := procStartTime(pid)
	if err != nil || st != startTime {
		return "gone", "", nil
	}
	var cur unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &cur); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return "gone", "", nil
		}
		return "", "", err
	}
	live := fmtLimit(cur.Cur, cur.Max)
	switch {
	case cur == orig:
		return "original", live, nil
	case cur != set:
		return "changed", live, nil
	}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &orig, nil); err != nil {
		return "", live, fmt.Errorf("prlimit RLIMIT_NOFILE %s: %v (%s)", fmtLimit(orig.Cur, orig.Max), err, errnoName(err))
	}
	return "restored", live, nil
}

func errnoName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return "error"
}
