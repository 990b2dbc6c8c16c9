package facts

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// procNetInitIno is the inode number of the initial network namespace
// (PROC_NET_INIT_INO in include/linux/proc_ns.h): /proc/self/ns/net shows
// net:[4026531833] when hostprep shares the host's network namespace.
const procNetInitIno = 4026531833

// clock reads the kernel's clock discipline state with adjtimex(2) in
// read-only mode (modes 0): STA_UNSYNC set means nothing (NTP, PTP,
// timesyncd) disciplines the clock.
func (g *Gatherer) clock() {
	if g.rep != nil {
		g.F.Clock = g.rep.Clock
		return
	}
	if !g.live() {
		return // a fixture root has no clock to ask
	}
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		g.note("adjtimex: %v", err)
		return
	}
	g.F.Clock = Clock{
		Known:      true,
		Synced:     tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR,
		MaxErrorUS: int64(tx.Maxerror),
	}
}

// container detects containment the way systemd-detect-virt does for the
// common engines, and whether the network namespace is the host's.
func (g *Gatherer) container() {
	if g.rep != nil {
		g.F.Container = g.rep.Container
		return
	}
	c := Container{}
	switch {
	case exists(g.path("/.dockerenv")):
		c.Kind = "docker"
	case exists(g.path("/run/.containerenv")):
		c.Kind = "podman"
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "" && g.Root == "/":
		c.Kind = "kubernetes"
	}
	if c.Kind == "" {
		if b, err := os.ReadFile(g.path("/proc/1/environ")); err == nil {
			for _, kv := range strings.Split(string(b), "\x00") {
				if v, ok := strings.CutPrefix(kv, "container="); ok && v != "" {
					c.Kind = v
				}
			}
		}
	}
	if c.Kind == "" {
		if b, err := os.ReadFile(g.path("/proc/self/cgroup")); err == nil {
			s := string(b)
			for _, k := range []string{"kubepods", "docker", "lxc", "containerd"} {
				if strings.Contains(s, k) {
					c.Kind = k
					break
				}
			}
		}
	}
	if g.Root == "/" {
		var st unix.Stat_t
		if err := unix.Stat("/proc/self/ns/net", &st); err == nil {
			c.OwnNetNS = st.Ino != procNetInitIno
		}
	}
	g.F.Container = c
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
