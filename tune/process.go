package tune

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/exitcode"
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
		return 0, exitcode.Environmentf("--service %s: systemctl show: %v", unit, err)
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
				return exitcode.BadInputf("--pid %d: no such process", t.pid)
			}
			return exitcode.Environmentf("--pid %d: reading RLIMIT_NOFILE: %v", t.pid, err)
		}
		step := procStep{pid: t.pid, service: t.service, curSoft: cur.Cur, curHard: cur.Max,
			wantSoft: max(cur.Cur, t.l.Soft), wantHard: max(cur.Max, t.l.Hard)}
		step.wantSoft = min(step.wantSoft, step.wantHard)
		if step.wantSoft == cur.Cur && step.wantHard == cur.Max {
			pl.Skipped = append(pl.Skipped, Skip{PID: t.pid, Layer: Process, Current: fmtLimit(cur.Cur, cur.Max), Reason: "RLIMIT_NOFILE already at least " + fmtLimit(t.l.Soft, t.l.Hard)})
			continue
		}
		if step.wantHard > cur.Max && !hasCap(caps, capSysResource) {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("pid %d: raising its hard nofile above %d needs CAP_SYS_RESOURCE, which this process lacks; expect EPERM and a soft limit of at most %d", t.pid, cur.Max, cur.Max))
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

// raise applies one process step. On EPERM (hard limit above the current
// one without CAP_SYS_RESOURCE) it still raises the soft limit up to the
// current hard limit, the real ceiling, and reports both.
func raise(s procStep) ProcessResult {
	r := ProcessResult{PID: s.pid, Service: s.service, From: fmtLimit(s.curSoft, s.curHard), To: fmtLimit(s.wantSoft, s.wantHard)}
	err := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: s.wantSoft, Max: s.wantHard}, nil)
	if err == nil {
		r.Now = r.To
		return r
	}
	r.Now = r.From
	if errors.Is(err, unix.EPERM) && s.wantHard > s.curHard {
		soft := min(s.wantSoft, s.curHard)
		if soft > s.curSoft {
			if err2 := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: soft, Max: s.curHard}, nil); err2 == nil {
				r.Now = fmtLimit(soft, s.curHard)
			}
		}
		r.Error = fmt.Sprintf("pid %d: prlimit RLIMIT_NOFILE %s: %v (EPERM): raising the hard limit above %d needs CAP_SYS_RESOURCE, which hostprep lacks here; the ceiling for this process is %d (now %s); restart it under the new limits (systemd LimitNOFILE, limits.d) instead", s.pid, r.To, err, s.curHard, s.curHard, r.Now)
		return r
	}
	r.Error = fmt.Sprintf("pid %d: prlimit RLIMIT_NOFILE %s: %v (%s)", s.pid, r.To, err, errnoName(err))
	return r
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
