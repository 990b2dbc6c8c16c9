package hostconf

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// rcLocal is the script rc-local.service runs at boot when it is
// executable (systemd-rc-local-generator; on SysV hosts the rc.local
// init script does the same).
const rcLocal = "/etc/rc.local"

// rcLocalWriter is /etc/rc.local: a shell script, so hostprep reads its
// lines that run sysctl or write /proc/sys, but cannot know whether they
// run (its flow is not followed): each write it finds is not Sure.
var rcLocalWriter = Writer{
	Name:    "rc.local",
	Config:  "/etc/rc.local, when executable: its lines that run `sysctl` or write /proc/sys (a shell script: lines are read one by one, its flow is not followed)",
	When:    "rc-local.service runs it late at boot, after network.target, once per boot",
	Order:   AfterLoader,
	Offline: false,
	Unit:    "rc-local.service",
	Writes: func(h *Host) ([]Write, error) {
		st, err := os.Stat(hostPath(h.Root, resolve(h.Root, rcLocal)))
		if err != nil || st.Mode()&0o111 == 0 {
			return nil, nil // not executable: systemd-rc-local-generator does not run it
		}
		return scriptWrites(h, rcLocal, rcLocal, 0)
	},
}

// unitExecWriter is every other service started at boot (a link in a
// *.wants or *.requires directory, or a SysV init script with an S link
// in /etc/rc[2-5].d) whose ExecStart=, ExecStartPre= or ExecStartPost=
// runs `sysctl` or a shell command that writes /proc/sys, or runs a
// script that does; init scripts are read as scripts.
var unitExecWriter = Writer{
	Name:    "service",
	Config:  "ExecStartPre=, ExecStart= and ExecStartPost= of every service enabled at boot that run `sysctl` (its -w, -p and --system forms) or a shell command or script writing /proc/sys; SysV init scripts started from /etc/rc[2-5].d, read as scripts",
	When:    "the service runs it when it starts: after systemd-sysctl for a service with default dependencies, which starts after sysinit.target; unordered for one with DefaultDependencies=no",
	Order:   AfterLoader,
	Offline: false,
	Writes:  unitExecWrites,
}

// ownWriterUnits are the services other entries (or the loader) stand
// for, and the SysV scripts that run them.
var ownWriterUnits = map[string]bool{"systemd-sysctl.service": true, "ufw.service": true, "tuned.service": true, "rc-local.service": true,
	"procps.service": true, "/etc/init.d/procps": true, "/etc/init.d/ufw": true, "/etc/init.d/tuned": true, "/etc/init.d/rc.local": true}

func unitExecWrites(h *Host) ([]Write, error) {
	var out []Write
	for _, e := range h.enabledUnits() {
		unit := path.Base(e)
		if ownWriterUnits[unit] || strings.HasPrefix(unit, "hostprep") {
			continue
		}
		files, err := unitFiles(h.tree(), unit)
		if err != nil || len(files) == 0 || files[0].Masked || files[0].Broken != "" {
			continue
		}
		if files[0].SysV != "" {
			continue // read below, as an init script
		}
		for _, key := range []string{"ExecStartPre", "ExecStart", "ExecStartPost"} {
			var cmds []struct {
				v    string
				f    ConfFile
				line int
			}
			err := eachAssignment(h.tree(), files, "Service", key, func(v string, f ConfFile, line int) {
				if v == "" {
					cmds = cmds[:0] // an empty assignment resets the list
					return
				}
				cmds = append(cmds, struct {
					v    string
					f    ConfFile
					line int
				}{v, f, line})
			})
			if err != nil {
				return nil, err
			}
			for _, c := range cmds {
				ws, err := execWrites(h, unit, key, c.v, c.f.Target, c.line)
				if err != nil {
					return nil, err
				}
				for i := range ws {
					ws[i].Source = unit
				}
				out = append(out, ws...)
			}
		}
	}
	for _, s := range h.sysvStarted() {
		if ownWriterUnits[s] {
			continue
		}
		if files, err := unitFiles(h.tree(), path.Base(s)+".service"); err == nil && len(files) > 0 && files[0].SysV == "" {
			continue // a native unit replaces the script
		}
		ws, err := scriptWrites(h, s, s, 0)
		if err != nil {
			return nil, err
		}
		for i := range ws {
			ws[i].Source = s
		}
		out = append(out, ws...)
	}
	return out, nil
}

