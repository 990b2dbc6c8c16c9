package kerneltrial

import "testing"

// Two names of one kernel variable (net.ipv4.ip_forward and
// net.ipv4.conf.all.forwarding) given different values: each write is
// taken, but the later one changes the earlier key, which the trial
// reports as MovedTo, so a plan can refuse what an apply could never
// settle. Two keys that only agree are not marked, and neither is an
// interface's key tried on the entry that the same batch writes itself.
func TestTrialFindsKeysTheKernelTies(t *testing.T) {
	if _, err := read(path("net.ipv4.ip_forward")); err != nil {
		t.Skip("no net.ipv4.ip_forward here")
	}
	res := trial(t, Write{Key: "net.ipv4.ip_forward", Value: "1"}, Write{Key: "net.ipv4.conf.all.forwarding", Value: "0"})
	if !res[0].Accepted || res[0].MovedTo != "0" || res[1].MovedTo != "" {
		t.Fatalf("%+v\n%+v: want ip_forward taken and then moved to 0 by all.forwarding", res[0], res[1])
	}
	res = trial(t, Write{Key: "net.ipv4.ip_forward", Value: "1"}, Write{Key: "net.ipv4.conf.all.forwarding", Value: "1"})
	if res[0].MovedTo != "" || res[1].MovedTo != "" {
		t.Fatalf("%+v\n%+v: agreeing values marked as moved", res[0], res[1])
	}
	res = trial(t, Write{Key: "net.ipv4.conf.hp9.log_martians", Value: "0"}, Write{Key: "net.ipv4.conf.default.log_martians", Value: "1"})
	if res[0].TriedAs == "" || res[0].MovedTo != "" {
		t.Fatalf("%+v: an interface's key tried on default, which the batch writes too, marked as moved", res[0])
	}
}
