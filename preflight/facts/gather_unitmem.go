package facts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
)

// unitMemory fills Target.Memory for a unit that is not running with the
// memory limits its next start gets, as memCgroup does for a running
// process: its own hard limit (MemoryMax=, or the legacy MemoryLimit=
// when no cgroup v2 style setting is made: unitMem.hard) from its files
// and, when systemd has it loaded, from props (systemctl show; nil when
// not asked) — the lower of the two, naming both when they differ, as
// unitTasks does for TasksMax= — with no usage (it holds nothing yet);
// and those of its slice and every slice above it (levels, from
// unitSlices; unseen what of its Slice= could not be read), less what
// that slice's cgroup uses now. The one that leaves the least room is
// the limit; on cgroup v2 MemoryHigh= the same way. What cannot be read
// is named in Unseen, never taken for no limit.
func (g *Gatherer) unitMemory(unit string, u unitNofile, props map[string]string, levels []sliceLevel, unseen []string) {
	m := &g.F.Target.Memory
	m.Unit = unit
	m.Unseen = append(m.Unseen, unseen...)
	own, unseen, err := g.readUnitMem(u.files, "Service")
	m.Unseen = append(m.Unseen, unseen...)
	if err != nil {
		m.Unseen = append(m.Unseen, fmt.Sprintf("the memory settings of %s (%v)", unit, err))
		return
	}
	v1 := g.memV1()
	mems, floors, unseen := g.slicesMem(levels)
	m.Unseen = append(m.Unseen, unseen...)
	anc := memFloor{}
	if len(floors) > 0 {
		anc = floors[0].below(mems[0])
	}
	limit, from := own.hard(anc)
	high, highFrom := own.high()
	for _, f := range []*string{&from, &highFrom} {
		if *f != "" {
			*f += fmt.Sprintf(" of %s (not running)", unit)
		}
	}
	if loaded, ok := loadedMem(props); ok {
		l, lfrom := loaded.hard(anc)
		limit, from = loadedOrFilesMem(unit, limit, from, l, lfrom)
		h, hfrom := loaded.high()
		high, highFrom = loadedOrFilesMem(unit, high, highFrom, h, hfrom)
	}
	var hard, soft cgroupLimit
	if limit != Unlimited {
		hard = cgroupLimit{limit: limit, from: from}
	}
	if high != Unlimited {
		if v1 {
			g.note("%s has no effect: the memory controller here is cgroup v1's, which has no memory.high", highFrom)
		} else {
			soft = cgroupLimit{limit: high, from: highFrom}
		}
	}
	for i, l := range levels {
		if mems[i] == nil {
			continue
		}
		h, sh, unseen := g.sliceMemory(l, mems[i], floors[i], v1)
		m.Unseen = append(m.Unseen, unseen...)
		hard, soft = lessRoom(hard, h), lessRoom(soft, sh)
	}
	m.Limit, m.Usage, m.From, m.SockCharged = hard.limit, hard.usage, hard.from, !v1
	m.High, m.HighUsage, m.HighFrom = soft.limit, soft.usage, soft.from
	m.Slice, m.HighSlice = hard.slice, soft.slice
}

// slicesMem reads the memory settings of each slice of levels (nil for
// one that cannot be read, named in unseen) and the memFloor each gets
// from the slices above it.
func (g *Gatherer) slicesMem(levels []sliceLevel) (mems []unitMem, floors []memFloor, unseen []string) {
	mems, floors = make([]unitMem, len(levels)), make([]memFloor, len(levels))
	for i, l := range levels {
		err := l.err
		var u []string
		if err == nil {
			mems[i], u, err = g.readUnitMem(l.files, "Slice")
			unseen = append(unseen, u...)
		}
		if err != nil {
			mems[i] = nil
			unseen = append(unseen, fmt.Sprintf("the memory settings of %s (%v)", l.name, err))
		}
	}
	anc := memFloor{}
	for i := len(levels) - 1; i >= 0; i-- {
		floors[i] = anc
		anc = anc.below(mems[i])
	}
	return mems, floors, unseen
}

// lessRoom is the one of a and b (cgroupLimit, from "" for none) that
// leaves less room under its limit.
func lessRoom(a, b cgroupLimit) cgroupLimit {
	if b.from != "" && (a.from == "" || b.room() < a.room()) {
		return b
	}
	return a
}

