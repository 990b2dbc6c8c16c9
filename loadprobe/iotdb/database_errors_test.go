package iotdb

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// Errors about the database say what is wrong: a user without privileges
// is told so (SHOW DATABASES hides the database from it, so it must not
// read "no such database" for one that exists), a kept run id's database
// is named as already existing (not as the user's right to create
// databases), and an unreachable --node-urls names that setting, with no
// developer script in the text.
func TestDatabaseErrorsPointTheRightWay(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.StepDuration = []int{1}, 500*time.Millisecond
	s := testSession(t, cfg)
	defer s.Close()
	id := time.Now().UnixNano() % 1_000_000_000
	db, user := fmt.Sprintf("root.hostprep_errtest_%d", id), fmt.Sprintf("hostprep_errtest_%d", id)
	if err := s.ExecuteNonQueryStatement("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	defer s.ExecuteNonQueryStatement("DELETE DATABASE " + db)
	if err := s.ExecuteNonQueryStatement("CREATE USER " + user + " 'Errtest_pw123'"); err != nil {
		t.Fatal(err)
	}
	defer s.ExecuteNonQueryStatement("DROP USER " + user)

	c := cfg
	c.User, c.Password, c.Database = user, "Errtest_pw123", db
	_, err := Run(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "has no privileges") || strings.Contains(err.Error(), "does not exist") {
		t.Errorf("user without privileges, existing database: want it told it has no privileges, got %v", err)
	}
	c = cfg
	c.Database = db + "_none"
	if _, err := Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "database "+c.Database+" does not exist") {
		t.Errorf("root, missing database: want does not exist, got %v", err)
	}

	c = cfg
	c.RunID, c.Keep = fmt.Sprintf("errtest%d", id), true
	res, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.ExecuteNonQueryStatement("DELETE DATABASE " + res.Prefix)
	_, err = Run(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "database "+res.Prefix+" already exists") || !strings.Contains(err.Error(), "DELETE DATABASE "+res.Prefix) ||
		strings.Contains(err.Error(), "may create databases") {
		t.Errorf("kept run id reused: want already exists and how to delete it, got %v", err)
	}

	c = cfg
	c.NodeURLs, c.UnreachableAfter = []string{"127.0.0.1:1"}, 2*time.Second
	c.SettingNames = probeFlags(&c)
	_, err = Run(context.Background(), c)
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "--node-urls") || strings.Contains(err.Error(), "--host") || strings.Contains(err.Error(), "scripts/") {
		t.Errorf("unreachable node urls: want exit 3 naming --node-urls and no scripts/ hint, got %v", err)
	}

	// hostprep ready gave the address as --iotdb: the error names that.
	c = cfg
	c.Host, c.Port, c.SettingNames, c.UnreachableAfter = "127.0.0.1", 1, map[string]string{"address": "--iotdb"}, 2*time.Second
	_, err = Run(context.Background(), c)
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "is --iotdb a DataNode") || strings.Contains(err.Error(), "--host") {
		t.Errorf("unreachable --iotdb: want exit 3 naming --iotdb, not --host, got %v", err)
	}
}
