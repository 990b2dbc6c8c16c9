package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/tune/boot"
)

// unitMemory fills Target.Memory for a unit that is not running with the
// memory limits its next start gets, as memCgroup does for a running
// process: its own hard limit (MemoryMax=, or the legacy MemoryLimit=
// when no cgroup v2 style setting is made: unitMem.hard) from its files
// and, when systemd has it loaded, from props (systemctl show; nil when
// not asked) — the lower of the two, naming both when they differ, as
// unitTasks does for TasksMax= — with no usage (it holds nothing yet);
// and those of its slice and every slice above it (Slice=, default
// system.slice), less what that slice's cgroup uses now. The one that
// leaves the least room is the limit; on cgroup v2 MemoryHigh= the same
// way. What cannot be read is named in Unseen, never taken for no limit.
func (g *gatherer) unitMemory(unit string, u unitNofile, props map[string]string) {
	m := &g.f.Target.Memory
	m.Unit = unit
	own, unseen, err := g.readUnitMem(u.files, "Service")
	m.Unseen = append(m.Unseen, unseen...)
	if err != nil {
		m.Unseen = append(m.Unseen, fmt.Sprintf("the memory settings of %s (%v)", unit, err))
		return
	}
	v1 := g.memV1()
	limit, from := own.hard()
	high, highFrom := own.high()
	for _, f := range []*string{&from, &highFrom} {
		if *f != "" {
			*f += fmt.Sprintf(" of %s (not running)", unit)
		}
	}
	if loaded, ok := loadedMem(props); ok {
		l, lfrom := loaded.hard()
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
	slice, sliceFrom, err := g.unitSlice(unit, u.files)
	if err != nil {
		m.Unseen = append(m.Unseen, fmt.Sprintf("the Slice= of %s (%v)", unit, err))
	}
	for _, s := range sliceChain(slice) {
		label := s
		if s == slice && sliceFrom != "" {
			label = fmt.Sprintf("%s (Slice= at %s)", s, sliceFrom)
		}
		h, sh, unseen := g.sliceMemory(s, label, v1)
		m.Unseen = append(m.Unseen, unseen...)
		hard, soft = lessRoom(hard, h), lessRoom(soft, sh)
	}
	m.Limit, m.Usage, m.From, m.SockCharged = hard.limit, hard.usage, hard.from, !v1
	m.High, m.HighUsage, m.HighFrom = soft.limit, soft.usage, soft.from
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
func (g *gatherer) memV1() bool {
	_, err := os.Stat(g.path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	return err == nil
}

// unitSlice is the slice a unit's cgroup goes in, as systemd 252's
// unit_set_default_slice places it: its Slice= (and where that is set),
// else for an instance of a template the template's own slice
// (getty@tty1.service: system-getty.slice), else system.slice. Errors: a
// file that exists but cannot be read.
func (g *gatherer) unitSlice(unit string, files []boot.ConfFile) (slice, where string, err error) {
	slice, where, err = boot.LastAccepted(g.root, files, "Service", "Slice", func(v string) bool {
		return strings.HasSuffix(v, ".slice") && len(v) > len(".slice")
	})
	if err != nil || slice != "" {
		return slice, where, err
	}
	if _, ok := boot.TemplateOf(unit); ok {
		return "system-" + unitNameEscape(unit[:strings.Index(unit, "@")]) + ".slice", "", nil
	}
	return "system.slice", "", nil
}

// unitNameEscape is systemd's unit_name_escape for a template's prefix:
// "/" becomes "-", and "-", "\" and any byte but ASCII letters, digits,
// ":", "_" and "." (a leading "." too) become \xNN.
func unitNameEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}

// sliceChain is a slice and the slices above it, nearest first, without
// the root slice: "system-getty.slice" gives system-getty.slice,
// system.slice (a dash in a slice's name is a level: systemd.slice(5)).
func sliceChain(slice string) []string {
	var out []string
	for s := slice; s != "" && s != "-.slice" && strings.HasSuffix(s, ".slice"); {
		out = append(out, s)
		name := strings.TrimSuffix(s, ".slice")
		i := strings.LastIndex(name, "-")
		if i <= 0 {
			break
		}
		s = name[:i] + ".slice"
	}
	return out
}

// sliceCgroup is a slice's cgroup path below the hierarchy's root
// ("system-getty.slice": /system.slice/system-getty.slice).
func sliceCgroup(slice string) string {
	chain := sliceChain(slice)
	p := "/"
	for i := len(chain) - 1; i >= 0; i-- {
		p = path.Join(p, chain[i])
	}
	return p
}

// sliceMemory is the hard limit and (cgroup v2) MemoryHigh= a slice's
// files set ([Slice] of its unit file and drop-ins, boot.UnitNofile's
// listing), each with the usage of the slice's cgroup now (its working
// set: usage less inactive page cache; 0 when it has no cgroup, nothing
// running in it); from is "" for no limit, and names the slice as label.
// What cannot be read is unseen.
func (g *gatherer) sliceMemory(slice, label string, v1 bool) (hard, high cgroupLimit, unseen []string) {
	_, files, err := boot.UnitNofile(g.root, slice)
	g.readConf(files)
	var m unitMem
	if err == nil {
		m, unseen, err = g.readUnitMem(files, "Slice")
	}
	if err != nil {
		return hard, high, append(unseen, fmt.Sprintf("the memory settings of %s (%v)", slice, err))
	}
	limit, from := m.hard()
	hi, hiFrom := m.high()
	if v1 || hi == Unlimited {
		hiFrom = ""
	}
	if limit == Unlimited && hiFrom == "" {
		return hard, high, unseen
	}
	usage, file, err := g.cgroupUsage(sliceCgroup(slice), v1)
	if err != nil {
		return hard, high, append(unseen, fmt.Sprintf("the memory usage of %s, which its files limit (%v)", label, err))
	}
	where := fmt.Sprintf(" of %s (usage: %s)", label, file)
	if limit != Unlimited {
		hard = cgroupLimit{limit: limit, usage: usage, from: from + where}
	}
	if hiFrom != "" {
		high = cgroupLimit{limit: hi, usage: usage, from: hiFrom + where}
	}
	return hard, high, unseen
}

// cgroupUsage reads the memory a cgroup (a path below the hierarchy's
// root) uses now, bytes, less its inactive page cache as memCgroup
// counts it, and the usage file: v1 memory.usage_in_bytes, else v2
// memory.current (under /sys/fs/cgroup/unified on a hybrid host). A
// cgroup that does not exist uses 0 ("none now"). Errors: a usage file
// that cannot be read or parsed.
func (g *gatherer) cgroupUsage(cg string, v1 bool) (uint64, string, error) {
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
