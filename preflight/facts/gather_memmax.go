package facts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/cstrconv"

	"github.com/hostprep/hostprep/hostconf"
)

// The memory limit a unit that is not running gets at its next start:
// systemd 252 writes its cgroup's memory.max (v1 memory.limit_in_bytes)
// and memory.high from the unit's MemoryMax=, MemoryLimit= and
// MemoryHigh= (systemd.resource-control(5)), and its slice's limit bounds
// it as well.

// memPhys is the physical memory a percentage of a memory setting is
// taken of: systemd's physical_memory(), sysconf(_SC_PHYS_PAGES) pages of
// pageSize bytes (MemTotal in pages). The root cgroup's limit, which
// systemd also takes for a manager inside a limited container, is not
// read.
type memPhys struct {
	pages, pageSize uint64
}

// physOf is f's memPhys; pages is 0 when MemTotal is not known.
func physOf(f *Facts) memPhys {
	ps := uint64(max(f.PageSize, 1))
	return memPhys{pages: f.MemTotal / ps, pageSize: ps}
}

// memSetting is one of a unit's memory settings: bytes (Unlimited for
// infinity), the value as written and the FILE:LINE that sets it ("" when
// no file does: the default).
type memSetting struct {
	bytes uint64
	value string
	where string
}

// set says whether a file sets it.
func (s memSetting) set() bool { return s.where != "" }

// describe is "KEY=VALUE (FILE:LINE)".
func (s memSetting) describe(key string) string {
	return fmt.Sprintf("%s=%s (%s)", key, s.value, s.where)
}

// unitMem are a unit's memory settings in force after its files, keyed
// by name: MemoryMax, MemoryHigh, MemoryLimit, MemorySwapMax, MemoryMin,
// MemoryLow.
type unitMem map[string]memSetting

// memKeys are the settings that decide a unit's memory.max and
// memory.high.
var MemKeys = []string{"MemoryMax", "MemoryHigh", "MemoryLimit", "MemorySwapMax", "MemoryMin", "MemoryLow"}

// sliceMemKeys are memKeys and the settings a slice passes down to the
// units below it (DefaultMemoryLow=, DefaultMemoryMin=: memFloor).
var sliceMemKeys = append(MemKeys[:len(MemKeys):len(MemKeys)], "DefaultMemoryLow", "DefaultMemoryMin")

// floorKey says whether key is a protection whose default, and empty
// value, is 0 rather than infinity (MemoryMin=, MemoryLow= and the
// DefaultMemoryMin=, DefaultMemoryLow= of a slice).
func floorKey(key string) bool {
	return key == "MemoryMin" || key == "MemoryLow" || key == "DefaultMemoryMin" || key == "DefaultMemoryLow"
}

// parseMemoryLimit reads a value of memory setting key as systemd 252's
// config_parse_memory_limit does: "" is the default (infinity; 0 for
// MemoryMin/MemoryLow), "infinity" is Unlimited, a percentage ("P%" with
// up to two decimals, "P‰", "P‱", at most 100 %) is that share of
// physical memory rounded down to a page (physical_memory_scale; false
// when phys is unknown), anything else a size in bytes with base-1024
// suffixes K, M, G, T, P, E (parseSystemdSize). ok is false for what
// systemd logs and ignores, and for 0 or 2^64-1 bytes where only
// MemorySwapMax/MemoryMin/MemoryLow take 0.
func parseMemoryLimit(key, v string, phys memPhys) (uint64, bool) {
	switch {
	case v == "" && floorKey(key):
		return 0, true
	case v == "" || v == "infinity":
		return Unlimited, true
	}
	var n uint64
	if strings.ContainsAny(v, "%‰‱") {
		// parse_permyriad, then physical_memory_scale: the same share of
		// a ceiling, rounded down, as TasksMax=, here of pages.
		pages, ok := hostconf.ParseTasksMax(v, phys.pages)
		if !ok || phys.pages == 0 {
			return 0, false
		}
		n = pages * phys.pageSize
	} else {
		var ok bool
		if n, ok = parseSystemdSize(v); !ok {
			return 0, false
		}
	}
	if n == Unlimited || n == 0 && key != "MemorySwapMax" && !floorKey(key) {
		return 0, false // "out of range, ignoring"
	}
	return n, true
}

