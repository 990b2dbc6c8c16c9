package mqtt

import (
	"fmt"
	"strings"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

// Protocol is how the broker's answers matched the flows the probe began
// (MQTT 3.1.1 §4.3, MQTT 5 §4.3): each ack is checked against the PUBLISH
// it answers, never taken as the right one because it carries the packet
// id. A broker that answers with another flow than the one asked (RabbitMQ
// 3.10's MQTT plugin answers a QoS 2 PUBLISH with PUBACK) is not tested
// at the QoS asked, and the run fails mqtt.protocol saying so.
type Protocol struct {
	// GrantedQoS is the QoS each subscriber's SUBACK granted (by
	// subscriber), which bounds the QoS of every delivery to it.
	GrantedQoS []int `json:"granted_qos,omitempty"`
	// Downgraded are QoS 2 publishes the broker answered with PUBACK, the
	// QoS 1 flow: neither acknowledged at QoS 2 (not in Messages.Acked)
	// nor unacknowledged, and not in the ack latencies (one round trip,
	// not QoS 2's two).
	Downgraded int64 `json:"downgraded,omitempty"`
	// WrongAck are acks of a packet type the flow does not allow at that
	// point: PUBREC to a QoS 1 PUBLISH, PUBCOMP before any PUBREC. Like
	// Downgraded they are neither acked nor unacked.
	WrongAck int64 `json:"wrong_ack,omitempty"`
	// First describes the first wrong answer ("QoS 2 PUBLISH packet id 7
	// answered with PUBACK").
	First string `json:"first,omitempty"`
}

// Kinds of wrong answer (wrongAck).
const (
	faultNone = iota
	faultDowngrade
	faultWrongType
)

// wrongAck judges an ack of type typ that ended a PUBLISH flow of the
// run's QoS (gotRec: a PUBREC came first): faultNone when it is the
// flow's last packet, faultDowngrade for a PUBACK to QoS 2, faultWrongType
// for a PUBCOMP at QoS 1 or before PUBREC.
func (r *run) wrongAck(typ byte, gotRec bool) int {
	switch {
	case r.cfg.QoS == 2 && typ == packets.Puback:
		return faultDowngrade
	case typ == packets.Pubcomp && (r.cfg.QoS != 2 || !gotRec):
		return faultWrongType
	}
	return faultNone
}

// packetName is the MQTT name of a control packet type.
func packetName(typ byte) string {
	if n, ok := packets.PacketNames[typ]; ok {
		return strings.ToUpper(n) // as the specification spells them
	}
	return fmt.Sprintf("packet type %d", typ)
}

// protocolFault counts one wrong answer (kind, of packet type typ, for
// packet id) and keeps the first's description.
func (r *run) protocolFault(kind int, typ byte, id uint16) {
	if kind == faultDowngrade {
		r.downgraded.Add(1)
	} else {
		r.wrongAcks.Add(1)
	}
	if r.firstFault.Load() {
		return
	}
	r.mu.Lock()
	if r.firstFaultText == "" {
		r.firstFaultText = fmt.Sprintf("QoS %d PUBLISH packet id %d answered with %s", r.cfg.QoS, id, packetName(typ))
		if kind == faultWrongType && typ == packets.Pubcomp && r.cfg.QoS == 2 {
			r.firstFaultText += " before any PUBREC"
		}
		r.firstFault.Store(true)
	}
	r.mu.Unlock()
}

// protocolCheck is mqtt.protocol: every broker answer fits the flow the
// probe began, and every subscription was granted the QoS asked. It
// fails otherwise, naming the cause: a run whose QoS 2 publishes were
// answered with PUBACK did not test QoS 2.
func protocolCheck(cfg *Config, p Protocol) verdict.Check {
	c := verdict.Check{ID: "mqtt.protocol", Status: verdict.Pass,
		Expected: fmt.Sprintf("QoS %d flows answered as QoS %d (%s), subscriptions granted QoS %d", cfg.QoS, cfg.QoS, flowName(cfg.QoS), cfg.QoS)}
	var bad []string
	if p.Downgraded > 0 {
		bad = append(bad, fmt.Sprintf("the broker answered QoS 2 PUBLISH with PUBACK (%s): it does not support QoS 2 (exactly-once is not being tested)", plural.N(p.Downgraded, "time")))
		c.Remedy = "use a broker that supports QoS 2, or run with --qos 1"
	}
	if p.WrongAck > 0 {
		bad = append(bad, fmt.Sprintf("the broker answered %s with a packet the QoS %d flow does not allow (first: %s)", plural.N(p.WrongAck, "publish"), cfg.QoS, p.First))
		if c.Remedy == "" {
			c.Remedy = "the broker (or a proxy in between) breaks the MQTT flow: check its version and log"
		}
	}
	for i, g := range p.GrantedQoS {
		if g < cfg.QoS {
			bad = append(bad, fmt.Sprintf("subscriber #%d got QoS %d granted for a QoS %d subscription: deliveries are at QoS %d", i, g, cfg.QoS, g))
			if c.Remedy == "" {
				c.Remedy = fmt.Sprintf("use a broker that grants QoS %d, or run with --qos %d", cfg.QoS, g)
			}
		}
	}
	c.Observed = fmt.Sprintf("%d downgraded, %d wrong acks, granted QoS %v", p.Downgraded, p.WrongAck, p.GrantedQoS)
	if len(bad) == 0 {
		c.Summary = fmt.Sprintf("every answer fit the QoS %d flow (%s)", cfg.QoS, flowName(cfg.QoS))
		return c
	}
	c.Status = verdict.Fail
	c.Summary = strings.Join(bad, "; ")
	return c
}

// flowName is the packets that answer a PUBLISH of qos.
func flowName(qos int) string {
	switch qos {
	case 1:
		return "PUBACK"
	case 2:
		return "PUBREC, PUBREL, PUBCOMP"
	}
	return "no answer"
}

// flowEnd is the packet that ends a PUBLISH flow of qos (1 or 2).
func flowEnd(qos int) string {
	if qos == 2 {
		return "PUBCOMP"
	}
	return "PUBACK"
}
