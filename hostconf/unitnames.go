package hostconf

import (
	"os"
	"path"
	"sort"
	"strings"
)

// unitMap is systemd 252's map of unit names (unit_file_build_name_map,
// src/shared/unit-file.c) over the unit directories (UnitDirs): for
// every unit name found there, the first directory's entry decides
// what it is.
type unitMap struct {
	// ids maps a name to its fragment, an absolute path relative to the
	// root (a unit file, a linked unit file outside the unit directories,
	// a mask), or, for an alias, to the name it is an alias of.
	ids map[string]string
	// at is where each name was found (the entry in its directory).
	at map[string]string
	// names maps a fragment's base name to every name whose chain of
	// aliases ends at that fragment, its own included; for an instance
	// whose fragment is a template the key is the template's name with
	// that instance put in (worker@a.service for job@a.service ->
	// worker@.service).
	names map[string][]string
}

// unitDirsResolved are UnitDirs with symbolic links followed, each once,
// in order: systemd's search path after lookup_paths_reduce.
func unitDirsResolved(root string) (dirs, resolved []string) {
	seen := map[string]bool{}
	for _, d := range UnitDirs {
		rd := resolve(root, d)
		if seen[rd] {
			continue
		}
		seen[rd] = true
		dirs, resolved = append(dirs, d), append(resolved, rd)
	}
	return dirs, resolved
}

// buildUnitMap reads the unit directories under root as systemd's
// unit_file_build_name_map does: regular files and symbolic links with a
// valid unit name (directories such as foo.service.d are skipped); a
// link whose target, with ".." and the links of its directories
// resolved, lies under a unit directory is an alias of the target's
// name (dropped when the names' types or instances do not fit, and when
// it names itself), any other link (outside the unit directories, to
// /dev/null) is a linked unit file whose fragment is the link itself.
// An entry t's overlay marks absent (nil: a file on /run, which the
// next boot does not find) is not read.
func buildUnitMap(t tree) unitMap {
	root := t.root
	m := unitMap{ids: map[string]string{}, at: map[string]string{}, names: map[string][]string{}}
	dirs, resolved := unitDirsResolved(root)
	search := append(append([]string{}, dirs...), resolved...)
	for i, d := range dirs {
		ents, _ := os.ReadDir(hostPath(root, resolved[i]))
		for _, e := range ents {
			name := e.Name()
			if _, ok := m.ids[name]; ok || !validUnitName(name) {
				continue
			}
			p := path.Join(d, name)
			if b, ok := t.overlay[p]; ok && b == nil {
				continue
			}
			dst := p
			switch {
			case e.Type().IsRegular():
			case e.Type()&os.ModeSymlink != 0:
				alias, ok := aliasOf(root, resolved[i], name, search)
				if !ok {
					continue
				}
				if alias != "" {
					dst = alias
				}
			default:
				continue
			}
			m.ids[name], m.at[name] = dst, p
		}
	}
	for name := range m.ids {
		frag, ok := m.fragment(name)
		if !ok || nullOrEmpty(root, frag) {
			continue // null_or_empty_path: a mask has no names
		}
		b := path.Base(frag)
		if _, isInst := TemplateOf(name); isInst && isTemplate(b) {
			// an instance's link to a template is an alias of that
			// instance only: foo@id.service <-> template@id.service
			b = withInstance(b, name[strings.Index(name, "@")+1:strings.LastIndex(name, ".")])
		}
		m.names[b] = append(m.names[b], name)
	}
	for _, v := range m.names {
		sort.Strings(v)
	}
	return m
}

// aliasOf reads the link name in dir (resolved, relative to root): the
// name it is an alias of, "" for a linked unit file or a mask (the link
// is the fragment), ok false for a link systemd ignores (an alias to a
// name of another type or instance, an alias to itself, unreadable).
func aliasOf(root, dir, name string, unitDirs []string) (string, bool) {
	target, err := os.Readlink(hostPath(root, path.Join(dir, name)))
	if err != nil {
		return "", false
	}
	if !path.IsAbs(target) {
		target = path.Join(dir, target)
	}
	// chase_symlinks with CHASE_NOFOLLOW: the directories followed, not
	// the last component.
	target = path.Clean(target)
	simplified := path.Join(resolve(root, path.Dir(target)), path.Base(target))
	if simplified == "/dev/null" {
		return "", true
	}
	for _, d := range unitDirs {
		if d == "/" || !strings.HasPrefix(simplified, d+"/") {
			continue
		}
		dst := path.Base(simplified)
		if dst == name || !aliasFits(name, dst) {
			return "", false
		}
		return dst, true
	}
	return "", true
}

// validUnitName is unit_name_is_valid(name, UNIT_NAME_ANY) for the
// names that matter here: a known unit type after the last dot, a
// non-empty prefix, at most one "@".
func validUnitName(name string) bool {
	dot := strings.LastIndex(name, ".")
	if dot <= 0 || len(name) > 255 || strings.Count(name, "@") > 1 || strings.HasPrefix(name, "@") {
		return false
	}
	switch name[dot+1:] {
	case "service", "socket", "target", "device", "mount", "automount", "swap", "timer", "path", "slice", "scope":
		return true
	}
	return false
}

