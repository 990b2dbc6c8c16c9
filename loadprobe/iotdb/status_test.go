package iotdb

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/iotdbfault"
)

// A DataNode that cannot create another schema region answers 906 when the
// probe creates its schema (seen on the test server holding a few
// databases): the probe exits 3 with one line saying what it means and
// what to do, not just IoTDB's raw message.
func TestStatus906AtSetupIsExplained(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	srv.SetSchemaCode(906)
	host, port := srv.HostPort()
	res, err := Run(context.Background(), Config{Host: host, Port: port, Steps: []int{1}, StepDuration: 200 * time.Millisecond, Warmup: -1,
		SettingNames: probeFlags(&Config{})}) // as `hostprep probe iotdb` names them
	if res != nil {
		t.Errorf("a probe that failed before measuring returned a result to render: %+v", res)
	}
	if exitcode.Code(err) != exitcode.Environment {
		t.Fatalf("err %v (code %d), want exit 3", err, exitcode.Code(err))
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{"906", "NO_AVAILABLE_REGION_GROUP", "schema", "--database", "memory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
}

// Status codes met during the load become suggestions that point at the
// server setting or privilege behind them.
func TestStatusCodesDuringLoadBecomeSuggestions(t *testing.T) {
	for code, want := range map[int32]struct{ setting, name, fix string }{
		719: {"DataNode memory", "QUERY_EXECUTION_MEMORY_NOT_ENOUGH", "raise the DataNode's memory"},
		803: {"privileges", "NO_PERMISSION", "grant the privilege"},
		906: {"DataNode memory", "NO_AVAILABLE_REGION_GROUP", "--database"},
	} {
		res := faultRun(t, iotdbfault.Status, ScenarioWrite, func(srv *iotdbfault.Server, c *Config) { srv.SetCode(code) })
		found := false
		for _, g := range res.Suggestions {
			if g.Setting == want.setting && strings.Contains(g.Observed, want.name) && strings.Contains(g.Fix, want.fix) {
				found = true
			}
		}
		if !found {
			t.Errorf("status %d: suggestions %+v, want %s naming %s with fix %q", code, res.Suggestions, want.setting, want.name, want.fix)
		}
		var text strings.Builder
		_ = res.WriteText(&text)
		if !strings.Contains(text.String(), want.name) {
			t.Errorf("status %d: the text report does not explain it:\n%s", code, text.String())
		}
	}
}

// --database names a database that must exist: without the check IoTDB's
// schema auto-creation would quietly create one.
func TestDatabaseMustExist(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	host, port := srv.HostPort()
	_, err := Run(context.Background(), Config{Host: host, Port: port, Database: "root.nosuch", Steps: []int{1}, StepDuration: 200 * time.Millisecond, Warmup: -1})
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "database root.nosuch does not exist") || !strings.Contains(err.Error(), "root.nosuch") {
		t.Fatalf("--database root.nosuch on a server without it: %v, want exit 3 'does not exist'", err)
	}
	if err := (Config{Database: "root.a*"}).Validate(); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("--database root.a*: %v, want bad input", err)
	}
}

// The text report lists a step's status codes in one order, sorted, so
// two reports of the same run read (and diff) the same. It followed Go's
// random map order.
func TestStatusCodesListedInOrder(t *testing.T) {
	codes := map[string]int64{"301": 1, "507": 2, "602": 1, "700": 4, "719": 1, "803": 2, "906": 3, "913": 1}
	want := " (status codes: 301 x1, 507 x2, 602 x1, 700 x4, 719 x1, 803 x2, 906 x3, 913 x1)"
	for range 20 {
		if got := codeSummary(codes); got != want {
			t.Fatalf("codeSummary = %q, want %q", got, want)
		}
	}
}
