package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// tuneFlags are the flags the tune subcommands share.
type tuneFlags struct {
	profile  string
	sets     []string
	output   string
	root     string
	procSys  string
	proc     string
	state    string
	lockFile string
	lockWait time.Duration
	pids     []int
	services []string
	boot     bool
	persist  string
	// verify-at-boot (apply) and --textfile (verify)
	verifyAtBoot bool
	textfileDir  string
	verifyEvery  string
	textfile     string
	// verifyFS is the flag set verifyFlags declared its flags in (plan,
	// apply): it tells a flag given from its default
	verifyFS *pflag.FlagSet
}

func (f *tuneFlags) env() tune.Env {
	e := tune.Env{ProcSys: f.procSys, Proc: f.proc, StateFile: f.state, LockFile: f.lockFile, LockWait: f.lockWait, PersistName: f.persist}
	if f.lockWait == 0 {
		e.LockWait = tune.NoWait
	}
	if f.root != "" {
		// the journal records absolute paths: a relative --root is taken
		// from the working directory once, here
		e.Root, e.Image = f.root, true
		if abs, err := filepath.Abs(f.root); err == nil {
			e.Root = abs
		}
	}
	return e
}

func (f *tuneFlags) load(required bool) (*profiles.Profile, error) {
	if f.profile == "" {
		if required {
			return nil, exitcode.BadInputf("--profile is required: a built-in name (hostprep profiles list) or a YAML file")
		}
		if len(f.sets) > 0 {
			return nil, exitcode.BadInputf("--set needs --profile")
		}
		return nil, nil
	}
	return profiles.Load(f.profile, f.sets)
}

// planInput checks --persist-name, loads the profile --profile names
// (required) and returns it with the options plan and apply give tune.
// Errors are bad input (exit 2) or profiles.Load's.
func (f *tuneFlags) planInput() (*profiles.Profile, tune.Options, error) {
	if err := tune.CheckPersistName(f.persist); err != nil {
		return nil, tune.Options{}, err
	}
	p, err := f.load(true)
	opts := tune.Options{Env: f.env(), PIDs: f.pids, Services: f.services}
	if !f.verifyAtBoot && f.verifyFS != nil {
		// without --verify-at-boot they would be ignored, and apply say
		// "no change" for a unit the user asked to change
		for _, name := range []string{"verify-textfile-dir", "verify-every"} {
			if fl := f.verifyFS.Lookup(name); fl != nil && fl.Changed {
				return nil, opts, exitcode.BadInputf("--%s %s: only with --verify-at-boot (it sets what hostprep-verify.service does); add --verify-at-boot", name, fl.Value)
			}
		}
	}
	if f.verifyAtBoot {
		v, verr := f.verifyUnit()
		if verr != nil {
			return nil, opts, verr
		}
		opts.VerifyAtBoot = v
	}
	return p, opts, err
}

// rootUsage says what --root does for each tune command: only apply and
// rollback write under DIR.
var rootUsage = map[string]string{
	"plan":     "image-build mode: plan the persistent files under DIR only, no runtime value (writes nothing)",
	"apply":    "image-build mode: write only the persistent files under DIR, no runtime value",
	"rollback": "image-build mode: undo the files hostprep wrote under DIR",
	"status":   "image-build mode: show the journal and owned files under DIR (writes nothing)",
	"verify":   "image-build mode: compare the files and journal under DIR, with --boot the boot configuration under DIR (writes nothing)",
}

func (f *tuneFlags) common(c *cobra.Command, withProfile, withState bool) {
	fl := c.Flags()
	if withProfile {
		fl.StringVarP(&f.profile, "profile", "p", "", "profile: built-in name or YAML file")
		fl.StringArrayVar(&f.sets, "set", nil, "override one profile key, key=value (repeatable)")
	}
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.StringVar(&f.root, "root", "", rootUsage[c.Name()])
	fl.StringVar(&f.procSys, "proc-sys", "", "sysctl tree (default /proc/sys)")
	fl.StringVar(&f.proc, "proc", "", "procfs for net/tcp, net/tcp6 listening ports (default /proc)")
	if withState {
		fl.StringVar(&f.state, "state", "", "journal file (default ROOT/var/lib/hostprep/state.json)")
	}
}

