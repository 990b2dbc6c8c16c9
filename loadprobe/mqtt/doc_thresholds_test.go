package mqtt

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// docs/profiles.md states the thresholds a probe.mqtt section without
// them is judged against, as DefaultThresholds has them (never that
// thresholds left out are not checked).
func TestDocStatesDefaultThresholds(t *testing.T) {
	b, err := os.ReadFile("../../docs/profiles.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, th := string(b), DefaultThresholds()
	for _, want := range []string{
		"`loss: " + fmtF(*th.Loss) + "`", "`connect_fail_rate: " + fmtF(*th.ConnectFailRate) + "`",
		"`connect_p95: " + th.ConnectP95.String() + "`", "`ack_p95: " + th.AckP95.String() + "`", "`e2e_p99: " + th.E2EP99.String() + "`",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/profiles.md does not state the default threshold %s", want)
		}
	}
	if strings.Contains(doc, "Thresholds left out are\nnot checked") {
		t.Error("docs/profiles.md still says thresholds left out are not checked")
	}
}

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
