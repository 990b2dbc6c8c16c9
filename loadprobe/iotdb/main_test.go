package iotdb

import (
	"io"
	"log"
	"os"
	"testing"
)

// TestMain silences the client library's log.Println chatter ("get
// session timeout" per failed wait), which the CLI routes to slog at info.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}