func (f *tuneFlags) locking(c *cobra.Command) {
	c.Flags().StringVar(&f.lockFile, "lock", "", "lock file (default /run/hostprep.lock; with --root the DIR itself is flocked)")
	c.Flags().DurationVar(&f.lockWait, "lock-wait", 5*time.Second, "how long to wait for another apply/rollback (0: fail at once if one runs)")
}

// processes declares the flags plan and apply share: --pid and --service
// (running processes whose RLIMIT_NOFILE is raised; raise words what the
// verb does with them, how says with what for a --pid) and --persist-name.
func (f *tuneFlags) processes(c *cobra.Command, raise, how string) {
	c.Flags().IntSliceVar(&f.pids, "pid", nil, raise+" RLIMIT_NOFILE of this running process"+how+" (repeatable)")
	c.Flags().StringArrayVar(&f.services, "service", nil, raise+" RLIMIT_NOFILE of this systemd unit's main process (repeatable)")
	c.Flags().StringVar(&f.persist, "persist-name", "", "name of hostprep's sysctl.d file (default: the name the last apply used, else 60-hostprep.conf); one that sorts after a file that wins at boot makes hostprep's values win; a new name moves the file")
}

// checkLockWait refuses a negative --lock-wait (exit 2).
func (f *tuneFlags) checkLockWait() error {
	if f.lockWait < 0 {
		return exitcode.BadInputf("--lock-wait %s: must be 0 (fail at once when another apply/rollback holds the lock) or a positive duration such as 5s", f.lockWait)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONResult prints v; when the command also fails (err != nil) the
// object gets "error" and "exit_code" too, so stdout stays one JSON object.
func writeJSONResult(w io.Writer, v any, err error) error {
	if err == nil {
		return writeJSON(w, v)
	}
	b, merr := json.Marshal(v)
	m := map[string]any{}
	if merr != nil || json.Unmarshal(b, &m) != nil {
		m = map[string]any{"changed": false}
	}
	m["error"] = err.Error()
	m["exit_code"] = exitcode.Code(err)
	return writeJSON(w, m)
}

// writeResult prints res, the result of a tune subcommand that ended
// with err (nil: none), on w: with writeText, or with --output json as
// one object that carries err too (writeJSONResult). It returns err, or
// the write's error when err is nil.
func (f *tuneFlags) writeResult(w io.Writer, res any, err error, writeText func(io.Writer) error) error {
	var werr error
	if f.output == "json" {
		werr = writeJSONResult(w, res, err)
	} else {
		werr = writeText(w)
	}
	if err == nil {
		return werr
	}
	return err
}

// countingWriter counts the bytes a command printed on stdout.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// jsonErrors wraps a tune subcommand: an --output other than text or json
// is refused (exit 2) before run; with --output json, a failure that
// printed nothing on stdout prints {"changed": false, "error": "...",
// "exit_code": N} there (the one-line error still goes to stderr), so a
// caller parsing stdout (Ansible from_json) always gets one JSON object.
// An error that a file could not be read says to run as root (rootHint).
func jsonErrors(f *tuneFlags, run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(f.output, "text", "json"); err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		cw := &countingWriter{w: out}
		cmd.SetOut(cw)
		defer cmd.SetOut(out)
		err := rootHint(run(cmd, args))
		if err != nil && f.output == "json" && cw.n == 0 {
			_ = writeJSON(out, struct {
				Changed  bool   `json:"changed"`
				Error    string `json:"error"`
				ExitCode int    `json:"exit_code"`
			}{false, err.Error(), exitcode.Code(err)})
		}
		return err
	}
}

// rootHint adds the fix to err, with its exit code, when err is that a
// file was not readable (fs.ErrPermission) and hostprep does not run as
// root: tune reads what systemd, pam_limits and the kernel read as root
// (unit files, limits.d, sysctl.d, its 0600 journal). Other errors, and
// those that say so already, are returned as they are.
func rootHint(err error) error {
	if err == nil || os.Geteuid() == 0 || !errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), "run as root") {
		return err
	}
	return exitcode.New(exitcode.Code(err), fmt.Errorf("%w; run as root: hostprep tune reads what systemd, pam_limits and the kernel read as root", err))
}