// execWrites are the writes of one Exec line of unit (from file:line).
// systemd runs each command of the line in turn: a ";" word separates
// them, and each may carry its own prefix characters (-@:+!|).
func execWrites(h *Host, unit, key, v, file string, line int) ([]Write, error) {
	at := Write{File: file, Line: line, Sure: true,
		Fix: fmt.Sprintf("hostprep never edits a file it does not own: change that %s= line of %s (a drop-in of your own in /etc/systemd/system/%s.d can reset it with an empty %s= and set the rest again), or disable the unit", key, unit, unit, key)}
	var out []Write
	cmd := []string{}
	words := append(shellWords(strings.TrimLeft(v, "-@:+!|")), ";")
	for _, w := range words {
		if w != ";" {
			if len(cmd) > 0 || strings.TrimLeft(w, "-@:+!|&") != "" {
				cmd = append(cmd, w)
			}
			continue
		}
		if len(cmd) > 0 {
			cmd[0] = strings.TrimLeft(cmd[0], "-@:+!|")
			ws, err := wordsWrites(h, cmd, at, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, ws...)
		}
		cmd = []string{}
	}
	return out, nil
}

// maxScriptDepth bounds how many scripts deep a script run by a script
// is followed: one level, so that reading stays linear in the size of
// the files (a script may run itself, on every one of its lines).
const maxScriptDepth = 1

// shells are the shells whose -c string or script operand is read.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "ksh": true, "zsh": true}

// wordsWrites are the writes of one command given as words, run from
// at (its file:line): `sysctl ARGS`, a shell's -c string or script
// operand, or a script (an absolute path to a "#!" file), followed at
// most maxScriptDepth scripts deep. A command run through another
// program (env, timeout, nice, a shell keyword such as `then`) is found
// by its first word that is one of these, so no such wrapper hides a
// write; a write found behind a wrapper, in a shell string or in a
// script is not Sure (what runs it is not followed).
func wordsWrites(h *Host, words []string, at Write, depth int) ([]Write, error) {
	for i, w := range words {
		a := at
		if i > 0 {
			a.Sure = false
		}
		var ws []Write
		var err error
		base := path.Base(w)
		switch {
		case base == "sysctl":
			ws, err = sysctlCommand(h, words[i+1:], a)
		case shells[base]:
			script, file := shellOperand(words[i+1:])
			a.Sure = false
			switch {
			case script != "":
				ws, err = commandWrites(h, script, a, depth)
			case strings.HasPrefix(file, "/") && depth < maxScriptDepth:
				ws, err = h.nestedScript(file)
			case file != "" && !strings.HasPrefix(file, "/"):
				w := a
				w.Key, w.Why = "*", fmt.Sprintf("%s runs the script %s by a relative path, which is not known offline", at.Where(), file)
				ws = []Write{w}
			default:
				continue
			}
		case strings.HasPrefix(w, "/") && depth < maxScriptDepth && isScript(h, w):
			ws, err = h.nestedScript(w)
			for j := range ws {
				if ws[j].Why == "" {
					ws[j].Why = fmt.Sprintf("%s runs the script %s; a script's flow is not followed", at.Where(), w)
				}
			}
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		if i > 0 {
			for j := range ws {
				if ws[j].Why == "" {
					ws[j].Why = fmt.Sprintf("%s runs it behind `%s`, which is not followed", at.Where(), strings.Join(words[:i], " "))
				}
			}
		}
		return ws, nil
	}
	return nil, nil
}

// nestedScript is scriptWrites of the script file run by another
// command, read once per host however many lines run it; the caller
// gets its own copy to annotate.
func (h *Host) nestedScript(file string) ([]Write, error) {
	ws, ok := h.scripts[file]
	if !ok {
		var err error
		if ws, err = scriptWrites(h, file, file, maxScriptDepth); err != nil {
			return nil, err
		}
		if h.scripts == nil {
			h.scripts = map[string][]Write{}
		}
		h.scripts[file] = ws
	}
	return slices.Clone(ws), nil
}

// shellOperand reads a shell's arguments: the string of its -c option
// (alone or in a cluster such as -ec), else the script file it runs; ""
// for both when it reads commands from its input.
func shellOperand(args []string) (script, file string) {
	c := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				if c {
					return args[i+1], ""
				}
				return "", args[i+1]
			}
			return "", ""
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++ // takes an argument
		case strings.HasPrefix(a, "--"):
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			c = c || (a[0] == '-' && strings.ContainsRune(a[1:], 'c'))
		default:
			if c {
				return a, ""
			}
			return "", a
		}
	}
	return "", ""
}

