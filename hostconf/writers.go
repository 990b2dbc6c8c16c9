package hostconf

import (
	"fmt"
	"path"
	"strings"
)

// Writer is one program that writes sysctl values on the host, declared
// as data: where its configuration lives and how it is parsed (Config,
// Writes), when it runs relative to systemd-sysctl and the services
// (When, Order), whether its effect can be known offline (Offline) and
// how to make it agree with hostprep (each Write's Fix: hostprep never
// edits a file it does not own). A new writer joins the boot model as
// one entry of Writers and one test.
type Writer struct {
	// Name is how reports name it ("ufw", "tuned").
	Name string
	// Config says where its configuration lives and how it is read.
	Config string
	// When says when it runs relative to systemd-sysctl and the services.
	When string
	// Order is when it runs relative to the sysctl.d loader.
	Order Order
	// Offline says whether its effect can be known without running it:
	// false for a script, whose lines are read but whose flow is not
	// followed (its writes are not Sure).
	Offline bool
	// Unit is the systemd unit that runs it at boot
	// ("ufw.service"), "" for an entry that stands for many units (the
	// enabled services whose ExecStart runs sysctl). hostprep's
	// verify-at-boot unit is ordered after every entry's Unit.
	Unit string
	// Loader is set for the sysctl.d loaders themselves (systemd-sysctl,
	// procps `sysctl --system`): their effect is the Sysctl simulation,
	// and Writes is nil.
	Loader Loader
	// Writes reads what the writer sets on the host h, in the order it
	// writes it: nil when it is not installed or not enabled. Errors: a
	// configuration file that exists but cannot be read.
	Writes func(h *Host) ([]Write, error)
}

// Order is when a writer runs relative to the sysctl.d loader at boot.
type Order int

const (
	// Loads is the sysctl.d loader itself (systemd-sysctl.service, or
	// procps `sysctl --system` from an init script).
	Loads Order = iota
	// AfterLoader runs after it at every boot: its value, where it sets
	// one, is the one in force.
	AfterLoader
	// Unordered is not ordered against it at boot, and runs again later
	// (a reload): its value is in force after that, whichever ran last
	// at boot.
	Unordered
)

// Write is one value a writer sets: a key (or a glob of keys), the value,
// the file and line that say so, and the fix.
type Write struct {
	// Writer is the entry that writes it.
	Writer *Writer
	// Source tells apart the programs one entry stands for (a unit
	// name, a script's path for the "service" entry); "" for an entry
	// that is one program. A source's later write of a key replaces its
	// earlier one.
	Source string
	// Key as the kernel spells it (net.core.somaxconn), or a glob
	// (net.ipv4.conf.*.rp_filter); "*" for a write of keys not known
	// offline (a script that runs `sysctl -p "$FILE"`).
	Key string
	// Value as written, blanks around it removed; "" when it cannot be
	// known offline (Why says why).
	Value string
	// File (relative to the root) and 1-based Line that say so.
	File string
	Line int
	// Sure is true when the writer writes it whenever it runs (a
	// configuration file it always applies); false for a line of a
	// script, which may or may not run.
	Sure bool
	// Why says why Value is not known, or what else decides whether
	// the write happens ("applied only when higher than the value
	// tuned finds").
	Why string
	// Fix says how to make the writer agree with hostprep: the line to
	// change, or the setting that stops it writing the key.
	Fix string
}

// Where is "FILE:LINE", or FILE without a line.
func (w Write) Where() string {
	if w.Line == 0 {
		return w.File
	}
	return fmt.Sprintf("%s:%d", w.File, w.Line)
}

// Matches says whether the write sets key (either spelling).
func (w Write) Matches(key string) bool {
	if w.Key == "*" {
		return true
	}
	wk, k := NormalizeSysctlKey(w.Key), NormalizeSysctlKey(key)
	if wk == k {
		return true
	}
	m, _ := path.Match(wk, k)
	return isGlob(wk) && m
}

// Writers are the programs hostprep knows to write sysctl values, the
// sysctl.d loaders first, then the rest in the order they run at boot
// (as far as it is known: see each When).
var Writers = []*Writer{
	&systemdSysctlWriter,
	&procpsWriter,
	&ufwWriter,
	&tunedWriter,
	&rcLocalWriter,
	&unitExecWriter,
}

