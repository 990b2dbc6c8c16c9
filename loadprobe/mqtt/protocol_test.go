package mqtt

import (
	"context"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/mochi-mqtt/server/v2/packets"
)

// TestQoS2AnsweredWithPubackIsDowngraded guards the field case
// qos2-answered-with-puback.md against a real RabbitMQ 3.10 (its MQTT
// plugin answers a QoS 2 PUBLISH with PUBACK and grants QoS 1 to a QoS 2
// subscription): those publishes are counted as downgraded, not as
// acknowledged, their one round trip is not reported as a QoS 2 ack
// latency, and mqtt.protocol fails naming the cause and the fix.
func TestQoS2AnsweredWithPubackIsDowngraded(t *testing.T) {
	broker := testenv.RabbitMQ(t)
	noLeak(t)
	cfg := small(broker, 10)
	cfg.QoS = 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res)
	m, p := res.Messages, res.Protocol
	if m.Published == 0 || p.Downgraded != m.Published || m.Acked != 0 || m.Unacked != 0 {
		t.Errorf("published %d, downgraded %d, acked %d, unacked %d: want every publish downgraded, none acked or unacked", m.Published, p.Downgraded, m.Acked, m.Unacked)
	}
	if n := res.Latency.Ack.Count + res.Latency.WarmupAck.Count; n != 0 {
		t.Errorf("%d PUBLISH->PUBACK round trips reported as QoS 2 ack latencies", n)
	}
	if len(p.GrantedQoS) != 1 || p.GrantedQoS[0] != 1 {
		t.Errorf("granted QoS %v, want [1] (RabbitMQ grants QoS 1 to a QoS 2 subscription)", p.GrantedQoS)
	}
	c := testenv.CheckByID(t, res.Checks, "mqtt.protocol")
	if c.Status != verdict.Fail || !strings.Contains(c.Summary, "answered QoS 2 PUBLISH with PUBACK") ||
		!strings.Contains(c.Summary, "does not support QoS 2") || !strings.Contains(c.Remedy, "--qos 1") {
		t.Errorf("mqtt.protocol = %s %q fix %q, want a failure naming the PUBACK answer and --qos 1", c.Status, c.Summary, c.Remedy)
	}
	if ack := testenv.CheckByID(t, res.Checks, "mqtt.ack_p95"); ack.Status == verdict.Pass {
		t.Errorf("mqtt.ack_p95 passed on no QoS 2 flow: %q", ack.Summary)
	}
	if res.Verdict != verdict.Fail {
		t.Errorf("verdict %s, want fail", res.Verdict)
	}
}

// TestQoS1FlowFitsOnRabbitMQ guards the other side of mqtt.protocol: a
// broker that answers QoS 1 as QoS 1 passes it, every PUBACK counted as
// acknowledged.
func TestQoS1FlowFitsOnRabbitMQ(t *testing.T) {
	broker := testenv.RabbitMQ(t)
	noLeak(t)
	cfg := small(broker, 10)
	cfg.QoS = 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res)
	if c := testenv.CheckByID(t, res.Checks, "mqtt.protocol"); c.Status != verdict.Pass {
		t.Errorf("mqtt.protocol = %s %q, want pass", c.Status, c.Summary)
	}
	if m := res.Messages; m.Acked != m.Published || m.Published == 0 {
		t.Errorf("acked %d of %d published", m.Acked, m.Published)
	}
}

// TestQoS2FlowFitsOnMosquitto: mosquitto runs the whole QoS 2 flow
// (PUBREC, PUBREL, PUBCOMP) and grants QoS 2, so mqtt.protocol passes.
func TestQoS2FlowFitsOnMosquitto(t *testing.T) {
	broker := testenv.MQTTBroker(t)
	noLeak(t)
	cfg := small(broker, 10)
	cfg.QoS = 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res)
	c := testenv.CheckByID(t, res.Checks, "mqtt.protocol")
	if c.Status != verdict.Pass || len(res.Protocol.GrantedQoS) != 1 || res.Protocol.GrantedQoS[0] != 2 {
		t.Errorf("mqtt.protocol = %s %q (granted %v), want pass with QoS 2 granted", c.Status, c.Summary, res.Protocol.GrantedQoS)
	}
}

// TestAckOfAnotherFlowIsNotAcknowledged: an ack whose type the flow does
// not allow (here PUBCOMP to a QoS 1 PUBLISH, which no installable broker
// sends, so a proxy rewrites mosquitto's PUBACK) is not taken as the ack
// because it carries the packet id: it fails mqtt.protocol naming the
// first one.
func TestAckOfAnotherFlowIsNotAcknowledged(t *testing.T) {
	broker := testenv.MQTTBroker(t)
	noLeak(t)
	url := startProxy(t, broker, &faultProxy{rewriteAck: 7}) // packets.Pubcomp
	cfg := small(url, 5)
	cfg.QoS = 1
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res)
	m, p := res.Messages, res.Protocol
	if m.Published == 0 || p.WrongAck != m.Published || m.Acked != 0 {
		t.Errorf("published %d, wrong acks %d, acked %d: want every PUBCOMP counted as a wrong ack", m.Published, p.WrongAck, m.Acked)
	}
	c := testenv.CheckByID(t, res.Checks, "mqtt.protocol")
	if c.Status != verdict.Fail || !strings.Contains(c.Summary, "answered with PUBCOMP") {
		t.Errorf("mqtt.protocol = %s %q, want a failure naming the PUBCOMP", c.Status, c.Summary)
	}
}

// TestAckJudgingAllocatesNothing guards the hot path: judging an ack
// against its flow (a PUBACK at QoS 1, a downgrading PUBACK at QoS 2)
// allocates nothing per message.
func TestAckJudgingAllocatesNothing(t *testing.T) {
	for _, qos := range []int{1, 2} {
		cfg := small("tcp://127.0.0.1:1", 1)
		cfg.QoS = qos
		r := newRun(&cfg, 1, brokerAddr{hostport: "127.0.0.1:1"}, nil)
		r.perSec.Store(newSecCounts(0, 4))
		c := &conn{r: r, client: 0, fd: -1, inflight: make([]inflight, 0, 4)}
		pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: 7}
		allocs := testing.AllocsPerRun(1000, func() {
			c.inflight = append(c.inflight, inflight{id: 7})
			if err := c.handle(&pk, 1); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("QoS %d: %.1f allocations per PUBACK judged, want 0", qos, allocs)
		}
		if qos == 2 && r.downgraded.Load() == 0 {
			t.Error("QoS 2: the PUBACK was not counted as downgraded")
		}
	}
}
