package hostconf

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// tuned's files (tuned/consts.py).
const (
	tunedMainConf      = "/etc/tuned/tuned-main.conf"
	tunedActiveProfile = "/etc/tuned/active_profile"
)

// tunedProfileDirs are the directories tuned looks for PROFILE/tuned.conf
// in when tuned-main.conf sets no profile_dirs, lowest priority first:
// tuned 2.x's /usr/lib/tuned and /etc/tuned, and the profiles/
// subdirectories newer releases use (CFG_DEF_PROFILE_DIRS).
var tunedProfileDirs = []string{"/usr/lib/tuned", "/usr/lib/tuned/profiles", "/etc/tuned", "/etc/tuned/profiles"}

// tunedReapplyDirs are the sysctl.d directories tuned's reapply_sysctl
// re-applies, a name in an earlier one hiding it in later ones
// (SYSCTL_CONFIG_DIRS in plugin_sysctl.py): not /usr/lib/sysctl.d or
// /usr/local/lib/sysctl.d. /etc/sysctl.conf follows them.
var tunedReapplyDirs = []string{"/run/sysctl.d", "/etc/sysctl.d"}

// tunedWriter is tuned (RHEL family): tuned.service
// (After=systemd-sysctl.service) loads the profiles named in
// /etc/tuned/active_profile (merged, the last winning), each with the
// profiles its [main] include= names loaded before it, and its sysctl
// plugin writes each option of a [sysctl] section (or a section with
// type=sysctl) to /proc/sys. Then, with reapply_sysctl (tuned-main.conf,
// default 1), it writes every line of the *.conf files of /run/sysctl.d
// and /etc/sysctl.d (by basename, /run hiding /etc) and of
// /etc/sysctl.conf again, in that order: so a profile beats a vendor
// file in /usr/lib/sysctl.d but loses to one in /etc/sysctl.d.
var tunedWriter = Writer{
	Name:    "tuned",
	Config:  "/etc/tuned/active_profile names the profiles; PROFILE/tuned.conf in /etc/tuned (or /etc/tuned/profiles) before /usr/lib/tuned, include= in [main] loading other profiles first; [sysctl] sections; reapply_sysctl in /etc/tuned/tuned-main.conf (default 1) then re-applies /run/sysctl.d, /etc/sysctl.d and /etc/sysctl.conf",
	When:    "tuned.service applies it after systemd-sysctl (its unit says After=systemd-sysctl.service), at every start and every profile switch with tuned-adm profile",
	Order:   AfterLoader,
	Offline: true,
	Unit:    "tuned.service",
	Writes:  tunedWrites,
}