func init() {
	addCommand(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "tune",
			Short: "Apply a sysctl/limits/systemd profile idempotently, with exact rollback",
			Long: `tune makes the host match a profile: runtime values under /proc/sys and
persistent files hostprep owns (/etc/sysctl.d/60-hostprep.conf,
/etc/security/limits.d/60-hostprep.conf, systemd drop-ins). It never appends
to /etc/sysctl.conf or /etc/security/limits.conf.

plan shows every change without root; apply makes them in order (fs.nr_open,
fs.file-max, the rest, then files), journaling originals first in
/var/lib/hostprep/state.json; rollback restores the pre-first-apply state;
status and verify compare the live host with the journal.

Systemd drop-ins are written when systemd runs (/run/systemd/system), when
/etc/systemd exists, or with --root.`,
		}
		c.AddCommand(tunePlanCmd(), tuneApplyCmd(), tuneRollbackCmd(), tuneStatusCmd(), tuneVerifyCmd())
		return c
	})
}

// tuneCommand is one tune subcommand: its help, the shared flags it takes
// and what it runs. build makes the cobra command: no arguments, the
// shared flags (tuneFlags.common; locking; processes), then its own
// (flags), and run wrapped by jsonErrors.
type tuneCommand struct {
	use, short, long, example string
	// profile: --profile and --set; lock: --lock and --lock-wait (the
	// verbs that write), checked before run; raise and how, when raise is
	// set: --pid, --service and --persist-name (tuneFlags.processes).
	profile, lock bool
	raise, how    string
	// flags declares the subcommand's own flags (nil: none).
	flags func(fl *pflag.FlagSet, f *tuneFlags)
	run   func(cmd *cobra.Command, f *tuneFlags) error
}

func (t tuneCommand) build() *cobra.Command {
	f := &tuneFlags{}
	c := &cobra.Command{
		Use: t.use, Short: t.short, Long: t.long, Example: t.example,
		Args: cobra.NoArgs,
		RunE: jsonErrors(f, func(cmd *cobra.Command, args []string) error {
			if t.lock {
				if err := f.checkLockWait(); err != nil {
					return err
				}
			}
			return t.run(cmd, f)
		}),
	}
	f.common(c, t.profile, true)
	if t.lock {
		f.locking(c)
	}
	if t.raise != "" {
		f.processes(c, t.raise, t.how)
	}
	if t.flags != nil {
		t.flags(c.Flags(), f)
	}
	return c
}

func tunePlanCmd() *cobra.Command {
	return tuneCommand{
		use:     "plan --profile P",
		short:   "Show what apply would change, key by key and file by file (no root needed)",
		example: "  hostprep tune plan --profile sys-tune\n  hostprep tune plan --profile ./broker.yaml --set net.core.somaxconn=65535 --output json",
		profile: true, raise: "also plan raising",
		flags: func(fl *pflag.FlagSet, f *tuneFlags) { f.verifyFlags(fl) },
		run: func(cmd *cobra.Command, f *tuneFlags) error {
			p, opts, err := f.planInput()
			if err != nil {
				return err
			}
			pl, err := tune.PlanFor(p, opts)
			if err != nil {
				return err
			}
			return f.writeResult(cmd.OutOrStdout(), pl.Report(), nil, func(w io.Writer) error { return pl.WriteText(w, "plan") })
		},
	}.build()
}

