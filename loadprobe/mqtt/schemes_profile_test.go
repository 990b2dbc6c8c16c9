package mqtt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// A profile accepts exactly the broker schemes the probe accepts (both
// parse with brokerurl.Parse), so a profile that validates never fails
// later in `hostprep ready`.
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

// TestBrokerURLWithPasswordIsRefused: a password written into the broker
// URL (tcp://user:password@host) would be printed in every report, HTML
// page and log that names the broker. The profile and the probe refuse
// it (exit 2), and the error never echoes the password.
func TestBrokerURLWithPasswordIsRefused(t *testing.T) {
	const secret = "S3cr3tPW"
	for _, broker := range []string{"tcp://alice:" + secret + "@127.0.0.1:1883", "mqtts://" + secret + "@127.0.0.1", "tcp://a:" + secret + " x@h:1883"} {
		_, err := profiles.Parse("p.yaml", []byte(fmt.Sprintf("probe:\n  mqtt:\n    broker: %q\n", broker)))
		if err == nil || exitcode.Code(err) != exitcode.BadInput || strings.Contains(err.Error(), secret) {
			t.Errorf("profile broker %s: %v", broker, err)
		}
		c := Defaults()
		c.Broker = broker
		err = c.Validate()
		if err == nil || exitcode.Code(err) != exitcode.BadInput || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "xxxxx@") {
			t.Errorf("--broker %s: %v", broker, err)
		}
	}
}

// TestBrokerURLPartsBeyondHostPortAreRefused: the probe dials only
// SCHEME://HOST[:PORT]; a path, a query or a fragment was ignored yet
// printed in every report (tcp://h:1883?password=pw showed the password
// in the JSON's broker and config.broker, the HTML and the logs). For
// every scheme the probe and a profile refuse them (exit 2), and the
// error never echoes what they held.
func TestBrokerURLPartsBeyondHostPortAreRefused(t *testing.T) {
	const secret = "Zq9UrlPW"
	for _, scheme := range BrokerSchemes {
		for _, tail := range []string{"?password=" + secret, "/" + secret, "#" + secret, "/", "?"} {
			broker := scheme + "://127.0.0.1:18831" + tail
			c := Defaults()
			c.Broker = broker
			err := c.Validate()
			if err == nil || exitcode.Code(err) != exitcode.BadInput || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "--broker") {
				t.Errorf("--broker %s: want exit 2 naming --broker without the secret, got %v", broker, err)
			}
			_, err = profiles.Parse("p.yaml", []byte(fmt.Sprintf("probe:\n  mqtt:\n    broker: %q\n", broker)))
			if err == nil || exitcode.Code(err) != exitcode.BadInput || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "probe.mqtt.broker") {
				t.Errorf("profile broker %s: want exit 2 naming probe.mqtt.broker without the secret, got %v", broker, err)
			}
		}
	}
}