// iecSuffixes are parse_size's suffixes with base 1024, largest first;
// each part of a size takes one below the part before it.
var iecSuffixes = []struct {
	suffix string
	factor uint64
}{{"E", 1 << 60}, {"P", 1 << 50}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}, {"", 1}}

// parseSystemdSize is systemd 252's parse_size(t, 1024) (src/basic/
// parse-util.c), in bytes: one or more parts, each a decimal number read
// as strtoull reads it (blanks, a sign), perhaps with a fraction
// ("1.5G"; "10.M" is 10M), blanks, and a suffix (case matters) smaller
// than the part before's ("1G 512M"); a minus sign, overflow or anything
// else is false.
func parseSystemdSize(t string) (uint64, bool) {
	var r uint64
	start := 0
	for p := t; ; {
		p = strings.TrimLeft(p, " \t\n\r")
		if strings.HasPrefix(p, "-") {
			return 0, false
		}
		l, e, ok := strtoull10(p)
		if !ok {
			return 0, false
		}
		frac := 0.0
		if rest, dot := strings.CutPrefix(e, "."); dot {
			e = rest
			if e != "" && e[0] >= '0' && e[0] <= '9' {
				l2, e2, ok := strtoull10(e)
				if !ok {
					return 0, false
				}
				frac = float64(l2)
				for range len(e) - len(e2) {
					frac /= 10
				}
				e = e2
			}
		}
		e = strings.TrimLeft(e, " \t\n\r")
		i := start
		for ; i < len(iecSuffixes) && !strings.HasPrefix(e, iecSuffixes[i].suffix); i++ {
		}
		if i == len(iecSuffixes) {
			return 0, false
		}
		factor, bump := iecSuffixes[i].factor, uint64(0)
		if frac > 0 {
			bump = 1
		}
		if l+bump < l || l+bump > Unlimited/factor {
			return 0, false
		}
		tmp := l*factor + uint64(frac*float64(factor))
		if tmp > Unlimited-r {
			return 0, false
		}
		r += tmp
		p, start = e[len(iecSuffixes[i].suffix):], i+1
		if p == "" {
			return r, true
		}
	}
}

// strtoull10 is C's strtoull(s, &end, 10) (cstrconv.Strtoull); ok is
// false when no digit is read or the number overflows.
func strtoull10(s string) (n uint64, end string, ok bool) {
	n, end, ok, over := cstrconv.Strtoull(s)
	if !ok || over {
		return 0, s, false
	}
	return n, end, true
}

// readUnitMem reads memKeys (sliceMemKeys for section "Slice") from the
// [section] of files (a unit's or a
// slice's, as hostconf.UnitNofile lists them): the last assignment systemd
// accepts wins (hostconf.LastAccepted), an empty one resets the default. A
// percentage that cannot be resolved because MemTotal is not known is
// named in unseen (it is left out, not taken for no limit by the
// caller). Errors: a file that exists but cannot be read.
func (g *Gatherer) readUnitMem(files []hostconf.ConfFile, section string) (m unitMem, unseen []string, err error) {
	phys := physOf(g.F)
	m = unitMem{}
	keys := MemKeys
	if section == "Slice" {
		keys = sliceMemKeys
	}
	for _, key := range keys {
		accept := func(v string) bool {
			_, ok := parseMemoryLimit(key, v, phys)
			if !ok && phys.pages == 0 && strings.ContainsAny(v, "%‰‱") {
				unseen = append(unseen, fmt.Sprintf("%s=%s (a share of physical memory, which was not read)", key, v))
			}
			return ok
		}
		v, where, err := hostconf.LastAccepted(g.Root, files, section, key, accept)
		if err != nil {
			return nil, nil, err
		}
		n, _ := parseMemoryLimit(key, v, phys)
		m[key] = memSetting{bytes: n, value: v, where: where}
	}
	return m, unseen, nil
}

