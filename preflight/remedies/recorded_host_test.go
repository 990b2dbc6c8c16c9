package remedies

import (
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/internal/hosttest"
)

func host(t *testing.T, y string) *facts.Facts { t.Helper(); return hosttest.Host(t, y) }

func message(c verdict.Check) string { return hosttest.Message(c) }