var systemdSysctlWriter = Writer{
	Name:    "systemd-sysctl",
	Config:  "*.conf in /etc/sysctl.d, /run/sysctl.d, /usr/local/lib/sysctl.d, /usr/lib/sysctl.d (sysctl.d(5): a name in an earlier directory shadows it in later ones, files in basename order, the last assignment wins)",
	When:    "systemd-sysctl.service applies it early at boot, before sysinit.target, and again when a package restarts it",
	Order:   Loads,
	Offline: true,
	Unit:    "systemd-sysctl.service",
	Loader:  SystemdSysctl,
}

var procpsWriter = Writer{
	Name:    "sysctl --system",
	Config:  "the sysctl.d directories as systemd-sysctl lists them, then /etc/sysctl.conf; every line written in order (procps-ng sysctl(8))",
	When:    "the procps init script applies it at boot, on hosts without systemd",
	Order:   Loads,
	Offline: true,
	Unit:    "procps.service",
	Loader:  ProcpsSystem,
}

// Host is the host under Root as the boot that follows will find it:
// files in Overlay (paths relative to the root, nil: absent) read with
// those bytes.
type Host struct {
	Root    string
	Overlay map[string][]byte
	// Sysctl is the sysctl.d configuration as its loader reads it.
	Sysctl *Sysctl
	// scripts are the writes of the scripts other commands run, read
	// once (nestedScript).
	scripts map[string][]Write
}

func (h *Host) tree() tree { return tree{root: h.Root, overlay: h.Overlay} }

// read is the bytes of p (relative to the root, links followed inside
// it), nil when it is missing.
func (h *Host) read(p string) ([]byte, error) {
	return readConf(h.tree(), ConfFile{Path: p, Target: resolve(h.Root, p)})
}

// Boot is what the host will have after its next boot: the sysctl.d
// loader's settings and every later writer's writes.
type Boot struct {
	Host *Host
	// Writes of the writers after the loader, in Writers order.
	Writes []Write
}

// ReadBoot reads the boot model of the host under root ("" = /), with
// the files in overlay (paths relative to root, nil: absent) read with
// those bytes: the sysctl.d loader DetectLoader finds, and every writer
// of Writers. Errors: a configuration file that exists but cannot be
// read (the message names it).
func ReadBoot(root string, overlay map[string][]byte) (*Boot, error) {
	s, err := ReadSysctlOverlay(root, DetectLoader(root), overlay)
	if err != nil {
		return nil, err
	}
	return ReadBootWith(s, overlay)
}

// ReadBootWith is ReadBoot with the sysctl.d configuration already read
// (its Root is the root; Dir set as the caller needs).
func ReadBootWith(s *Sysctl, overlay map[string][]byte) (*Boot, error) {
	h := &Host{Root: s.Root, Overlay: overlay, Sysctl: s}
	b := &Boot{Host: h}
	for _, w := range Writers {
		if w.Writes == nil {
			continue
		}
		ws, err := w.Writes(h)
		if err != nil {
			return nil, fmt.Errorf("boot: %s: %w", w.Name, err)
		}
		for i := range ws {
			ws[i].Writer = w
		}
		b.Writes = append(b.Writes, ws...)
	}
	return b, nil
}

// KeyAtBoot is one key after the next boot: what the sysctl.d loader
// sets, and what the writers after it set.
type KeyAtBoot struct {
	// Key as asked.
	Key string
	// Loader is the program that applies sysctl.d, Setting its
	// assignment (Set false: no file sets the key, the kernel default
	// stays until a later writer sets it).
	Loader  Loader
	Setting SysctlSetting
	Set     bool
	// Later are the last write of each program after the loader that
	// sets the key (one per Writer and Source), in Writers order: each
	// may override Setting.
	Later []Write
}

// Key is key (either spelling) after the next boot.
func (b *Boot) Key(key string) KeyAtBoot { return b.KeyAccepted(key, nil) }