// aliasFits is unit_validate_alias_symlink_or_warn's test: an alias and
// its target have the same type, and a template is an alias of a
// template, an instance of the same instance of a template or instance,
// a plain name of a plain name.
func aliasFits(alias, target string) bool {
	at := func(n string) (kind, instance string) {
		prefix := n[:strings.LastIndex(n, ".")]
		i := strings.Index(prefix, "@")
		switch {
		case i < 0:
			return "plain", ""
		case i == len(prefix)-1:
			return "template", ""
		}
		return "instance", prefix[i+1:]
	}
	if path.Ext(alias) != path.Ext(target) {
		return false
	}
	ak, ai := at(alias)
	tk, ti := at(target)
	switch ak {
	case "plain", "template":
		return ak == tk
	}
	return tk == "template" || (tk == "instance" && ai == ti)
}

// fragment follows name's aliases to its fragment (unit_ids_map_get):
// an absolute path, relative to the root; an alias of an instance that
// has no entry goes on to its template. false when there is none, or
// the chain is longer than systemd follows (FOLLOW_MAX, 64).
func (m unitMap) fragment(name string) (string, bool) {
	id := ""
	for n := 0; n < 64; n++ {
		t, ok := m.ids[cmpOr(id, name)]
		if !ok {
			if id == "" {
				return "", false
			}
			tmpl, isInst := TemplateOf(id)
			if t, ok = m.ids[tmpl]; !isInst || !ok {
				return "", false
			}
		}
		if path.IsAbs(t) {
			return t, true
		}
		id = t
	}
	return "", false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// unitNames finds unit's fragment and its names as systemd 252's
// unit_file_find_fragment and merge_by_names do: the fragment of unit
// (or, for an instance with none, of its template); the unit's id, the
// fragment's base name (with the instance put in for a template), first;
// then every other name in name order: unit itself and the names the
// name map gives unit, then those it gives the fragment's base name
// (add_names). An alias of a template (job@.service -> worker@.service)
// names every instance (job@b.service for worker@b.service, unless
// job@b.service leads to another fragment); an alias of an instance
// (job@a.service -> worker@.service, as `systemctl enable worker@a` makes
// for Alias=job@%i.service) names that instance only. entry is where
// unit's (or its template's) name was found, "" when there is no
// fragment.
func (m unitMap) unitNames(unit string) (frag, entry string, names []string) {
	tmpl, isInst := TemplateOf(unit)
	inst := ""
	if isInst {
		inst = unit[strings.Index(unit, "@")+1 : strings.LastIndex(unit, ".")]
	}
	set := map[string]bool{}
	// addNames is add_names: name itself (unless unit is a template) and
	// the names the map gives it; fragBase is "" for unit's own name.
	addNames := func(name, fragBase string) {
		if own := name; !isTemplate(unit) {
			if isInst && isTemplate(own) {
				own = withInstance(own, inst) // unit_add_name puts the instance in
			}
			set[own] = true
		}
		for _, a := range m.names[name] {
			if !isInst || !isTemplate(a) {
				set[a] = true
				continue
			}
			a = withInstance(a, inst)
			if f, ok := m.fragment(a); ok && fragBase != "" && path.Base(f) != fragBase {
				continue // an instance alias that points elsewhere
			}
			set[a] = true
		}
	}
	addNames(unit, "")
	frag, ok := m.fragment(unit)
	entry = m.at[unit]
	if !ok && isInst {
		frag, ok = m.fragment(tmpl)
		entry = m.at[tmpl]
	}
	if !ok {
		return "", "", []string{unit}
	}
	id := path.Base(frag)
	if id != unit {
		addNames(id, id)
	}
	if isInst && isTemplate(id) {
		id = withInstance(id, inst)
	}
	set[id] = true
	names = append(names, id)
	rest := make([]string, 0, len(set))
	for n := range set {
		if n != id {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return frag, entry, append(names, rest...)
}

// isTemplate says whether name is a template (foo@.service).
func isTemplate(name string) bool {
	return strings.HasSuffix(name[:max(strings.LastIndex(name, "."), 0)], "@")
}

// withInstance puts inst into template name (foo@.service, x ->
// foo@x.service).
func withInstance(template, inst string) string {
	dot := strings.LastIndex(template, ".")
	return template[:dot] + inst + template[dot:]
}

// nullOrEmpty says whether p (relative to root) resolves to /dev/null
// or an empty regular file: a masked unit (null_or_empty_path).
func nullOrEmpty(root, p string) bool {
	t := resolve(root, p)
	if t == "/dev/null" {
		return true
	}
	fi, err := os.Stat(hostPath(root, t))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}

// UnitDirLinks are the symbolic links with a unit name in the unit
// directories (UnitDirs, each read once), the entries systemd 252's unit
// name map reads: each link's path as the map names it (relative to
// root) and its target as the map takes it (made absolute, ".." and the
// links of its directories resolved, the last component not followed;
// "/dev/null" for a mask). A recording that keeps them replays the same
// aliases, linked unit files and masks. Unreadable links are left out.
func UnitDirLinks(root string) map[string]string {
	out := map[string]string{}
	dirs, resolved := unitDirsResolved(root)
	for i, d := range dirs {
		ents, _ := os.ReadDir(hostPath(root, resolved[i]))
		for _, e := range ents {
			if e.Type()&os.ModeSymlink == 0 || !validUnitName(e.Name()) {
				continue
			}
			target, err := os.Readlink(hostPath(root, path.Join(resolved[i], e.Name())))
			if err != nil {
				continue
			}
			if !path.IsAbs(target) {
				target = path.Join(resolved[i], target)
			}
			target = path.Clean(target)
			out[path.Join(d, e.Name())] = path.Join(resolve(root, path.Dir(target)), path.Base(target))
		}
	}
	return out
}
