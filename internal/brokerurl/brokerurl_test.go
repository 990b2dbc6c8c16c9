package brokerurl

import (
	"strings"
	"testing"
)

var login = Login{User: "--username", Password: "--password-file or $HOSTPREP_MQTT_PASSWORD"}

// A broker URL is SCHEME://HOST[:PORT] for every scheme: a part the
// probe would ignore (user information, a path, a query, a fragment) is
// refused, and the error never echoes what that part held.
func TestParseRefusesEveryPartBeyondHostAndPort(t *testing.T) {
	const secret = "Zq9UrlPW"
	for _, scheme := range Schemes() {
		for _, tail := range []string{"?password=" + secret, "/" + secret, "/", "?", "#" + secret, "#", "/x?password=" + secret, "?password=a@" + secret} {
			raw := scheme + "://127.0.0.1:18831" + tail
			_, err := Parse(raw, "--broker", login)
			if err == nil {
				t.Errorf("%s: accepted", raw)
				continue
			}
			msg := err.Error()
			if strings.Contains(msg, secret) || !strings.HasPrefix(msg, "--broker ") || strings.Contains(msg, "\n") {
				t.Errorf("%s: want a one-line error naming --broker without the secret: %s", raw, msg)
			}
		}
		for _, raw := range []string{scheme + "://alice:" + secret + "@127.0.0.1:18831", scheme + "://" + secret + "@127.0.0.1", scheme + "://u:1#" + secret + "@h:1883", scheme + "://u:" + secret + "/x@h:1883"} {
			_, err := Parse(raw, "--mqtt", Login{User: "--mqtt-user", Password: "--mqtt-password-file"})
			if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "xxxxx") || !strings.Contains(err.Error(), "--mqtt-user") {
				t.Errorf("%s: %v", raw, err)
			}
		}
	}
}

func TestParseAccepts(t *testing.T) {
	for raw, want := range map[string]Endpoint{
		"tcp://127.0.0.1:18831": {Scheme: "tcp", Host: "127.0.0.1", Port: "18831"},
		"mqtt://broker":         {Scheme: "mqtt", Host: "broker", Port: "1883"},
		"mqtts://[::1]":         {Scheme: "mqtts", Host: "::1", Port: "8883", TLS: true},
		"tls://h:9000":          {Scheme: "tls", Host: "h", Port: "9000", TLS: true},
	} {
		got, err := Parse(raw, "--broker", login)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"ws://h:80", "tcp://:1883", "tcp://h:0", "tcp://h:65536", "tcp:h:1883", "h:1883", "tcp://h:x"} {
		if _, err := Parse(raw, "--broker", login); err == nil {
			t.Errorf("%s: accepted", raw)
		}
	}
}

func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://127.0.0.1:18831?password=Zq9UrlPW": "tcp://127.0.0.1:18831?xxxxx",
		"tcp://127.0.0.1:18831/Zq9path":           "tcp://127.0.0.1:18831/xxxxx",
		"tcp://h:1883/p?q#f":                      "tcp://h:1883/xxxxx?xxxxx#xxxxx",
		"tcp://a:pw@h:1883?x":                     "tcp://xxxxx@h:1883?xxxxx",
		"tcp://h x:1883?password=pw":              "tcp://h x:1883?xxxxx",
		"tcp://127.0.0.1:1883":                    "tcp://127.0.0.1:1883",
	} {
		if got := Shown(in); got != want {
			t.Errorf("Shown(%q) = %q, want %q", in, got, want)
		}
	}
}