// tunedWrites is what tuned writes at boot on host h: the active
// profile's [sysctl] lines, its include= chain loaded first, then (with
// reapply_sysctl) the sysctl.d files it re-applies. It is long on purpose: it
// follows tuned's own loader (tuned/profiles/loader.py, merger.py,
// plugins/plugin_sysctl.py) step by step, in its order.
func tunedWrites(h *Host) ([]Write, error) {
	if h.enabled("tuned.service") == "" {
		return nil, nil
	}
	main, err := h.read(tunedMainConf)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tunedMainConf, err)
	}
	opts, optLines := tunedMainOptions(string(main))
	dirs := tunedProfileDirs
	if v, ok := opts["profile_dirs"]; ok {
		dirs = nil
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	reapply, reapplyWhere := true, "the default, reapply_sysctl = 1"
	if v, ok := opts["reapply_sysctl"]; ok {
		reapply = tunedBool(v, true)
		reapplyWhere = fmt.Sprintf("reapply_sysctl = %s at %s:%d", v, tunedMainConf, optLines["reapply_sysctl"])
	}
	active, err := h.read(tunedActiveProfile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tunedActiveProfile, err)
	}
	names := strings.Fields(string(active))
	if len(names) == 0 {
		return []Write{{Key: "*", File: tunedActiveProfile, Sure: true,
			Why: fmt.Sprintf("tuned.service is enabled but %s names no profile: tuned then applies the profile `tuned-adm recommend` picks for the machine, which is not known offline", tunedActiveProfile),
			Fix: "choose the profile (tuned-adm profile NAME) and apply again"}}, nil
	}
	p := tunedProfile{h: h, dirs: dirs, sections: map[string]*tunedSection{}}
	var missing []string
	p.load(names, &missing)
	if len(missing) > 0 {
		// tuned's loader raises InvalidProfileException ("Cannot find
		// profile") and applies nothing of the profile
		return nil, nil
	}
	var out []Write
	fixReapply := fmt.Sprintf("keep a file of yours in /etc/sysctl.d setting the key: tuned re-applies /etc/sysctl.d after its profile (%s)", reapplyWhere)
	if !reapply {
		fixReapply = fmt.Sprintf("set reapply_sysctl = 1 in %s (now %s) so tuned re-applies /etc/sysctl.d, where hostprep's file is, after its profile", tunedMainConf, reapplyWhere)
	}
	for _, s := range p.order {
		sec := p.sections[s]
		if !sec.sysctl {
			continue
		}
		for _, o := range sec.options {
			w := Write{Key: o.key, Value: o.value, File: o.file, Line: o.line, Sure: true,
				Fix: fmt.Sprintf("hostprep never edits a file it does not own: change or remove that line of the tuned profile (or override it in a profile of your own in /etc/tuned that includes this one), or %s; then `tuned-adm profile %s`", fixReapply, strings.Join(names, " "))}
			switch {
			case strings.Contains(o.value, "${"):
				w.Value, w.Why = "", fmt.Sprintf("the profile's value %q uses a tuned variable or function, which is not known offline", o.value)
			case strings.HasPrefix(o.value, ">") || strings.HasPrefix(o.value, "<"):
				w.Sure, w.Value, w.Why = false, strings.TrimSpace(o.value[1:]), fmt.Sprintf("the profile's value %q is written only when it is %s than the value tuned finds", o.value, map[byte]string{'>': "higher", '<': "lower"}[o.value[0]])
			}
			out = append(out, w)
		}
	}
	if !reapply {
		return out, nil
	}
	// reapply_sysctl: the lines of /run/sysctl.d, /etc/sysctl.d and
	// /etc/sysctl.conf, each written in order; a "-key" or glob line
	// names no file under /proc/sys and is skipped (ENOENT).
	files := listConfDirs(h.tree(), tunedReapplyDirs, listProcps)
	files = append(files, ConfFile{Path: SysctlConf, Target: resolve(h.Root, SysctlConf)})
	for _, f := range files {
		lines, err := readLines(h.tree(), f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.Name(), err)
		}
		for i, l := range lines {
			l = strings.TrimSpace(l)
			if l == "" || l[0] == '#' || l[0] == ';' {
				continue
			}
			k, v, ok := strings.Cut(l, "=")
			if k = strings.TrimSpace(k); !ok || k == "" || strings.HasPrefix(k, "-") || isGlob(k) {
				continue
			}
			out = append(out, Write{Key: tunedKey(k), Value: strings.TrimSpace(v), File: f.Target, Line: i + 1, Sure: true,
				Why: fmt.Sprintf("tuned re-applies this line after its profile (%s)", reapplyWhere),
				Fix: fmt.Sprintf("change or remove %s line %d (tuned re-applies it after its profile)", f.Target, i+1)})
		}
	}
	return out, nil
}

// tunedKey is a tuned sysctl option in the kernel's dotted spelling:
// tuned swaps every "." and "/" of it for the path under /proc/sys.
func tunedKey(k string) string { return DottedKey(sysctlkey.Swap(k)) }

// tunedMainOptions are the key = value lines of tuned-main.conf (a
// configobj file without sections), with their lines.
func tunedMainOptions(s string) (map[string]string, map[string]int) {
	opts, lines := map[string]string{}, map[string]int{}
	for i, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(l, "="); ok {
			v, _, _ = strings.Cut(v, "#")
			opts[strings.TrimSpace(k)], lines[strings.TrimSpace(k)] = strings.TrimSpace(v), i+1
		}
	}
	return opts, lines
}

// tunedBool reads a boolean as configobj's as_bool does; def for
// anything else.
func tunedBool(v string, def bool) bool {
	switch strings.ToLower(v) {
	case "1", "yes", "true", "on", "y":
		return true
	case "0", "no", "false", "off", "n":
		return false
	}
	return def
}

