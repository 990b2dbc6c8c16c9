package mqtt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// checkOffered asserts that every message of the asked load is accounted
// for: sent (= published) or not sent for one reason, in the whole run
// and in the window.
func checkOffered(t *testing.T, res *Result) {
	t.Helper()
	o := res.Offered
	if o.Sent+o.NotSentConnect+o.NotSentLost+o.NotSentCut != o.Asked {
		t.Errorf("asked %d != sent %d + not sent: connect %d, lost %d, cut %d", o.Asked, o.Sent, o.NotSentConnect, o.NotSentLost, o.NotSentCut)
	}
	if o.WindowSent+o.WindowNotSentConnect+o.WindowNotSentLost+o.WindowNotSentCut != o.WindowAsked {
		t.Errorf("window asked %d != sent %d + not sent: connect %d, lost %d, cut %d", o.WindowAsked, o.WindowSent, o.WindowNotSentConnect, o.WindowNotSentLost, o.WindowNotSentCut)
	}
	if o.Sent != res.Messages.Published {
		t.Errorf("offered sent %d != published %d", o.Sent, res.Messages.Published)
	}
	if o.WindowSent != res.Throughput.WindowPublished {
		t.Errorf("window sent %d != window published %d", o.WindowSent, res.Throughput.WindowPublished)
	}
}

// TestOfferedLoadUnderConnectionResets guards the offered-load
// accounting against a broker that resets a third of its connections
// mid-run (a proxy in front of the real mosquitto: no real broker does
// it on demand), at QoS 0, 1 and 2: the window's asked load is every
// client's slots (clients × duration / interval), every one of them is
// sent or not sent because its client lost its connection (or, with a
// sixth of the connects refused, failed to connect), and mqtt.schedule
// fails because the offered rate is more than 2% short of the asked one,
// whatever the cause. The loss rate is over the asked load.
func TestOfferedLoadUnderConnectionResets(t *testing.T) {
	broker := testenv.MQTTBroker(t)
	for _, tc := range []struct {
		qos    int
		refuse int
	}{{0, 0}, {1, 6}, {2, 0}} {
		t.Run(fmt.Sprintf("qos%d", tc.qos), func(t *testing.T) {
			noLeak(t)
			cfg := small(broker, 30)
			cfg.QoS = tc.qos
			cfg.Duration = 2 * time.Second
			ramp := time.Duration(float64(cfg.Clients) / cfg.ConnRate * float64(time.Second))
			url := startProxy(t, broker, &faultProxy{closeAfter: ramp + 700*time.Millisecond, resetEvery: 3, refuseEvery: tc.refuse})
			cfg.Broker = url
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, res)
			checkOffered(t, res)
			o := res.Offered
			t.Logf("offered: %s", o.text())
			if want := int64(cfg.Clients) * int64(cfg.Duration/cfg.PubInterval); o.WindowAsked != want {
				t.Errorf("window asked %d, want %d clients x %d slots", o.WindowAsked, cfg.Clients, cfg.Duration/cfg.PubInterval)
			}
			if o.NotSentLost == 0 || o.WindowNotSentLost == 0 {
				t.Errorf("no message counted as not sent because of a lost connection: %+v", o)
			}
			if tc.refuse > 0 && o.NotSentConnect == 0 {
				t.Errorf("no message counted as not sent because its client failed to connect: %+v", o)
			}
			if o.NotSentCut != 0 {
				t.Errorf("%d messages not sent because the run ended first, in a run that went its course", o.NotSentCut)
			}
			c := testenv.CheckByID(t, res.Checks, "mqtt.schedule")
			if c.Status != verdict.Fail || !strings.Contains(c.Summary, "of the "+fmt.Sprintf("%.1f", o.AskedPerSec)+" msg/s asked") ||
				!strings.Contains(c.Summary, "lost its connection") {
				t.Errorf("mqtt.schedule = %s %q, want a failure naming the asked rate and the lost connections", c.Status, c.Summary)
			}
			if want := float64(res.Messages.Lost) / float64(o.Asked); res.Messages.LossRate != want {
				t.Errorf("loss rate %v, want lost %d / asked %d", res.Messages.LossRate, res.Messages.Lost, o.Asked)
			}
			var text strings.Builder
			_ = res.WriteText(&text)
			if !strings.Contains(text.String(), "offered ") || !strings.Contains(text.String(), "(connection lost)") {
				t.Errorf("text has no offered line:\n%s", text.String())
			}
			var html strings.Builder
			if err := res.WriteHTML(&html); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(html.String(), "published (offered ") || !strings.Contains(html.String(), "Offered load:") {
				t.Error("HTML report shows no offered against asked rate")
			}
		})
	}
}

// TestOfferedLoadHealthyRun: against the real mosquitto with nothing in
// between, everything asked is sent and mqtt.schedule does not fail.
func TestOfferedLoadHealthyRun(t *testing.T) {
	broker := testenv.MQTTBroker(t)
	noLeak(t)
	cfg := small(broker, 10)
	cfg.QoS = 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkOffered(t, res)
	o := res.Offered
	if o.Asked == 0 || o.NotSent() != 0 {
		t.Errorf("asked %d, not sent %d, want everything sent", o.Asked, o.NotSent())
	}
	if c := testenv.CheckByID(t, res.Checks, "mqtt.schedule"); c.Status == verdict.Fail {
		t.Errorf("mqtt.schedule failed on a healthy run: %q", c.Summary)
	}
}
