package facts

// OwnFacts gathers the facts OwnProcessChecks and OwnProcessFD judge: the
// calling process (targetSelf) as a loadgen target holding sockets from
// sourceIPs (default 127.0.0.1) to one destination. nofile > 0 stands for
// both its soft and hard limit. err says its RLIMIT_NOFILE could not be
// read (the ports facts are there all the same).
func OwnFacts(sockets int, sourceIPs []string, nofile uint64) (*Facts, Target, error) {
	g := &Gatherer{Root: "/", F: &Facts{Sysctl: map[string]string{}}}
	for _, k := range []string{"net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports", "fs.nr_open"} {
		g.sysctl(k)
	}
	t := Target{Sockets: max(sockets, 1), Role: Loadgen, SourceIPs: sourceIPs, ConnRate: DefaultConnRate}
	if len(sourceIPs) == 0 {
		t.SourceIPs = []string{"127.0.0.1"}
	}
	g.systemd()
	g.pid1()
	err := g.targetSelf()
	if nofile > 0 {
		tp := &g.F.Target
		tp.Self, tp.NofileSoft, tp.NofileHard, tp.Source, err = true, nofile, nofile, "the limit given to the probe", nil
		g.F.HereNofileHard = nofile
	}
	return g.F, t, err
}
