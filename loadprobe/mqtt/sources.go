package mqtt

import (
	"fmt"
	"net"
	"strings"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight"
)

// maxSourcesTried bounds the source addresses sourcesNeeded tries: past
// it the remedy says "more than" instead of a number.
const maxSourcesTried = 4096

// sourcesNeeded is the fewest source addresses (the given ips plus made-up
// distinct IPv4 ones) with which preflight's ports.ephemeral passes for
// sockets connections on this host, found by asking the check itself
// (preflight.OwnProcessChecks); 0 when even maxSourcesTried do not.
// A client bound to its source (bind(src, 0) before connect()) holds its
// port on that source whatever the destination, so more source
// addresses is the remedy that helps it; more destination endpoints do
// not, and the probe has one --broker anyway.
func sourcesNeeded(sockets int, ips []net.IP) int {
	given := map[string]bool{}
	var src []string
	for _, ip := range ips {
		if !given[ip.String()] {
			given[ip.String()] = true
			src = append(src, ip.String())
		}
	}
	with := func(k int) []string {
		out := append([]string(nil), src...)
		for n := uint32(0x7f000002); len(out) < k; n++ { // 127.0.0.2 on
			ip := net.IPv4(byte(n>>24), byte(n>>16), byte(n>>8), byte(n)).String()
			if !given[ip] {
				out = append(out, ip)
			}
		}
		return out
	}
	passes := func(k int) bool {
		return preflight.OwnProcessChecks(sockets, with(k), 0)[1].Status != verdict.Fail
	}
	lo, hi := max(1, len(src)), max(2, 2*len(src)) // lo fails (the caller saw it), hi to try
	for !passes(hi) {
		if hi >= maxSourcesTried {
			return 0
		}
		lo, hi = hi, min(2*hi, maxSourcesTried)
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; passes(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// portsRemedy is the probe's fix for a ports.ephemeral failure c with
// the clients bound to ips (none: one source, the route's): its summary
// up to its remedies, then the number of source addresses that hold the
// load (proven by the check) or a wider port range. Never more
// destination endpoints: a bound client gets nothing from them, and the
// probe connects to one --broker.
func portsRemedy(c verdict.Check, clients, sockets int, ips []net.IP) string {
	sum, _, _ := strings.Cut(c.Summary, "; need ")
	need := sourcesNeeded(sockets, ips)
	src := fmt.Sprintf("spread the clients over more source addresses than %d with --source-ips", max(1, len(ips)))
	if need > 0 {
		src = fmt.Sprintf("spread the clients over %d source addresses with --source-ips (e.g. 127.0.0.2-127.0.0.%d for a broker on loopback; ports.ephemeral passes with them)", need, min(255, need+1))
	}
	return fmt.Sprintf("--clients %d: %s; %s, or widen net.ipv4.ip_local_port_range (hostprep tune)", clients, sum, src)
}
