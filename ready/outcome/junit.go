package outcome

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/hostprep/hostprep/internal/verdict"
)

func secs(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }

// JUnit builds the JUnit document of a ready run with the shared writer of
// internal/verdict: one <testsuite> per step ("hostprep ready tune", ...),
// one <testcase> per check or probe threshold. A failed check is a
// <failure>, a skipped one <skipped/>, a warning a passing case whose
// <system-out> says why. A step with no checks is one case of its own; a
// step that could not run is a <failure> of type "could-not-run" carrying
// the error.
func JUnit(r *Result) verdict.JUnitTestSuites {
	all := verdict.JUnitTestSuites{Name: "hostprep ready " + r.Profile + " on " + r.Host + ": " + string(r.Verdict)}
	for _, s := range r.Steps {
		name := "hostprep ready " + s.Name
		su := verdict.JUnit(name, s.Checks).Suites[0]
		su.Time = secs(s.DurationMS)
		failedCheck := false
		for _, c := range s.Checks {
			failedCheck = failedCheck || c.Status == verdict.Fail
		}
		if len(s.Checks) == 0 || (s.Verdict == verdict.Fail && !failedCheck) {
			tc := verdict.JUnitTestCase{Name: s.Name, Classname: "hostprep.ready." + s.Name, Time: secs(s.DurationMS)}
			switch {
			case s.Verdict == verdict.Fail && s.Error != "":
				tc.Failure = &verdict.JUnitMessage{Message: s.Error, Type: "could-not-run", Text: s.Summary}
				su.Failures++
			case s.Verdict == verdict.Fail:
				tc.Failure = &verdict.JUnitMessage{Message: s.Summary, Type: "fail"}
				su.Failures++
			case s.Verdict == verdict.Skip:
				tc.Skipped = &verdict.JUnitMessage{Message: s.Summary}
				su.Skipped++
			case s.Verdict == verdict.Warn:
				tc.SystemOut = "WARNING: " + s.Summary
			default:
				tc.SystemOut = s.Summary
			}
			su.Cases = append(su.Cases, tc)
			su.Tests++
		}
		all.Tests += su.Tests
		all.Failures += su.Failures
		all.Errors += su.Errors
		all.Skipped += su.Skipped
		all.Suites = append(all.Suites, su)
	}
	return all
}

// WriteJUnit writes JUnit(r) as XML.
func WriteJUnit(w io.Writer, r *Result) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(JUnit(r)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
