package outcome

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/hostprep/hostprep/internal/verdict"
)

// JUnit XML as CI systems read it (GitLab artifacts:reports:junit, the
// GitHub junit report actions, Jenkins): one <testsuite> per step, one
// <testcase> per check or probe threshold. A failed check is a <failure>,
// a step that could not run is an <error>, a skipped check is <skipped>,
// and a warning is a passing test case whose <system-out> says why (never
// both skipped and failed).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Hostname  string      `xml:"hostname,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func secs(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }

func detail(c verdict.Check) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", c.Summary)
	if c.Observed != "" {
		fmt.Fprintf(&b, "observed: %s\n", c.Observed)
	}
	if c.Expected != "" {
		fmt.Fprintf(&b, "expected: %s\n", c.Expected)
	}
	if c.Remedy != "" {
		fmt.Fprintf(&b, "fix: %s\n", c.Remedy)
	}
	return b.String()
}

// WriteJUnit writes r as JUnit XML (see above). Test case names are
// "step/check-id"; the class name is "hostprep.ready.<step>".
func WriteJUnit(w io.Writer, r *Result) error {
	all := junitSuites{Name: "hostprep ready " + r.Profile + " on " + r.Host + ": " + string(r.Verdict), Time: secs(r.DurationMS)}
	for _, s := range r.Steps {
		su := junitSuite{Name: s.Name, Hostname: r.Host, Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05"), Time: secs(s.DurationMS)}
		class := "hostprep.ready." + s.Name
		failedCheck := false
		for _, c := range s.Checks {
			tc := junitCase{Name: s.Name + "/" + c.ID, Classname: class, Time: "0"}
			switch c.Status {
			case verdict.Fail:
				tc.Failure = &junitMessage{Message: c.Summary, Type: "fail", Text: detail(c)}
				su.Failures++
				failedCheck = true
			case verdict.Skip:
				tc.Skipped = &junitMessage{Message: c.Summary}
				su.Skipped++
			case verdict.Warn:
				tc.SystemOut = "WARNING: " + detail(c)
			default:
				tc.SystemOut = detail(c)
			}
			su.Cases = append(su.Cases, tc)
		}
		// The step itself is a test case when it has no checks of its own
		// or when it failed without a failed check (it could not run).
		if len(s.Checks) == 0 || (s.Verdict == verdict.Fail && !failedCheck) {
			tc := junitCase{Name: s.Name, Classname: class, Time: secs(s.DurationMS)}
			switch {
			case s.Verdict == verdict.Fail && s.Error != "":
				tc.Error = &junitMessage{Message: s.Error, Type: "could-not-run", Text: s.Summary}
				su.Errors++
			case s.Verdict == verdict.Fail:
				tc.Failure = &junitMessage{Message: s.Summary, Type: "fail"}
				su.Failures++
			case s.Verdict == verdict.Skip:
				tc.Skipped = &junitMessage{Message: s.Summary}
				su.Skipped++
			case s.Verdict == verdict.Warn:
				tc.SystemOut = "WARNING: " + s.Summary
			default:
				tc.SystemOut = s.Summary
			}
			su.Cases = append(su.Cases, tc)
		}
		su.Tests = len(su.Cases)
		all.Tests += su.Tests
		all.Failures += su.Failures
		all.Errors += su.Errors
		all.Skipped += su.Skipped
		all.Suites = append(all.Suites, su)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
