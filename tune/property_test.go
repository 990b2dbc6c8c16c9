package tune

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// genValue draws a value for key within the kernel's shape for it.
func genValue(t *rapid.T, key, label string) string {
	switch key {
	case "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem":
		a := rapid.IntRange(1024, 8192).Draw(t, label+".min")
		b := rapid.IntRange(a, 262144).Draw(t, label+".def")
		c := rapid.IntRange(b, 33554432).Draw(t, label+".max")
		return fmt.Sprintf("%d %d %d", a, b, c)
	case "net.ipv4.ip_local_port_range":
		lo := rapid.IntRange(1024, 40000).Draw(t, label+".lo")
		hi := rapid.IntRange(lo+1, 65535).Draw(t, label+".hi")
		return fmt.Sprintf("%d %d", lo, hi)
	case "fs.nr_open", "fs.file-max":
		return fmt.Sprint(rapid.IntRange(65536, 4194304).Draw(t, label))
	default:
		return fmt.Sprint(rapid.IntRange(1, 1<<20).Draw(t, label))
	}
}

var propKeys = []string{
	"fs.nr_open", "fs.file-max", "net.core.somaxconn", "net.core.rmem_max",
	"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_fin_timeout",
	"net.ipv4.ip_local_port_range",
}

func genProfile(t *rapid.T, name string) *profiles.Profile {
	p := &profiles.Profile{Name: name, Sysctl: map[string]profiles.Sysctl{}}
	for _, k := range propKeys {
		if !rapid.Bool().Draw(t, name+".has."+k) {
			continue
		}
		mode := rapid.SampledFrom([]profiles.Mode{"", profiles.Exact, profiles.AtLeast, profiles.AtMost}).Draw(t, name+".mode."+k)
		if k == "net.ipv4.ip_local_port_range" {
			mode = profiles.Exact // a range is not a bound
		}
		p.Sysctl[k] = profiles.Sysctl{Value: genValue(t, k, name+"."+k), Mode: mode}
	}
	if rapid.Bool().Draw(t, name+".nofile") {
		hard := uint64(rapid.IntRange(1024, 4194304).Draw(t, name+".hard"))
		soft := uint64(rapid.IntRange(1024, int(hard)).Draw(t, name+".soft"))
		p.Limits.Nofile = &profiles.Limit{Soft: soft, Hard: hard}
	}
	if rapid.Bool().Draw(t, name+".svc") {
		p.Systemd.Services = []string{rapid.SampledFrom([]string{"emqx", "mosquitto", "iotdb-datanode"}).Draw(t, name+".unit")}
		p.Systemd.LimitNOFILE = &profiles.Limit{Soft: 65536, Hard: 65536}
		if rapid.Bool().Draw(t, name+".tasks") {
			m := profiles.TasksMax(rapid.IntRange(1, profiles.MaxTasks).Draw(t, name+".tasksmax"))
			if rapid.IntRange(0, 4).Draw(t, name+".infinity") == 0 {
				m = profiles.TasksInfinity
			}
			p.Systemd.TasksMax = &m
		}
	}
	p.ReservePorts = rapid.SliceOfN(rapid.IntRange(1024, 65535), 0, 3).Draw(t, name+".reserve")
	return p
}

// TestPropertyApplyRollbackRestoresExactly: from random starting values
// and random pre-existing owned files, one to three applies of random
// profiles (some refused; some with a unit's TasksMax= in its drop-in)
// followed by rollback give back every value and every file byte for
// byte, and a refused apply changes nothing.
func TestPropertyApplyRollbackRestoresExactly(t *testing.T) {
	var succeeded, refused int
	defer func() {
		t.Logf("applies: %d succeeded, %d refused as bad input", succeeded, refused)
		if succeeded < 20 {
			t.Errorf("only %d applies succeeded: the generator no longer exercises apply/rollback", succeeded)
		}
	}()
	rapid.Check(t, func(rt *rapid.T) {
		start := map[string]string{}
		for _, k := range propKeys {
			start[k] = strings.ReplaceAll(genValue(rt, k, "host."+k), " ", "\t")
		}
		start["net.ipv4.ip_local_reserved_ports"] = rapid.SampledFrom([]string{"", "22", "8080-8090", "1883,50000"}).Draw(rt, "host.reserved")
		h := newHost(t, start)
		if rapid.Bool().Draw(rt, "host.ownedfile") {
			// An admin's file where hostprep writes: restored byte for byte.
			body := rapid.StringMatching(`[a-z# =0-9\n]{0,80}`).Draw(rt, "host.body")
			must(t, os.WriteFile(filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf"), []byte(body), 0o640))
		}
		before := h.snapshot()
		n := rapid.IntRange(1, 3).Draw(rt, "applies")
		applied := 0
		for i := 0; i < n; i++ {
			p := genProfile(rt, fmt.Sprintf("p%d", i))
			mid := h.snapshot()
			_, err := Apply(context.Background(), p, Options{Env: h.env})
			if err != nil {
				refused++
				if exitcode.Code(err) != exitcode.BadInput {
					rt.Fatalf("apply %s: unexpected %v", p.Name, err)
				}
				if d := diffSnapshots(mid, h.snapshot(), true); len(d) > 0 {
					rt.Fatalf("refused apply changed the host: %v", d)
				}
				continue
			}
			applied++
			succeeded++
			// Applying the same profile again changes nothing.
			res, err := Apply(context.Background(), p, Options{Env: h.env})
			if err != nil || res.Changed {
				rt.Fatalf("re-apply %s: changed %v err %v changes %+v", p.Name, res != nil && res.Changed, err, res)
			}
		}
		r, err := Rollback(context.Background(), h.env)
		if err != nil {
			rt.Fatalf("rollback: %v", err)
		}
		if len(r.Left) > 0 {
			rt.Fatalf("rollback left %+v with no foreign change", r.Left)
		}
		if d := diffSnapshots(before, h.snapshot(), false); len(d) > 0 {
			sort.Strings(d)
			rt.Fatalf("after %d applies and rollback the host differs:\n  %s", applied, strings.Join(d, "\n  "))
		}
	})
}
