package files

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/unitname"
)

// Owned file paths, relative to the root ("/" or --root DIR).
const (
	SysctlConf = "/etc/sysctl.d/60-hostprep.conf"
	LimitsConf = "/etc/security/limits.d/60-hostprep.conf"
	SystemConf = "/etc/systemd/system.conf.d/60-hostprep.conf"
	// ModulesLoad names kernel modules systemd-modules-load loads at boot,
	// before systemd-sysctl applies the keys they register.
	ModulesLoad    = "/etc/modules-load.d/60-hostprep.conf"
	serviceDropDir = "/etc/systemd/system"
	dropInName     = "60-hostprep.conf"
)

// ServiceDropIn is the drop-in path for unit ("emqx" or "emqx.service").
func ServiceDropIn(unit string) string {
	return serviceDropDir + "/" + UnitName(unit) + ".d/" + dropInName
}

// UnitName completes a service name with ".service" when it has no suffix.
// A "/" (which would leave /etc/systemd/system) becomes "-", as
// systemd-escape does, and control characters and white space are dropped;
// profiles.Validate refuses such names before this, so that is only a guard.
func UnitName(unit string) string {
	unit = strings.ReplaceAll(oneWord(unit), "/", "-")
	if unit == "" || unit == "." || unit == ".." {
		unit = "invalid"
	}
	return unitname.Service(unit)
}

// header names the profiles the file comes from and how to undo it.
func header(profiles []string) string {
	return fmt.Sprintf("# Written by hostprep from profile(s): %s.\n"+
		"# hostprep owns this file: `hostprep tune rollback` removes it or restores the original\n"+
		"# while it is unchanged; once edited it is yours, and rollback leaves it in place.\n",
		oneLine(strings.Join(profiles, ", ")))
}

// writeComment writes c as a comment line ("# c", made one line) to b;
// an empty c writes nothing.
func writeComment(b *strings.Builder, c string) {
	if c != "" {
		fmt.Fprintf(b, "# %s\n", oneLine(c))
	}
}

// SysctlLine is one "key = value" line of a sysctl.d file. Optional keys
// get the "-" prefix, which tells systemd-sysctl and sysctl --system not
// to fail when the key does not exist.
type SysctlLine struct {
	Key, Value string
	Optional   bool
	Comment    string
}

// RenderSysctl renders a sysctl.d file with the lines in the given order
// (the caller orders them: fs.nr_open, fs.file-max, then sorted).
func RenderSysctl(profiles []string, lines []SysctlLine) []byte {
	var b strings.Builder
	b.WriteString(header(profiles))
	for _, l := range lines {
		writeComment(&b, l.Comment)
		if l.Optional {
			b.WriteString("-")
		}
		fmt.Fprintf(&b, "%s = %s\n", oneLine(l.Key), oneLineValue(l.Value))
	}
	return []byte(b.String())
}

// ModuleLine is one module of a modules-load.d file and why it is there.
type ModuleLine struct {
	Module, Comment string
}

// RenderModules renders a modules-load.d file: one module a line, each
// after a comment saying which sysctl keys need it.
func RenderModules(profiles []string, mods []ModuleLine) []byte {
	var b strings.Builder
	b.WriteString(header(profiles))
	for _, m := range mods {
		writeComment(&b, m.Comment)
		fmt.Fprintf(&b, "%s\n", oneWord(m.Module))
	}
	return []byte(b.String())
}

// RenderLimits renders a limits.d file with soft and hard nofile lines for
// each user (pam_limits: "*" does not cover root, so root is listed too).
func RenderLimits(profiles []string, users []string, soft, hard uint64) []byte {
	var b strings.Builder
	b.WriteString(header(profiles))
	w := 1
	clean := make([]string, 0, len(users))
	for _, u := range users {
		if u = oneWord(u); u != "" {
			clean = append(clean, u)
			w = max(w, len(u))
		}
	}
	for _, u := range clean {
		fmt.Fprintf(&b, "%-*s soft nofile %d\n", w, u, soft)
		fmt.Fprintf(&b, "%-*s hard nofile %d\n", w, u, hard)
	}
	return []byte(b.String())
}

// RenderSystemConf renders a system.conf.d drop-in with DefaultLimitNOFILE
// (a value of hostconf.Unlimited is written "infinity").
func RenderSystemConf(profiles []string, soft, hard uint64) []byte {
	return []byte(fmt.Sprintf("%s[Manager]\nDefaultLimitNOFILE=%s\n", header(profiles), SystemdNofile(soft, hard)))
}

// SystemdNofile is "soft:hard" as a LimitNOFILE= value, hostconf.Unlimited
// written "infinity" (which systemd keeps as PID 1's hard limit).
func SystemdNofile(soft, hard uint64) string {
	return hostconf.NofileSetting{Soft: soft, Hard: hard}.String()
}

// RenderServiceDropIn renders a UNIT.service.d drop-in with LimitNOFILE
// (a value of hostconf.Unlimited is written "infinity") and, when tasksMax is not "", TasksMax= (a number of tasks or
// "infinity", as systemd takes it).
func RenderServiceDropIn(profiles []string, soft, hard uint64, tasksMax string) []byte {
	b := fmt.Sprintf("%s[Service]\nLimitNOFILE=%s\n", header(profiles), SystemdNofile(soft, hard))
	if tasksMax != "" {
		b += "TasksMax=" + oneWord(tasksMax) + "\n"
	}
	return []byte(b)
}

// HardNofile returns the highest hard nofile limit data sets, read as a
// limits.d file ("DOMAIN hard|- nofile N") or a systemd unit or
// system.conf drop-in (LimitNOFILE= / DefaultLimitNOFILE=, "N" or
// "SOFT:HARD"), and whether it sets any. "unlimited"/"infinity" count as
// the largest value.
func HardNofile(data []byte) (uint64, bool) {
	var most uint64
	found := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		var n uint64
		var ok bool
		if k, val, isKey := strings.Cut(line, "="); isKey && (strings.TrimSpace(k) == "LimitNOFILE" || strings.TrimSpace(k) == "DefaultLimitNOFILE") {
			_, n, ok = hostconf.ParseNofile(strings.TrimSpace(val)) // as systemd reads it
		} else if f := strings.Fields(line); len(f) >= 4 && (strings.EqualFold(f[1], "hard") || f[1] == "-") && strings.EqualFold(f[2], "nofile") {
			n, ok = hostconf.ParseLimitsValue(f[3]) // as pam_limits reads it: type and item in any case
		}
		if ok {
			found = true
			most = max(most, n)
		}
	}
	return most, found
}

// oneWord is s with control characters and all white space dropped: a
// unit, module or user name written into an owned file stays one word.
func oneWord(s string) string {
	return strings.Join(strings.Fields(oneLine(s)), "")
}

// oneLineValue is a sysctl value made one line, as oneLine does, but
// with its inner white space kept (tabs too): the kernel keeps a text
// value as written ("/tmp/core  x %e" is another file name than
// "/tmp/core x %e"), and systemd-sysctl and procps trim only its ends.
func oneLineValue(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' {
			return ' '
		}
		return r
	}, s))
}

// oneLine folds s onto one line: control characters (newlines, ESC, NUL)
// become spaces and runs of white space one space. Every string from a
// profile that reaches an owned file goes through it, so no profile can add
// a line of its own to /etc (profiles.Validate refuses such strings first;
// this is the writer's own guard).
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