// tunedProfile is the merge of tuned profiles as tuned's loader and
// merger build it: sections by name, a later profile's option
// overriding an earlier one's, replace=1 dropping the earlier options of
// its section.
type tunedProfile struct {
	h        *Host
	dirs     []string
	sections map[string]*tunedSection
	order    []string
	loaded   []string
}

type tunedSection struct {
	sysctl  bool
	options []tunedOption
}

type tunedOption struct {
	key, value string
	file       string
	line       int
}

// tunedPluginOptions are options every tuned plugin section takes, not
// sysctl keys.
var tunedPluginOptions = map[string]bool{"type": true, "replace": true, "enabled": true, "devices": true, "devices_udev_regex": true,
	"script_pre": true, "script_post": true, "priority": true, "drop": true, "instance": true}

// tunedInclude splits include= as tuned's loader does.
var tunedInclude = regexp.MustCompile(`\s*[,;]\s*`)

// find is PROFILE/tuned.conf in the highest-priority directory holding
// it, skipping files already loaded (an /etc/tuned profile that includes
// its own name loads the /usr/lib/tuned one), as tuned's locator does.
func (p *tunedProfile) find(name string) string {
	for i := len(p.dirs) - 1; i >= 0; i-- {
		f := path.Join(p.dirs[i], path.Base(name), "tuned.conf")
		if contains(p.loaded, f) {
			continue
		}
		if b, err := p.h.read(f); err == nil && b != nil {
			return f
		}
	}
	return ""
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// load loads names in order, each after the profiles it includes;
// names not found go to missing.
func (p *tunedProfile) load(names []string, missing *[]string) {
	for _, name := range names {
		if name == "" {
			continue
		}
		f := p.find(name)
		if f == "" {
			*missing = append(*missing, name)
			continue
		}
		p.loaded = append(p.loaded, f)
		b, _ := p.h.read(f)
		secs, order, include := parseTunedConf(f, string(b))
		if include != "" {
			p.load(tunedInclude.Split(strings.TrimSpace(include), -1), missing)
		}
		for _, name := range order {
			s := secs[name]
			old, ok := p.sections[name]
			if !ok || s.replace {
				p.sections[name] = &tunedSection{sysctl: s.sysctl, options: s.options}
				if !ok {
					p.order = append(p.order, name)
				}
				continue
			}
			for _, o := range s.options {
				replaced := false
				for i := range old.options {
					if old.options[i].key == o.key {
						old.options[i], replaced = o, true
					}
				}
				if !replaced {
					old.options = append(old.options, o)
				}
			}
			old.sysctl = old.sysctl || s.sysctl
		}
	}
}

type parsedSection struct {
	sysctl, replace bool
	options         []tunedOption
}

// parseTunedConf parses a tuned.conf as tuned's ConfigParser does
// (delimiter "=", "#" and ";" comment lines, "#" inline comments, keys
// case kept, a repeated key's last value winning): its sections other
// than [main], in order, and main's include=.
func parseTunedConf(file, s string) (map[string]*parsedSection, []string, string) {
	secs := map[string]*parsedSection{}
	var order []string
	include, cur := "", ""
	for i, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			cur = t[1 : len(t)-1]
			if _, ok := secs[cur]; !ok && cur != "main" {
				secs[cur] = &parsedSection{sysctl: cur == "sysctl"}
				order = append(order, cur)
			}
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		if !ok || cur == "" {
			continue
		}
		if j := strings.Index(v, " #"); j >= 0 {
			v = v[:j]
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1] // tuned unquotes a value
		}
		if cur == "main" {
			if k == "include" {
				include = v
			}
			continue
		}
		sec := secs[cur]
		switch {
		case k == "type":
			sec.sysctl = v == "sysctl"
		case k == "replace":
			sec.replace = tunedBool(v, false)
		}
		if tunedPluginOptions[k] {
			continue
		}
		o := tunedOption{key: tunedKey(k), value: v, file: file, line: i + 1}
		replaced := false
		for j := range sec.options {
			if sec.options[j].key == o.key {
				sec.options[j], replaced = o, true
			}
		}
		if !replaced {
			sec.options = append(sec.options, o)
		}
	}
	return secs, order, include
}
