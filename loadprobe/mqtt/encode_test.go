package mqtt

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
)

// appendPublish must produce what the mochi codec's PublishEncode does.
func TestAppendPublishMatchesMochi(t *testing.T) {
	for _, v := range []byte{4, 5} {
		for _, qos := range []byte{0, 1, 2} {
			for _, dup := range []bool{false, true} {
				for _, size := range []int{24, 200, 130, 20000} {
					for _, topic := range []string{"t", "hostprep/abc/17", strings.Repeat("x", 300)} {
						id := uint16(0)
						if qos > 0 {
							id = 513
						}
						payload := bytes.Repeat([]byte{7}, size)
						pk := packets.Packet{
							FixedHeader:     packets.FixedHeader{Type: packets.Publish, Qos: qos, Dup: dup},
							ProtocolVersion: v, TopicName: topic, PacketID: id, Payload: payload,
						}
						var want bytes.Buffer
						if err := pk.PublishEncode(&want); err != nil {
							t.Fatal(err)
						}
						got := appendPublish([]byte("junk")[:0], v == 5, dup, qos, topic, id, payload)
						if !bytes.Equal(got, want.Bytes()) {
							t.Fatalf("v%d qos %d dup %v size %d topic %d: got % x\nwant % x", v, qos, dup, size, len(topic), got[:16], want.Bytes()[:16])
						}
					}
				}
			}
		}
	}
}

func TestEventHeapOrder(t *testing.T) {
	var h eventHeap
	ats := []int64{5, 3, 9, 1, 1, 7, 2, 8, 6, 4, 0, 3}
	for i, a := range ats {
		h.push(event{at: a, client: int32(i)})
	}
	prev := int64(-1)
	for len(h) > 0 {
		e := h.pop()
		if e.at < prev {
			t.Fatalf("out of order: %d after %d", e.at, prev)
		}
		prev = e.at
	}
}
