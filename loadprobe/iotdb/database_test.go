package iotdb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iotdb-client-go/client"
)

// testSession opens a plain client session to the test IoTDB.
func testSession(t *testing.T, cfg Config) *client.Session {
	t.Helper()
	c := cfg.withDefaults()
	s := client.NewSession(&client.Config{Host: c.Host, Port: strconv.Itoa(c.Port), UserName: c.User, Password: c.Password})
	if err := s.Open(false, 5000); err != nil {
		t.Fatalf("open session: %v", err)
	}
	return &s
}

// timeseries lists the time series under path (show timeseries path.**), sorted.
func timeseries(t *testing.T, s *client.Session, path string) []string {
	t.Helper()
	out := column(t, s, "show timeseries "+path+".**", "Timeseries")
	slices.Sort(out)
	return out
}

// --database with a database the test created: the probe writes only under
// it (root.x.hostprep_<id>.d<N>), creates no database, and deletes only its
// own series afterwards (the test's series stays).
func TestDatabaseWritesOnlyUnderExistingDatabase(t *testing.T) {
	cfg := realConfig(t, ScenarioMixed)
	s := testSession(t, cfg)
	defer s.Close()
	db := fmt.Sprintf("root.hostprep_dbtest_%d", time.Now().UnixNano()%1_000_000_000)
	if err := s.ExecuteNonQueryStatement("CREATE DATABASE " + db); err != nil {
		t.Fatalf("create %s: %v", db, err)
	}
	defer func() {
		if err := s.ExecuteNonQueryStatement("DELETE DATABASE " + db); err != nil {
			t.Errorf("delete %s: %v", db, err)
		}
	}()
	mine := db + ".other.s1"
	if err := s.CreateTimeseries(mine, client.INT32, client.PLAIN, client.SNAPPY, nil, nil); err != nil {
		t.Fatalf("create %s: %v", mine, err)
	}
	before := databases(t, cfg)

	cfg.Database, cfg.Steps, cfg.StepDuration = db, []int{2}, time.Second
	var during []string
	cfg.OnStep = func(Step) { during = timeseries(t, s, db) }
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	_ = res.WriteText(&text)
	t.Log("\n" + text.String())
	if res.Database != db || res.CreatedDatabase || !strings.HasPrefix(res.Prefix, db+".hostprep_") || res.Kept {
		t.Errorf("database %q prefix %q created %v kept %v: want writes under the existing %s, nothing kept", res.Database, res.Prefix, res.CreatedDatabase, res.Kept, db)
	}
	if res.Steps[0].OK == 0 || res.Steps[0].Errors != 0 {
		t.Errorf("step: %d ok, %d errors (%v)", res.Steps[0].OK, res.Steps[0].Errors, res.Steps[0].ErrorSamples)
	}
	// During the run: the test's series and the probe's, all under the prefix.
	if len(during) != res.Series+1 || !slices.Contains(during, mine) {
		t.Errorf("during the run %d series under %s (%v...), want the probe's %d and %s", len(during), db, during[:min(3, len(during))], res.Series, mine)
	}
	for _, p := range during {
		if p != mine && !strings.HasPrefix(p, res.Prefix+".d") {
			t.Errorf("series %s is neither the test's nor under the probe's prefix %s", p, res.Prefix)
		}
	}
	if after := timeseries(t, s, db); !slices.Equal(after, []string{mine}) {
		t.Errorf("after the run %s holds %v, want only the test's %s", db, after, mine)
	}
	// Other tests may share the server: look only for this run's id and db.
	runID := res.Prefix[strings.LastIndex(res.Prefix, "hostprep_")+len("hostprep_"):]
	after := databases(t, cfg)
	for _, d := range after {
		if strings.Contains(d, runID) {
			t.Errorf("database %s appeared: the probe created a database under --database", d)
		}
	}
	if !slices.Contains(after, db) || !slices.Contains(before, db) {
		t.Errorf("database %s missing before (%v) or after the run (%v)", db, before, after)
	}
}