// isScript says whether p (relative to the root) is a file of less
// than 1 MiB that begins with "#!" (only its first bytes are read).
func isScript(h *Host, p string) bool {
	if b, ok := h.Overlay[p]; ok {
		return len(b) > 2 && string(b[:2]) == "#!"
	}
	f, err := os.Open(hostPath(h.Root, resolve(h.Root, p)))
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() >= 1<<20 {
		return false
	}
	head := make([]byte, 2)
	n, _ := f.Read(head)
	return n == 2 && string(head) == "#!"
}

// scriptWrites are the writes of the lines of the shell script file
// (relative to the root) that run sysctl or write /proc/sys. None is
// Sure: a script's flow (conditions, functions, an early exit) is not
// followed.
func scriptWrites(h *Host, file, name string, depth int) ([]Write, error) {
	b, err := h.read(file)
	if err != nil || b == nil {
		return nil, err
	}
	var out []Write
	for i, l := range strings.Split(string(b), "\n") {
		at := Write{File: file, Line: i + 1,
			Fix: fmt.Sprintf("hostprep never edits a file it does not own: change or remove %s line %d", name, i+1)}
		ws, err := commandWrites(h, l, at, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	return out, nil
}

// commandWrites are the writes of one shell command line: `sysctl ...`
// and `echo V > /proc/sys/KEY` (or printf). A line that mentions
// /proc/sys or sysctl in any other way writes keys not known offline.
func commandWrites(h *Host, line string, at Write, depth int) ([]Write, error) {
	var out []Write
	var cmds [][]string
	cur := []string{}
	for _, w := range shellWords(line) {
		if w == ";" || w == "&" || w == "|" {
			cmds, cur = append(cmds, cur), []string{}
			continue
		}
		cur = append(cur, w)
	}
	for _, cmd := range append(cmds, cur) {
		for len(cmd) > 0 && (cmd[0] == "sudo" || cmd[0] == "exec" || cmd[0] == "command") {
			cmd = cmd[1:]
		}
		if len(cmd) == 0 {
			continue
		}
		ws, err := oneCommand(h, cmd, at, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, ws...)
	}
	return out, nil
}

func oneCommand(h *Host, cmd []string, at Write, depth int) ([]Write, error) {
	if path.Base(cmd[0]) == "sysctl" {
		return sysctlCommand(h, cmd[1:], at)
	}
	// a redirection into /proc/sys: "> /proc/sys/K" or ">/proc/sys/K"
	for i, w := range cmd {
		target := ""
		switch {
		case (w == ">" || w == ">>") && i+1 < len(cmd):
			target = cmd[i+1]
		case strings.HasPrefix(w, ">"):
			target = strings.TrimLeft(w, ">")
		}
		if !strings.HasPrefix(target, "/proc/sys/") {
			continue
		}
		key := DottedKey(strings.TrimPrefix(path.Clean(target), "/proc/sys/"))
		w := at
		w.Key = key
		if (cmd[0] == "echo" || cmd[0] == "printf") && i > 1 && !strings.Contains(strings.Join(cmd[1:i], " "), "$") {
			args := cmd[1:i]
			for len(args) > 0 && strings.HasPrefix(args[0], "-") {
				args = args[1:]
			}
			w.Value = strings.TrimSpace(strings.Join(args, " "))
		}
		if strings.Contains(target, "$") {
			w.Key = "*"
		}
		if w.Value == "" {
			w.Why = fmt.Sprintf("%s writes %s with a value that is not known offline", w.Where(), target)
		}
		return []Write{w}, nil
	}
	if ws, err := wordsWrites(h, cmd, at, depth); err != nil || len(ws) > 0 {
		return ws, err
	}
	if strings.Contains(strings.Join(cmd, " "), "/proc/sys") {
		w := at
		w.Key, w.Why = "*", fmt.Sprintf("%s writes under /proc/sys in a way not known offline", w.Where())
		return []Write{w}, nil
	}
	return nil, nil
}

// sysctlCommand are the writes of `sysctl ARGS` (procps-ng): KEY=VALUE
// arguments (with or without -w), -p/--load FILE (default
// /etc/sysctl.conf) and --system (the sysctl.d files, as procps applies
// them at boot).
func sysctlCommand(h *Host, args []string, at Write) ([]Write, error) {
	var out []Write
	load, system := false, false
	var files []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--system":
			system = true
		case a == "-p" || a == "--load":
			load = true
		case strings.HasPrefix(a, "-p"):
			load = true
			files = append(files, a[2:])
		case strings.HasPrefix(a, "--load="):
			load = true
			files = append(files, strings.TrimPrefix(a, "--load="))
		case strings.HasPrefix(a, "-"):
		case load:
			files = append(files, a)
		case strings.Contains(a, "="):
			k, v, _ := strings.Cut(a, "=")
			w := at
			w.Key, w.Value = DottedKey(NormalizeSysctlKey(k)), strings.TrimSpace(v)
			if strings.Contains(a, "$") {
				w.Value, w.Why = "", fmt.Sprintf("%s runs sysctl %s, a shell expansion not known offline", at.Where(), a)
				if strings.Contains(k, "$") {
					w.Key = "*"
				}
			}
			out = append(out, w)
		}
	}
	if load && len(files) == 0 {
		files = []string{SysctlConf}
	}
	for _, f := range files {
		if strings.Contains(f, "$") {
			w := at
			w.Key, w.Why = "*", fmt.Sprintf("%s runs sysctl -p %s, a file not known offline", at.Where(), f)
			out = append(out, w)
			continue
		}
		ws, err := sysctlFileWrites(h, f, at.Sure, func(line int, text string) string {
			return fmt.Sprintf("hostprep never edits a file it does not own: change or remove %s line %d (%q), which %s applies with sysctl -p", f, line, text, at.Where())
		})
		if err != nil {
			return nil, err
		}
		for i := range ws {
			ws[i].Why = fmt.Sprintf("applied by `sysctl -p %s` at %s", f, at.Where())
		}
		out = append(out, ws...)
	}
	if system {
		s, err := ReadSysctlOverlay(h.Root, ProcpsSystem, h.Overlay)
		if err != nil {
			return nil, err
		}
		for _, pw := range s.writes {
			if pw.exclude {
				continue
			}
			w := at
			w.Key, w.Value, w.File, w.Line = pw.set.Key, pw.set.Value, pw.set.File.Target, pw.set.Line
			w.Why = fmt.Sprintf("re-applied by `sysctl --system` at %s", at.Where())
			w.Fix = fmt.Sprintf("change or remove %s line %d (`sysctl --system` at %s applies it again after boot)", pw.set.File.Target, pw.set.Line, at.Where())
			out = append(out, w)
		}
	}
	return out, nil
}
