package main

import (
	"io"
	"os"
	"strings"

	"github.com/hostprep/hostprep/internal/atomicfile"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/profiles"
)

// What the probe commands (probe mqtt, probe iotdb) share: where the
// password comes from, output files checked before the load and written
// after it, and the exit code of a failed verdict.

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
		return nil, exitcode.BadInputf("--profile %s has no %s section: add one or pass the load as flags", ref, name)
	}
	if err := check(p); err != nil {
		return nil, err
	}
	return sec, nil
}

// probePassword returns the password from file (its content without the
// trailing newline) when file is set, else from the environment variable
// env. An unreadable file is bad input (exit 2) naming --password-file.
func probePassword(file, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", exitcode.BadInputf("--password-file %s: %v", file, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// probeCheckFiles fails with bad input (exit 2) naming the flag when an
// output file (flag -> path; empty paths are skipped) could not be
// written later, so an unwritable --csv fails before loading the server.
// It creates nothing: a run that fails before measuring leaves no file.
func probeCheckFiles(files map[string]string) error {
	for flag, path := range files {
		if err := atomicfile.Check(flag, path); err != nil {
			return err
		}
	}
	return nil
}

// probeOutputs are where a probe's result goes: Format (--output: text or
// json) on stdout, and the --csv and --html files ("" writes none).
type probeOutputs struct {
	Format, CSV, HTML string
}

// checkFiles fails with bad input (exit 2) when --csv or --html could not
// be written later (probeCheckFiles).
func (o probeOutputs) checkFiles() error {
	return probeCheckFiles(map[string]string{"--csv": o.CSV, "--html": o.HTML})
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