func tuneApplyCmd() *cobra.Command {
	return tuneCommand{
		use:   "apply --profile P",
		short: "Apply a profile (root): runtime sysctls, owned files, optional prlimit of running processes",
		example: "  sudo hostprep tune apply --profile sys-tune\n" +
			"  sudo hostprep tune apply --profile mqtt-broker-1m --service emqx --output json\n" +
			"  hostprep tune apply --profile sys-tune --root /srv/image   # image build: files only",
		profile: true, lock: true, raise: "also raise", how: " with prlimit",
		flags: func(fl *pflag.FlagSet, f *tuneFlags) { f.verifyFlags(fl) },
		run: func(cmd *cobra.Command, f *tuneFlags) error {
			p, opts, err := f.planInput()
			if err != nil {
				return err
			}
			res, err := tune.Apply(cmd.Context(), p, opts)
			if res == nil {
				return err
			}
			return f.writeResult(cmd.OutOrStdout(), res, err, func(w io.Writer) error { return res.WriteText(w, "apply") })
		},
	}.build()
}

func tuneRollbackCmd() *cobra.Command {
	return tuneCommand{
		use:   "rollback",
		short: "Restore the host to what it was before the first apply (root)",
		long: `rollback restores every runtime value and owned file recorded in the journal
to its state before the first hostprep apply, however many applies came since,
and removes the journal. A key or file someone else changed after hostprep set
it is left alone and listed (exit 0). With nothing applied it does nothing.

Never a nofile limit above fs.nr_open: when a limits file or systemd drop-in
left behind (edited after hostprep wrote it) sets a hard nofile above the
original fs.nr_open or fs.file-max, that key keeps its value ("kept" in the
output, with the file that needs it) and both stay in the journal; fix or
remove the file and run rollback again to finish.`,
		example: "  sudo hostprep tune rollback\n  hostprep tune rollback --root /srv/image --output json",
		lock:    true,
		run: func(cmd *cobra.Command, f *tuneFlags) error {
			res, err := tune.Rollback(cmd.Context(), f.env())
			if res == nil {
				return err
			}
			return f.writeResult(cmd.OutOrStdout(), res, err, res.WriteText)
		},
	}.build()
}

func tuneStatusCmd() *cobra.Command {
	return tuneCommand{
		use:     "status",
		short:   "Show what hostprep applied (from the journal) and the live values",
		example: "  sudo hostprep tune status\n  sudo hostprep tune status --output json",
		run: func(cmd *cobra.Command, f *tuneFlags) error {
			st, err := tune.StatusOf(f.env())
			if err != nil {
				return err
			}
			return f.writeResult(cmd.OutOrStdout(), st, st.Err(), st.WriteText)
		},
	}.build()
}

