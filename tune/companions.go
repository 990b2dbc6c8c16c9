package tune

import (
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysctl"
	"github.com/hostprep/hostprep/tune/sysval"
)

// Writing one sysctl can change others, and no table of hostprep's says
// which on every kernel: net.ipv4.conf.all.forwarding (one variable with
// net.ipv4.ip_forward) is copied into every interface's forwarding and
// turns conf.all.accept_redirects off; conf.default.X is copied into the
// interfaces that never had X set; net.ipv6.conf.all.forwarding and
// disable_ipv6 reach every interface. So hostprep asks the kernel: it
// reads the keys a write may reach (its companions) before and after the
// run's writes, journals the ones that moved, and puts them back when the
// run is undone or rolled back.

// aliases are keys the kernel keeps as one variable under two names (path
// form); a write to one is a write to the other, with its companions.
var aliases = map[string]string{
	"net/ipv4/ip_forward":          "net/ipv4/conf/all/forwarding",
	"net/ipv4/conf/all/forwarding": "net/ipv4/ip_forward",
}

// companionsOf lists the path-form keys under procSys that writing key
// may change: for a key of an interface tree (conf, neigh), every
// setting of the tree's all and default entries and the same setting of
// every other entry; and the key's alias, with the alias's own.
func companionsOf(procSys, key string) []string {
	p := sysctlkey.Path(key)
	out := treeCompanions(procSys, p)
	if a, ok := aliases[p]; ok {
		out = append(out, a)
		out = append(out, treeCompanions(procSys, a)...)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(k string) bool { return k == p })
}

// treeCompanions is companionsOf for one path-form key, without aliases.
func treeCompanions(procSys, p string) []string {
	var out []string
	for _, tree := range sysctlkey.InterfaceTrees {
		rest, ok := strings.CutPrefix(p, tree)
		if !ok {
			continue
		}
		_, leaf, ok := strings.Cut(rest, "/")
		if !ok {
			return nil
		}
		entries, _ := os.ReadDir(filepath.Join(procSys, tree))
		for _, e := range entries {
			out = append(out, tree+e.Name()+"/"+leaf)
		}
		for _, whole := range []string{"all", "default"} {
			files, _ := os.ReadDir(filepath.Join(procSys, tree, whole))
			for _, f := range files {
				if f.Type().IsRegular() {
					out = append(out, tree+whole+"/"+f.Name())
				}
			}
		}
	}
	return out
}

// companionValues reads the companions of keys (dotted), leaving out the
// keys themselves and those skip holds; a companion that cannot be read
// (no such entry, a write-only or secret setting) is not watched.
func companionValues(procSys string, b sysctl.Backend, keys []string, skip func(string) bool) map[string]string {
	vals := map[string]string{}
	for _, k := range keys {
		for _, c := range companionsOf(procSys, k) {
			d := sysctlkey.Dotted(c)
			if _, seen := vals[d]; seen || slices.Contains(keys, d) || skip(d) {
				continue
			}
			if v, err := b.Get(d); err == nil {
				vals[d] = v
			}
		}
	}
	return vals
}

// reread reads keys again; a key that can no longer be read is left out.
func reread(b sysctl.Backend, keys iter.Seq[string]) map[string]string {
	now := map[string]string{}
	for k := range keys {
		if v, err := b.Get(k); err == nil {
			now[k] = v
		}
	}
	return now
}

// putBack writes every key of want whose value now differs, in key
// order, and returns what could not be written.
func putBack(b sysctl.Backend, want map[string]string) []string {
	var problems []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, err := b.Get(k)
		if err != nil || sysval.EqualKey(k, v, want[k]) {
			continue
		}
		if err := b.Set(k, want[k]); err != nil {
			problems = append(problems, fmt.Sprintf("%s back to %q (the kernel changed it with another key): %v", k, want[k], err))
		}
	}
	return problems
}

// recordCompanions journals the companions' values before this apply
// (the first apply's stays the original), each pending until the apply
// settles it (settleCompanions).
func recordCompanions(st *journal.State, before map[string]string) {
	if len(before) > 0 && st.Companions == nil {
		st.Companions = map[string]*journal.Companion{}
	}
	for k, v := range before {
		if st.Companions[k] == nil {
			st.Companions[k] = &journal.Companion{Original: v}
		}
		st.Companions[k].Pending = true
	}
}

// originalOf is the value a key about to be journaled had before
// hostprep's first apply, when an earlier apply's write moved it as a
// companion and it still holds what that left (now); else now.
func originalOf(st *journal.State, key, now string) string {
	if c := st.Companions[key]; c != nil && (c.Pending || (c.Set != "" && sysval.EqualKey(key, now, c.Set))) {
		return c.Original
	}
	return now
}

// companions puts back, after the rollback's own writes, each companion
// they moved or the applies did: one the applies moved (or an apply
// killed before it settled may have) and no one changed since goes back
// to its original; one only the rollback's writes moved goes back to
// what it held just before them (r.compBefore: the original, or another
// writer's value, which is theirs). A key the journal also holds as set
// is rolled back as that. The journal keeps only companions that could
// not be put back.
func (r *rollbackRun) companions() {
	if r.backendErr != nil || r.b == nil || len(r.st.Companions) == 0 {
		return
	}
	r.remaining.Companions = nil
	for _, k := range slices.Sorted(maps.Keys(r.st.Companions)) {
		c := r.st.Companions[k]
		now, err := r.b.Get(k)
		before, seen := r.compBefore[k]
		if r.st.Keys[k] != nil || err != nil || !seen {
			continue
		}
		want := before
		if c.Pending || (c.Set != "" && sysval.EqualKey(k, before, c.Set)) {
			want = c.Original
		}
		if sysval.EqualKey(k, now, want) {
			continue
		}
		err = r.b.Set(k, want)
		if err != nil {
			err = fmt.Errorf("%s back to %q (the kernel changed it with a key hostprep set): %w", k, want, err)
			if r.remaining.Companions == nil {
				r.remaining.Companions = map[string]*journal.Companion{}
			}
			r.remaining.Companions[k] = c
		}
		r.record(&Change{Key: k, Layer: Runtime, From: sysval.Normalize(now), To: want, Reason: "the kernel changed it with a key hostprep set"}, nil, err)
	}
}
