package facts

// ownFacts gathers the facts OwnProcessChecks and OwnProcessFD judge: the
// calling process as a loadgen target holding sockets from sourceIPs
// (default 127.0.0.1) to one destination. err says its RLIMIT_NOFILE
// could not be read (the ports facts are there all the same).
func OwnFacts(sockets int, sourceIPs []string, nofile uint64) (*Facts, Target, error) {
	g := &Gatherer{Root: "/", F: &Facts{Sysctl: map[string]string{}}}
	for _, k := range []string{"net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports", "fs.nr_open"} {
		g.sysctl(k)
	}
	t := Target{Sockets: max(sockets, 1), Role: Loadgen, SourceIPs: sourceIPs, ConnRate: DefaultConnRate}
	if len(sourceIPs) == 0 {
		t.SourceIPs = []string{"127.0.0.1"}
	}
	tp := &g.F.Target
	tp.ManagedBy, tp.Source = "shell", "this process (/proc/self/limits)"
	soft, hard, err := readNofile(g.path("/proc/self/limits"))
	if nofile > 0 {
		soft, hard, err, tp.Source = nofile, nofile, nil, "the limit given to the probe"
	}
	if err != nil {
		return g.F, t, err
	}
	tp.NofileSoft, tp.NofileHard = soft, hard
	tp.CapSysResource, _ = g.hasCap(g.selfPID(), "CapEff", CapSysResource)
	bnd, berr := g.hasCap(g.selfPID(), "CapBnd", CapSysResource)
	tp.NoRaiseBound = berr == nil && !bnd
	g.pid1()
	if nofile > 0 {
		g.F.HereNofileHard = nofile
	}
	return g.F, t, nil
}
