package ready

import (
	"context"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/loadprobe/mqtt"
	"github.com/hostprep/hostprep/profiles"
)

// ready's MQTT probe errors name ready's flags: a broker given with
// --mqtt that nothing listens on says "fix --mqtt", never --broker (a
// flag of `hostprep probe mqtt` that ready does not have).
func TestMQTTErrorsNameReadyFlags(t *testing.T) {
	cfg, skip := mqttConfig(&profiles.Profile{Name: "p"}, Options{Probes: at("mqtt", "tcp://127.0.0.1:1")})
	if skip != "" {
		t.Fatal(skip)
	}
	cfg.Clients, cfg.ConnRate = 1, 1
	_, err := mqtt.Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "fix --mqtt") || strings.Contains(err.Error(), "--broker") {
		t.Errorf("unreachable --mqtt: want the error to name --mqtt, got %v", err)
	}
	cfg.Broker = "ftp://x"
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--mqtt \"ftp://x\"") {
		t.Errorf("bad --mqtt URL: want it named --mqtt, got %v", err)
	}
}
