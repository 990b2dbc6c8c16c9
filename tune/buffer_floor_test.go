package tune

import (
	"strconv"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/kerneltrial"
	"github.com/hostprep/hostprep/profiles"
)

// A socket buffer key below the running kernel's floor (SOCK_MIN_RCVBUF
// for rmem_*, SOCK_MIN_SNDBUF for wmem_*, asked with a socket: these keys
// are global, no namespace can try them) is refused before any write,
// naming the floor; at the floor it plans.
func TestSocketBufferKeysNotBelowKernelFloor(t *testing.T) {
	rcv, snd, err := kerneltrial.BufferFloors()
	if err != nil {
		t.Skip(err)
	}
	h := newHost(t, nil)
	before := h.snapshot()
	for key, floor := range map[string]int64{"net.core.rmem_max": rcv, "net.core.wmem_default": snd} {
		p := &profiles.Profile{Name: "low", Sysctl: map[string]profiles.Sysctl{key: {Value: strconv.FormatInt(floor-1, 10), Mode: profiles.Exact}}}
		_, err := h.apply(p)
		wantCode(t, err, exitcode.BadInput, key, `use "`+strconv.FormatInt(floor, 10)+`"`)
		h.assertUnchanged(before)
		p.Sysctl[key] = profiles.Sysctl{Value: strconv.FormatInt(floor, 10), Mode: profiles.Exact}
		if _, err := NewPlan(p, h.env); err != nil {
			t.Errorf("%s at the floor %d: %v", key, floor, err)
		}
	}
}