// memFloor is the DefaultMemoryMin= and DefaultMemoryLow= (bytes, 0
// when none) a unit gets from the nearest slice above it that sets each:
// what systemd 252's unit_get_ancestor_memory_min/_low give for a unit
// that does not set MemoryMin=/MemoryLow= itself.
type memFloor struct{ min, low uint64 }

// below is the memFloor of the units in a slice whose own settings are
// m, the slice itself having anc: each Default of m where m sets it.
func (anc memFloor) below(m unitMem) memFloor {
	if s := m["DefaultMemoryMin"]; s.set() {
		anc.min = s.bytes
	}
	if s := m["DefaultMemoryLow"]; s.set() {
		anc.low = s.bytes
	}
	return anc
}

// unified says whether the settings use the cgroup v2 style ones
// (systemd 252's unit_has_unified_memory_config: MemoryMax, MemoryHigh
// or MemorySwapMax below infinity, or the MemoryMin or MemoryLow in
// force above 0: its own where set, else anc from the slices above);
// only then is MemoryMax= the hard limit, else the legacy MemoryLimit=,
// on cgroup v1 and v2 alike (cgroup_context_apply).
func (m unitMem) unified(anc memFloor) bool {
	floor := func(key string, def uint64) uint64 {
		if s := m[key]; s.set() {
			return s.bytes
		}
		return def
	}
	return m["MemoryMax"].bytes != Unlimited || m["MemoryHigh"].bytes != Unlimited || m["MemorySwapMax"].bytes != Unlimited ||
		floor("MemoryMin", anc.min) > 0 || floor("MemoryLow", anc.low) > 0
}

// hardKey is the setting that gives the hard limit systemd writes
// (unified, anc as there): MemoryLimit= or MemoryMax=.
func (m unitMem) hardKey(anc memFloor) string {
	if key := "MemoryLimit"; !m.unified(anc) && m[key].bytes != Unlimited {
		return key
	}
	return "MemoryMax" // named for no limit too
}

// hard is the hard limit systemd writes (bytes, Unlimited for none) and
// what sets it ("" when nothing does); anc as for unified.
func (m unitMem) hard(anc memFloor) (uint64, string) {
	key := m.hardKey(anc)
	s := m[key]
	if !s.set() {
		return s.bytes, ""
	}
	return s.bytes, s.describe(key)
}

// high is MemoryHigh= in bytes (Unlimited for none) and what sets it.
func (m unitMem) high() (uint64, string) {
	s := m["MemoryHigh"]
	if !s.set() {
		return s.bytes, ""
	}
	return s.bytes, s.describe("MemoryHigh")
}

// loadedMem reads the memory settings systemd has loaded for a unit from
// `systemctl show` properties (bytes or "infinity"); ok is false when
// they are not there (an older recording). A MemoryMin or MemoryLow of 0
// is taken for not set: systemctl show does not say whether the unit
// sets it, and the slices' DefaultMemoryMin/Low count where it does not.
func loadedMem(props map[string]string) (unitMem, bool) {
	m := unitMem{}
	for _, key := range MemKeys {
		v, found := props[key]
		if !found {
			return nil, false
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if v == "infinity" {
			n, err = Unlimited, nil
		}
		if err != nil {
			return nil, false
		}
		where := "systemctl show"
		if floorKey(key) && n == 0 {
			where = "" // as if not set: the slices' DefaultMemoryMin/Low count (systemctl show cannot say)
		}
		m[key] = memSetting{bytes: n, value: v, where: where}
	}
	return m, true
}