func tuneVerifyCmd() *cobra.Command {
	return tuneCommand{
		use:   "verify [--profile P]",
		short: "Check the live host still matches what hostprep applied (drift: exit 1)",
		long: `verify compares every key and file in the journal with the live host; with
--profile it also requires that the profile plans no change. Drift exits 1.

With --boot it instead compares every key and limit hostprep persisted with
what the host will have after its next boot, reading sysctl.d, limits.d and
systemd configuration the way systemd-sysctl (or sysctl --system),
pam_limits and systemd do; a key another file wins at boot exits 1, naming
that file and line.`,
		example: "  sudo hostprep tune verify\n  sudo hostprep tune verify --profile sys-tune --output json\n  sudo hostprep tune verify --boot",
		profile: true,
		flags: func(fl *pflag.FlagSet, f *tuneFlags) {
			fl.BoolVar(&f.boot, "boot", false, "check the values the host will have after its next boot instead of the live ones")
			fl.StringVar(&f.textfile, "textfile", "", "write "+tune.TextfileName+" (hostprep_tune_drift{key,wanted,live,writer}) into this node_exporter textfile directory, print one line per drifted item and keep the result for tune status (what hostprep-verify.service runs)")
		},
		run: func(cmd *cobra.Command, f *tuneFlags) error {
			if f.boot {
				if f.profile != "" {
					return exitcode.BadInputf("--boot checks what hostprep applied (the journal); drop --profile")
				}
				if f.textfile != "" {
					return exitcode.BadInputf("--textfile reports the live values; drop --boot")
				}
				bs, verr := tune.VerifyBoot(f.env())
				if bs == nil {
					return verr
				}
				return f.writeResult(cmd.OutOrStdout(), bs, verr, bs.WriteText)
			}
			p, err := f.load(false)
			if err != nil {
				return err
			}
			st, pl, verr := tune.Verify(p, f.env())
			if st == nil {
				return verr
			}
			out := struct {
				*tune.Status
				Pending  []tune.Change `json:"pending,omitempty"`
				Textfile string        `json:"textfile,omitempty"`
			}{Status: st}
			if f.textfile != "" {
				// With --output json the output is only JSON: the status
				// carries the drift the lines would print.
				lines := cmd.OutOrStdout()
				if f.output == "json" {
					lines = io.Discard
				}
				if err := tune.WriteVerifyResults(f.env(), st, f.textfile, lines); err != nil {
					return err
				}
				if f.output != "json" {
					return verr
				}
				out.Textfile = filepath.Join(f.textfile, tune.TextfileName)
			}
			if pl != nil {
				out.Pending = pl.Changes
			}
			return f.writeResult(cmd.OutOrStdout(), out, verr, func(w io.Writer) error {
				if err := st.WriteText(w); err != nil || pl == nil || !pl.Changed {
					return err
				}
				return pl.WriteText(w, "plan")
			})
		},
	}.build()
}

// verifyFlags declares the flags of hostprep-verify.service that plan and
// apply share.
func (f *tuneFlags) verifyFlags(fl *pflag.FlagSet) {
	f.verifyFS = fl
	fl.BoolVar(&f.verifyAtBoot, "verify-at-boot", false, "also install hostprep-verify.service and its timer: `tune verify` after every boot and periodically, drift to node_exporter's textfile directory and the journal (docs/verify-at-boot.md); rollback removes them")
	fl.StringVar(&f.textfileDir, "verify-textfile-dir", tune.DefaultTextfileDir, "with --verify-at-boot: node_exporter's textfile directory the unit writes "+tune.TextfileName+" into")
	fl.StringVar(&f.verifyEvery, "verify-every", tune.DefaultVerifyEvery, "with --verify-at-boot: the timer's period (systemd time span: 30min, 1h, 1d)")
}

// verifyUnit is the hostprep-verify.service --verify-at-boot installs:
// the binary that runs (this one on a host, /usr/local/bin/hostprep in an
// image), the textfile directory and the timer's period. Errors: bad input
// for a relative directory or a period systemd would not read.
func (f *tuneFlags) verifyUnit() (*journal.VerifyUnit, error) {
	if !filepath.IsAbs(f.textfileDir) {
		return nil, exitcode.BadInputf("--verify-textfile-dir %q: want an absolute path (the unit runs from /), e.g. %s", f.textfileDir, tune.DefaultTextfileDir)
	}
	if !validTimespan(f.verifyEvery) {
		return nil, exitcode.BadInputf("--verify-every %q: want a systemd time span such as 30min, 1h or 1d (systemd.time(7))", f.verifyEvery)
	}
	bin := tune.DefaultBin
	if f.root == "" {
		if exe, err := os.Executable(); err == nil {
			if real, err := filepath.EvalSymlinks(exe); err == nil {
				bin = real
			}
		}
	}
	return &journal.VerifyUnit{Bin: bin, TextfileDir: filepath.Clean(f.textfileDir), Every: f.verifyEvery}, nil
}

// validTimespan says whether s is a plain systemd time span: one or more
// number+unit pairs ("1h", "30min", "1h30min").
func validTimespan(s string) bool {
	return timespanRE.MatchString(s)
}

var timespanRE = regexp.MustCompile(`^([0-9]+(us|ms|s|sec|m|min|h|hr|d|w))+$`)
