// Package probes is the list of hostprep's probes (loadprobe.Probe):
// `hostprep probe`, `hostprep ready` and `hostprep report` loop over it.
// A new probe is its own package plus one line in All (docs/probes.md).
package probes

import (
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/iotdb"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// All are the probes, in the order ready runs them.
var All = []loadprobe.Probe{
	mqtt.Probe,
	iotdb.Probe,
}

// Lookup returns the probe named name, or nil.
func Lookup(name string) loadprobe.Probe {
	for _, p := range All {
		if p.Name() == name {
			return p
		}
	}
	return nil
}
