package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hostprep/hostprep/internal/atomicfile"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/cobra"
)

// What every probe command (`hostprep probe NAME`) shares: the order of a
// run (runProbe), where the password comes from, output files checked
// before the load and written after it, and the exit code of a failed
// verdict.

// probeFlags are the flags every probe command has besides its load:
// --profile, --password-file, --shard and the outputs (--output, --csv,
// --html).
type probeFlags struct {
	profile, passwordFile, shard string
	outs                         probeOutputs
}

// runProbe is the RunE of `hostprep probe NAME`: it checks --output and
// --shard, reads the profile's probe.NAME section and the password, lets
// the probe's command resolve and validate the settings, fails on an
// unwritable --csv/--html before loading the server, runs the load with
// Ctrl-C/SIGTERM ending it, writes the result (also when the run was cut
// short: the report says INCOMPLETE and why) and turns a failed verdict
// into exit 1.
func runProbe(cmd *cobra.Command, pf *probeFlags, p loadprobe.Probe, pc loadprobe.Command) error {
	if err := checkOutput(pf.outs.Format, "text", "json"); err != nil {
		return err
	}
	shard, err := fleet.ParseShard(pf.shard)
	if err != nil {
		return err
	}
	prof, err := probeProfile(pf.profile, p)
	if err != nil {
		return err
	}
	help := pc.Help()
	pw, err := probePassword(pf.passwordFile, help.PasswordEnv)
	if err != nil {
		return err
	}
	if pf.passwordFile != "" && pw == "" {
		return exitcode.BadInputf("--password-file %s is empty: put the password in it, or leave the flag out", pf.passwordFile)
	}
	run, err := pc.Resolve(prof, cmd.Flags().Changed, shard, pw)
	if err != nil {
		return err
	}
	if err := pf.outs.checkFiles(); err != nil {
		return err
	}
	ctx, again, stop := interrupts(cmd.Context())
	defer stop()
	res, runErr := run.Run(ctx, loadprobe.Env{Progress: cmd.ErrOrStderr(), TTY: stderrIsTTY(), Again: again})
	if res != nil {
		if err := pf.outs.write(cmd.OutOrStdout(), res, runErr); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	v, checks := res.Judged()
	return probeVerdictErr(p.Name(), v, checks)
}

// interrupts returns ctx, ended by the first Ctrl-C or SIGTERM (or
// parent), and again, ended by the second; stop stops catching them.
func interrupts(parent context.Context) (ctx, again context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	again, cancelAgain := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for n := 1; ; n++ {
			select {
			case <-sig:
				if n == 1 {
					cancel()
					continue
				}
				cancelAgain()
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, again, func() {
		signal.Stop(sig)
		close(done)
		cancel()
		cancelAgain()
	}
}

// probeProfile is the profile --profile names (ref: built-in name or
// file), once the probe accepts it (CheckProfile); nil without ref. A
// profile without the probe's section is bad input (exit 2) naming
// probe.NAME; a bad value in it is CheckProfile's error at the value's
// file:line:col.
func probeProfile(ref string, p loadprobe.Probe) (*profiles.Profile, error) {
	if ref == "" {
		return nil, nil
	}
	prof, err := profiles.Load(ref, nil)
	if err != nil {
		return nil, err
	}
	if !p.InProfile(prof) {
		return nil, exitcode.BadInputf("--profile %s has no probe.%s section: add one, or leave --profile out and pass the load as flags", ref, p.Name())
	}
	if err := p.CheckProfile(prof); err != nil {
		return nil, err
	}
	return prof, nil
}

// probePassword returns the password from file (its content without the
// trailing newline) when file is set, else from the environment variable
// env. An unreadable file is bad input (exit 2) naming --password-file
// and the fix.
func probePassword(file, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		cause := err
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			cause = pe.Err
		}
		return "", exitcode.BadInputf("--password-file %s: %v: give a readable file holding only the password, or leave the flag out and set $%s", file, cause, env)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// probeOutputs are where a probe's result goes: Format (--output: text or
// json) on stdout, and the --csv and --html files ("" writes none).
type probeOutputs struct {
	Format, CSV, HTML string
}

// checkFiles fails with bad input (exit 2) naming the flag when --csv or
// --html could not be written later, or both name one file
// (atomicfile.CheckAll), so an unwritable --csv fails before loading the
// server. It creates nothing: a run that fails before measuring leaves no
// file.
func (o probeOutputs) checkFiles() error {
	return atomicfile.CheckAll(atomicfile.Out{Flag: "--csv", Path: o.CSV}, atomicfile.Out{Flag: "--html", Path: o.HTML})
}

// write prints res on out (text, or indented JSON), then writes the --csv
// and --html files (writeReportFile). When the run ended with runErr, it
// becomes the result's reason for stopping early (unless the result has
// one: Result.MarkIncomplete) before the HTML is written, so that report
// says INCOMPLETE and why. Errors are out's, or the files' (exit 3).
func (o probeOutputs) write(out io.Writer, res loadprobe.Result, runErr error) error {
	var err error
	if o.Format == "json" {
		err = writeJSON(out, res)
	} else {
		err = res.WriteText(out)
	}
	if err != nil {
		return err
	}
	if err := writeReportFile(o.CSV, "--csv", res.WriteCSV); err != nil {
		return err
	}
	if runErr != nil {
		res.MarkIncomplete(runErr.Error()) // the report says INCOMPLETE and why
	}
	return writeReportFile(o.HTML, "--html", res.WriteHTML)
}

// writeReportFile writes path with write, if path is set, all or nothing
// (internal/atomicfile); any error is the environment's (exit 3) naming
// flag.
func writeReportFile(path, flag string, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	if err := atomicfile.Write(path, write); err != nil {
		return exitcode.Environmentf("%s %s: %v", flag, path, err)
	}
	return nil
}

// probeVerdictErr is nil unless v is a failure; then it is exit 1
// ("probe NAME: ID, ID failed") naming the failed checks.
func probeVerdictErr(name string, v verdict.Status, checks []verdict.Check) error {
	if v != verdict.Fail {
		return nil
	}
	var failed []string
	for _, ch := range checks {
		if ch.Status == verdict.Fail {
			failed = append(failed, ch.ID)
		}
	}
	return exitcode.Failedf("probe %s: %s failed", name, strings.Join(failed, ", "))
}
