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
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/cobra"
)

// What the probe commands (probe mqtt, probe iotdb) share: the order of a
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

// probeOutcome is a probe run as runProbe reports it.
type probeOutcome struct {
	// res is the run's result; nil when the run failed before measuring.
	res probeResult
	// stopReason points at the result's own stop-reason field.
	stopReason *string
	verdict    verdict.Status
	checks     []verdict.Check
}

// probeSpec is what one probe command adds to runProbe. S is the type of
// its profile section (profiles.MQTTProbe, profiles.IoTDBProbe).
type probeSpec[S any] struct {
	// name is the probe ("mqtt"): its profile section is probe.NAME, and
	// a failed verdict reads "probe NAME: ... failed".
	name        string
	section     func(*profiles.Profile) *S
	check       func(*profiles.Profile) error
	passwordEnv string
	// settle resolves the run's settings (built-in defaults, then sec,
	// the profile's section or nil without --profile, then the flags given
	// explicitly) with the parsed --shard and the password, and validates
	// them; its errors are bad input (exit 2).
	settle func(sec *S, shard fleet.Shard, password string) error
	// run runs the load until it ends or ctx ends (Ctrl-C, SIGTERM),
	// writing progress to stderr; again ends on a second Ctrl-C or
	// SIGTERM (a probe that cleans up after the load stops waiting).
	run func(ctx, again context.Context, stderr io.Writer) (probeOutcome, error)
	// exitErr, when set, turns run's error (the report already states it)
	// into the command's error.
	exitErr func(error) error
}

// runProbe is the RunE of a probe command: it checks --output and
// --shard, reads the profile's section and the password, lets spec settle
// and validate the settings, fails on an unwritable --csv/--html before
// loading the server, runs the load with Ctrl-C/SIGTERM ending it, writes
// the result (also when the run was cut short: the report says
// INCOMPLETE and why) and turns a failed verdict into exit 1.
func runProbe[S any](cmd *cobra.Command, pf *probeFlags, spec probeSpec[S]) error {
	if err := checkOutput(pf.outs.Format, "text", "json"); err != nil {
		return err
	}
	shard, err := fleet.ParseShard(pf.shard)
	if err != nil {
		return err
	}
	sec, err := probeSection(pf.profile, "probe."+spec.name, spec.section, spec.check)
	if err != nil {
		return err
	}
	pw, err := probePassword(pf.passwordFile, spec.passwordEnv)
	if err != nil {
		return err
	}
	if pf.passwordFile != "" && pw == "" {
		return exitcode.BadInputf("--password-file %s is empty: put the password in it, or leave the flag out", pf.passwordFile)
	}
	if err := spec.settle(sec, shard, pw); err != nil {
		return err
	}
	if err := pf.outs.checkFiles(); err != nil {
		return err
	}
	ctx, again, stop := interrupts(cmd.Context())
	defer stop()
	out, runErr := spec.run(ctx, again, cmd.ErrOrStderr())
	if out.res != nil {
		if err := pf.outs.write(cmd.OutOrStdout(), out.res, out.stopReason, runErr); err != nil {
			return err
		}
	}
	if runErr != nil {
		if spec.exitErr != nil {
			return spec.exitErr(runErr)
		}
		return runErr
	}
	return probeVerdictErr(spec.name, out.verdict, out.checks)
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

// probeSection returns the probe's section (section picks it, nil when
// absent) of the profile --profile names (ref: built-in name or file),
// once check (the probe's CheckProfile) accepts the profile; nil without
// ref. A profile without the section is bad input (exit 2) naming name
// (probe.mqtt), a bad value in it is check's error at the value's
// file:line:col.
func probeSection[S any](ref, name string, section func(*profiles.Profile) *S, check func(*profiles.Profile) error) (*S, error) {
	if ref == "" {
		return nil, nil
	}
	p, err := profiles.Load(ref, nil)
	if err != nil {
		return nil, err
	}
	sec := section(p)
	if sec == nil {
		return nil, exitcode.BadInputf("--profile %s has no %s section: add one, or leave --profile out and pass the load as flags", ref, name)
	}
	if err := check(p); err != nil {
		return nil, err
	}
	return sec, nil
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

// probeResult is a probe run's result as the probe commands print it.
type probeResult interface {
	WriteText(io.Writer) error
	WriteCSV(io.Writer) error
	WriteHTML(io.Writer) error
}

// write prints res on out (text, or indented JSON), then writes the --csv
// and --html files (writeReportFile). When the run ended with runErr and
// *stopReason (the result's own field) is empty, runErr becomes the stop
// reason before the HTML is written, so that report says INCOMPLETE and
// why. Errors are out's, or the files' (exit 3).
func (o probeOutputs) write(out io.Writer, res probeResult, stopReason *string, runErr error) error {
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
	if runErr != nil && *stopReason == "" {
		*stopReason = runErr.Error() // the report says INCOMPLETE and why
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