// loadedOrFilesMem picks the lower of what a unit's files set (bytes,
// Unlimited for none; from "" when no file sets it) and what systemd has
// loaded (systemctl show; lfrom "KEY=VALUE (systemctl show)"), naming
// both when they differ: the loaded one applies at the next start until
// `systemctl daemon-reload`, the files' after it and at the next boot.
func loadedOrFilesMem(unit string, files uint64, from string, loaded uint64, lfrom string) (uint64, string) {
	if loaded == files {
		return files, from
	}
	says, setting := from, strings.TrimSuffix(lfrom, " (systemctl show)")
	if says == "" {
		says = "no limit"
	}
	differ := fmt.Sprintf("systemd has %s loaded but the files say %s: the next start uses the loaded one until `systemctl daemon-reload`, the next boot the files; judged on the lower", setting, says)
	if loaded < files {
		return loaded, fmt.Sprintf("%s (systemctl show %s, not running); %s", setting, unit, differ)
	}
	return files, from + "; " + differ
}

// memV1 says whether the memory controller is cgroup v1's
// (/sys/fs/cgroup/memory, also on a hybrid host).
func (g *Gatherer) memV1() bool {
	_, err := os.Stat(g.path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	return err == nil
}

// sliceCgroup is a slice's cgroup path below the hierarchy's root
// ("system-getty.slice": /system.slice/system-getty.slice).
func SliceCgroup(slice string) string {
	chain := hostconf.SliceChain(slice)
	p := "/"
	for i := len(chain) - 1; i >= 0; i-- {
		p = path.Join(p, chain[i])
	}
	return p
}

// sliceMemory is the hard limit and (cgroup v2) MemoryHigh= a slice's
// files set (m, its [Slice] settings; the hard one as anc, the floor from
// the slices above, decides), each with the usage of the slice's cgroup
// now (its working set: usage less inactive page cache; 0 when it has no
// cgroup, nothing running in it) and the setting that gives it; from is
// "" for no limit, and names the slice as l.label. What cannot be read is
// unseen.
func (g *Gatherer) sliceMemory(l sliceLevel, m unitMem, anc memFloor, v1 bool) (hard, high cgroupLimit, unseen []string) {
	key := m.hardKey(anc)
	limit, from := m.hard(anc)
	hi, hiFrom := m.high()
	if v1 || hi == Unlimited {
		hiFrom = ""
	}
	if limit == Unlimited && hiFrom == "" {
		return hard, high, nil
	}
	usage, file, err := g.cgroupUsage(SliceCgroup(l.name), v1)
	if err != nil {
		return hard, high, []string{fmt.Sprintf("the memory usage of %s, which its files limit (%v)", l.label, err)}
	}
	where := fmt.Sprintf(" of %s (usage: %s)", l.label, file)
	if limit != Unlimited {
		s := m[key]
		hard = cgroupLimit{limit: limit, usage: usage, from: from + where, slice: &SliceRef{Slice: l.name, Key: key, Value: s.value, At: s.where}}
	}
	if hiFrom != "" {
		s := m["MemoryHigh"]
		high = cgroupLimit{limit: hi, usage: usage, from: hiFrom + where, slice: &SliceRef{Slice: l.name, Key: "MemoryHigh", Value: s.value, At: s.where}}
	}
	return hard, high, nil
}

// cgroupUsage reads the memory a cgroup (a path below the hierarchy's
// root) uses now, bytes, less its inactive page cache as memCgroup
// counts it, and the usage file: v1 memory.usage_in_bytes, else v2
// memory.current (under /sys/fs/cgroup/unified on a hybrid host). A
// cgroup that does not exist uses 0 ("none now"). Errors: a usage file
// that cannot be read or parsed.
func (g *Gatherer) cgroupUsage(cg string, v1 bool) (uint64, string, error) {
	dir, usage, stat := path.Join("/sys/fs/cgroup/memory", cg), "memory.usage_in_bytes", "total_inactive_file"
	if !v1 {
		base := "/sys/fs/cgroup"
		if _, err := os.Stat(g.path("/sys/fs/cgroup/cgroup.controllers")); err != nil {
			base = "/sys/fs/cgroup/unified"
		}
		dir, usage, stat = path.Join(base, cg), "memory.current", "inactive_file"
	}
	if _, err := os.Stat(g.path(dir)); errors.Is(err, fs.ErrNotExist) {
		return 0, "none now, " + dir + " does not exist", nil
	}
	file := path.Join(dir, usage)
	b, err := os.ReadFile(g.path(file))
	if err != nil {
		return 0, file, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, file, err
	}
	return n - min(n, g.memStat(path.Join(dir, "memory.stat"), stat)), file, nil
}
