package mqtt

import (
	"fmt"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// A profile accepts exactly the broker schemes the probe accepts, so a
// profile that validates never fails later in `hostprep ready`.
func TestProfileBrokerSchemesMatchTheProbe(t *testing.T) {
	for _, scheme := range append(append([]string{}, BrokerSchemes...), "ws", "wss", "http") {
		doc := fmt.Sprintf("probe:\n  mqtt:\n    broker: %s://127.0.0.1:1883\n", scheme)
		_, err := profiles.Parse("schemes.yaml", []byte(doc))
		want := false
		for _, s := range BrokerSchemes {
			want = want || s == scheme
		}
		if got := err == nil; got != want {
			t.Errorf("profile broker %s://: accepted %v, the probe accepts it: %v (err %v)", scheme, got, want, err)
		}
	}
}
