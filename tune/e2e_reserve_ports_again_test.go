package tune_test

import (
	"encoding/json"
	"testing"
)

// TestE2EReservePortsSecondApplyChangesNothing: the sysctl.d file's
// comment on net.ipv4.ip_local_reserved_ports named only the ports of
// reserve_ports an apply added, so the second apply, which found them
// reserved already, dropped the comment and rewrote the file ("1
// change"). The comment now names them either way: the second apply of
// the same profile changes nothing, with the key in the profile or
// derived from reserve_ports alone.
func TestE2EReservePortsSecondApplyChangesNothing(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	for name, body := range map[string]string{
		"with-key.yaml": "sysctl:\n  net.ipv4.ip_local_port_range: \"1024 65000\"\n  net.ipv4.ip_local_reserved_ports: \"9000, 8000-8002\"\nreserve_ports: [1883]\n",
		"derived.yaml":  "sysctl:\n  net.ipv4.ip_local_port_range: \"1024 65000\"\nreserve_ports: [1883]\n",
	} {
		p := writeProfile(t, name, body)
		for i := 1; i <= 2; i++ {
			out, e, c := n.Hostprep("tune", "apply", "--profile", p, "-o", "json")
			var res struct {
				Changed bool `json:"changed"`
			}
			if c != 0 || json.Unmarshal([]byte(out), &res) != nil {
				t.Fatalf("%s apply %d: exit %d\n%s%s", name, i, c, out, e)
			}
			if i == 2 && res.Changed {
				t.Errorf("%s: the second apply changed something:\n%s", name, out)
			}
		}
		if out, e, c := n.Hostprep("tune", "rollback"); c != 0 {
			t.Fatalf("%s rollback: exit %d\n%s%s", name, c, out, e)
		}
	}
}
