package verdict

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// JUnit XML (the Jenkins/Ant schema most CI systems read): one <testcase>
// per check. A failed check is a <failure>; a warning is a PASSING
// testcase whose <system-out> carries the warning; a skipped check is
// <skipped/>. A testcase is never both skipped and failed.

// JUnitTestSuites is the document root.
type JUnitTestSuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Suites   []JUnitTestSuite `xml:"testsuite"`
}

// JUnitTestSuite is one run (e.g. "hostprep preflight").
type JUnitTestSuite struct {
	Name     string          `xml:"name,attr"`
	Tests    int             `xml:"tests,attr"`
	Failures int             `xml:"failures,attr"`
	Errors   int             `xml:"errors,attr"`
	Skipped  int             `xml:"skipped,attr"`
	Time     string          `xml:"time,attr"`
	Cases    []JUnitTestCase `xml:"testcase"`
}

// JUnitTestCase is one check.
type JUnitTestCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *JUnitMessage `xml:"failure,omitempty"`
	Skipped   *JUnitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitMessage is a <failure> or <skipped> element.
type JUnitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// details renders observed / expected / remedy as lines.
func details(c Check) string {
	var b strings.Builder
	for _, kv := range [][2]string{{"observed", c.Observed}, {"expected", c.Expected}, {"remedy", c.Remedy}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", kv[0], kv[1])
		}
	}
	return b.String()
}

// JUnit builds the JUnit document for checks; suite names the run
// ("hostprep preflight") and is the classname prefix of every case.
func JUnit(suite string, checks []Check) JUnitTestSuites {
	s := JUnitTestSuite{Name: suite, Time: "0"}
	class := strings.ReplaceAll(suite, " ", ".")
	for _, c := range checks {
		tc := JUnitTestCase{Name: c.ID, Classname: class, Time: "0"}
		switch c.Status {
		case Fail:
			tc.Failure = &JUnitMessage{Message: c.Summary, Type: "fail", Text: details(c)}
			s.Failures++
		case Skip:
			tc.Skipped = &JUnitMessage{Message: c.Summary}
			s.Skipped++
		case Warn:
			tc.SystemOut = "WARNING: " + c.Summary + "\n" + details(c)
		default:
			tc.SystemOut = c.Summary + "\n" + details(c)
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	return JUnitTestSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Skipped: s.Skipped, Suites: []JUnitTestSuite{s}}
}

// WriteJUnit writes checks as a JUnit XML document to w.
func WriteJUnit(w io.Writer, suite string, checks []Check) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(JUnit(suite, checks)); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