// KeyAccepted is Key for a key whose values the kernel may refuse
// (accept says which it takes; nil: all): each program after the loader
// writes its lines in turn, so a refused write leaves that program's
// write before it in force, and a program none of whose writes is taken
// changes nothing. A write whose value is not known offline stays.
func (b *Boot) KeyAccepted(key string, accept func(value string) bool) KeyAtBoot {
	k := KeyAtBoot{Key: key, Loader: b.Host.Sysctl.Loader}
	k.Setting, k.Set = b.Host.Sysctl.Lookup(key)
	type source struct {
		w    *Writer
		name string
	}
	last := map[source]int{}
	for _, w := range b.Writes {
		if !w.Matches(key) || (accept != nil && w.Value != "" && !accept(w.Value)) {
			continue
		}
		src := source{w.Writer, w.Source}
		if i, ok := last[src]; ok {
			k.Later[i] = w // a program's own later write wins over its earlier one
			continue
		}
		last[src] = len(k.Later)
		k.Later = append(k.Later, w)
	}
	return k
}

// Value is the value key has after the next boot and who sets it
// (a writer's name and FILE:LINE): the last sure write of a writer after
// the loader, else the loader's setting. known is false when a later
// writer's value cannot be known offline or it may or may not write it
// (value is then what is sure), or two programs after the loader set
// different values, or an Unordered writer sets a value other than the
// loader's (value is then the last one's, the Unordered writer's in force
// after its next reload: which runs last at boot is not known); set is
// false when nothing sets the key (the kernel default stays).
func (k KeyAtBoot) Value() (value, writer, where string, known, set bool) {
	known = true
	if k.Set {
		value, writer, where, set = k.Setting.Value, string(k.Loader), k.Setting.Where(), true
	}
	later := false
	for _, w := range k.Later {
		if w.Value == "" || !w.Sure {
			known = false
			continue
		}
		if set && value != w.Value && (later || w.Writer.Order == Unordered) {
			known = false // which of the two runs last at boot is not known
		}
		value, writer, where, set, later = w.Value, w.Writer.Name, w.Where(), true, true
	}
	return value, writer, where, known, set
}

// SysctlWho is the value key (either spelling) has after the next boot
// of the host under root, and who sets it (KeyAtBoot.Value).
func SysctlWho(root, key string) (value, writer, where string, known, set bool, err error) {
	b, err := ReadBoot(root, nil)
	if err != nil {
		return "", "", "", false, false, err
	}
	value, writer, where, known, set = b.Key(key).Value()
	return value, writer, where, known, set, nil
}

// sysctlFileWrites are the writes of `sysctl -p FILE` (procps-ng): every
// line of file (relative to the root) in order, parsed as procps parses
// a sysctl.d line; sure says whether they are certain. nil when the file
// is missing or empty.
func sysctlFileWrites(h *Host, file string, sure bool, fix func(line int, text string) string) ([]Write, error) {
	f := ConfFile{Path: file, Target: resolve(h.Root, file)}
	lines, err := readLines(h.tree(), f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	s := &Sysctl{Root: h.Root, Loader: ProcpsSystem}
	for i, l := range lines {
		s.procpsLine(f, i+1, l)
	}
	var out []Write
	for _, w := range s.writes {
		if w.exclude {
			continue
		}
		out = append(out, Write{Key: w.set.Key, Value: w.set.Value, File: file, Line: w.set.Line, Sure: sure,
			Fix: fix(w.set.Line, strings.TrimSpace(lines[w.set.Line-1]))})
	}
	return out, nil
}

// shellVars are the KEY=VALUE assignments of a shell file such as
// /etc/default/ufw (relative to the root), quotes removed, the last one
// of each key winning, with the line that sets it. Missing file: none.
func shellVars(h *Host, file string) (map[string]string, map[string]int, error) {
	b, err := h.read(file)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", file, err)
	}
	vals, lines := map[string]string{}, map[string]int{}
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "export "))
		if l == "" || l[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || strings.ContainsAny(k, " \t$") {
			continue
		}
		words := shellWords(v)
		val := ""
		if len(words) > 0 {
			val = words[0]
		}
		vals[k], lines[k] = val, i+1
	}
	return vals, lines, nil
}

// shellWords splits a shell command line into words as sh does for
// plain words: at blanks outside quotes, quotes removed, a "#" at the
// start of a word ending the line. Expansions ($VAR) are kept as
// written: a word holding one cannot be known offline.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, any := byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in != 0 && c == in:
			in = 0
		case in != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			in, any = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			any = true
		case c == ' ' || c == '\t':
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			any = false
		case c == '#' && !any:
			return out
		case c == ';' || c == '&' || c == '|':
			if any {
				out = append(out, cur.String())
			}
			cur.Reset()
			out = append(out, string(c))
			any = false
		default:
			cur.WriteByte(c)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}
