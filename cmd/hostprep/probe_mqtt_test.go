package main

import (
	"testing"

	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// Every layered MQTT probe setting (a Config field with a `flag` tag, and
// the thresholds) is a flag of `hostprep probe mqtt`, so mqtt.Resolve can
// take it from the command line: a new Config setting without a flag
// fails here.
func TestProbeMQTTOffersEverySetting(t *testing.T) {
	cmd := newProbeMQTTCmd()
	for _, name := range mqtt.Settings() {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("mqtt.Config setting %q has no --%s flag on `hostprep probe mqtt`", name, name)
		}
	}
}
