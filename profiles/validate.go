package profiles

import (
	"cmp"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hostprep/hostprep/internal/brokerurl"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/sysctlval"
	"github.com/hostprep/hostprep/internal/unitname"
)

// Kernel numbers the static checks use.
const (
	// DefaultUnprivilegedPortStart is the kernel default of
	// net.ipv4.ip_unprivileged_port_start; ip_local_port_range may not
	// start below it (ipv4_local_port_range in net/ipv4/sysctl_net_ipv4.c
	// returns EINVAL).
	DefaultUnprivilegedPortStart = 1024
	// NrOpenMax is the largest fs.nr_open a 64-bit kernel accepts
	// (sysctlval.NrOpenMax).
	NrOpenMax = sysctlval.NrOpenMax
	// NrOpenMin is the smallest fs.nr_open (BITS_PER_LONG).
	NrOpenMin = sysctlval.NrOpenMin
)

// sysctlTrees are the top-level directories of /proc/sys.
var sysctlTrees = []string{"abi", "crypto", "debug", "dev", "fs", "kernel", "net", "sunrpc", "user", "vm"}

// ValidRoles are the preflight roles.
var ValidRoles = []string{"broker", "loadgen", "iotdb"}

// ValidIoTDBScenarios are the IoTDB probe scenarios.
var ValidIoTDBScenarios = []string{"write", "batch", "mixed"}

type problem struct {
	at  srcPos
	msg string
	// derived problems compare one value with another key (a port range
	// with ip_unprivileged_port_start, nofile with fs.nr_open); they are
	// reported after problems with a value on its own, which are more
	// likely the root cause.
	derived bool
}

type checker struct {
	p        *Profile
	problems []problem
}

func (c *checker) add(segs []string, format string, a ...any) {
	c.problems = append(c.problems, problem{at: c.p.at(segs...), msg: fmt.Sprintf(format, a...)})
}

// addDerived adds a problem that follows from comparing the value at segs
// with another key's value; see problem.derived.
func (c *checker) addDerived(segs []string, format string, a ...any) {
	c.problems = append(c.problems, problem{at: c.p.at(segs...), msg: fmt.Sprintf(format, a...), derived: true})
}

// Validate checks the profile without looking at the host: sysctl keys,
// modes and values (field counts and order of tcp_rmem/tcp_wmem/tcp_mem/
// udp_mem, ip_local_port_range bounds including the
// ip_unprivileged_port_start rule, ip_local_reserved_ports syntax, bounds
// of known numeric keys), nofile soft <= hard <= fs.nr_open <= ... and
// fs.file-max >= nofile when the profile sets those keys, systemd unit
// names, reserve_ports 1..65535, the preflight target and the probes.
//
// It also parses each sysctl value not parsed yet (a profile built in
// code, a value changed since) into Sysctl.Parsed; for a loaded profile,
// Load's own Validate did that once.
//
// It returns nil or an exitcode.BadInput error wrapping a
// *ValidationError: one line, the position of the first problem
// (file:line:col, --set "k=v", or "profile NAME"), the value, the rule and
// the fix, plus "(and N more problems)" when there are several; its
// Problems list them all.
func (p *Profile) Validate() error {
	c := &checker{p: p}
	c.text()
	c.sysctls()
	c.limits()
	c.ports()
	c.preflight()
	c.mqtt()
	c.iotdb()
	if len(c.problems) == 0 {
		return nil
	}
	slices.SortStableFunc(c.problems, func(a, b problem) int {
		if a.derived != b.derived {
			if b.derived {
				return -1
			}
			return 1
		}
		if d := cmp.Compare(rank(a.at), rank(b.at)); d != 0 {
			return d
		}
		return cmp.Or(cmp.Compare(a.at.File, b.at.File), cmp.Compare(a.at.Line, b.at.Line), cmp.Compare(a.at.Col, b.at.Col))
	})
	ve := &ValidationError{}
	for _, pr := range c.problems {
		prefix := "profile " + cmp.Or(p.Name, "(unnamed)")
		if pr.at.valid() {
			prefix = pr.at.String()
		}
		ve.Problems = append(ve.Problems, prefix+": "+pr.msg)
	}
	return exitcode.New(exitcode.BadInput, ve)
}

// setAt is " set at FILE:LINE:COL" (or " set at --set k=v") for the
// profile field at path, or " in the profile" for a profile built in code.
func (c *checker) setAt(path ...string) string {
	if pos := c.p.at(path...); pos.valid() {
		return " set at " + pos.String()
	}
	return " in the profile"
}

// ValidationError is what Validate found wrong with a profile.
type ValidationError struct {
	// Problems are one line each ("p.yaml:3:5: reserve_ports[0] 0: ..."),
	// in the order a reader fixes them: placed in the file first, then
	// --set, then problems derived from others.
	Problems []string
}

// Error is the first problem, and "(and N more problems)" when there are
// several.
func (e *ValidationError) Error() string {
	msg := e.Problems[0]
	if n := len(e.Problems) - 1; n > 0 {
		msg += " (and " + plural.N(n, "more problem") + ")"
	}
	return msg
}

// rank orders problems of the same kind (see problem.derived): file
// positions first, then --set, then unplaced.
func rank(s srcPos) int {
	switch {
	case s.File != "":
		return 0
	case s.Set != "" || s.Flag != "":
		return 1
	}
	return 2
}

// sysctlNumber returns the profile's value of a single-number key.
func (p *Profile) sysctlNumber(key string) (int64, bool) {
	s, ok := p.Sysctl[key]
	if !ok {
		return 0, false
	}
	f, err := Fields(s.Value)
	if err != nil || len(f) != 1 {
		return 0, false
	}
	return f[0], true
}

// validNumber returns the profile's value of a known single-number key
// when it is within the kernel's bounds (numericKeys); an invalid value
// is reported on its own and not used to judge other keys.
func (p *Profile) validNumber(key string) (int64, bool) {
	v, ok := p.sysctlNumber(key)
	if !ok {
		return 0, false
	}
	if b, known := numericKeys[key]; known && (v < b[0] || v > b[1]) {
		return 0, false
	}
	return v, true
}

// sysctls checks every sysctl entry, parsing its value into Parsed first
// where it was not parsed from it.
func (c *checker) sysctls() {
	keys := make([]string, 0, len(c.p.Sysctl))
	for k := range c.p.Sysctl {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		s := c.p.Sysctl[key]
		if !s.Parsed.Of(s.Value) {
			s.Parsed = sysctlval.Parse(key, s.Value)
			c.p.Sysctl[key] = s
		}
		c.sysctl(key, s)
	}
}

func (c *checker) sysctl(key string, s Sysctl) {
	at := []string{"sysctl", key}
	vat := []string{"sysctl", key, "value"}
	if msg := checkKey(key); msg != "" {
		c.add(at, "sysctl key %q: %s", key, msg)
		return
	}
	if !s.Mode.valid() {
		c.add([]string{"sysctl", key, "mode"}, "%s mode %q: want exact, at-least or at-most", key, s.Mode)
		return
	}
	if i := strings.IndexFunc(s.Value, func(r rune) bool { return unicode.IsControl(r) && r != '\t' }); i >= 0 {
		// The YAML reader refuses these too; this catches --set and
		// profiles built in code. A newline would write a second line
		// into the sysctl file.
		c.add(vat, "%s %q: control character %U; a sysctl value is one line of text, fields separated by spaces", key, s.Value, []rune(s.Value[i:])[0])
		return
	}
	v := strings.TrimSpace(s.Value)
	if v == "" && key != "net.ipv4.ip_local_reserved_ports" {
		c.add(vat, "%s has an empty value; write it as the kernel prints it under /proc/sys, e.g. %q", key, example(key))
		return
	}
	if f := octalField(key, s); f != "" {
		c.add(vat, "%s %q: %q has a leading 0, which the kernel reads as octal; write %s", key, s.Value, f, cmp.Or(strings.TrimLeft(f, "0"), "0"))
		return
	}
	switch key {
	case "net.ipv4.ip_local_port_range":
		c.portRange(key, s, vat)
		return
	case "net.ipv4.ip_local_reserved_ports":
		if _, err := ParseReservedPorts(s.Value); err != nil {
			c.add(vat, "%s %q: %v; want a comma-separated list of ports and ranges such as \"1883,8000-8010\"", key, s.Value, err)
		} else if s.Mode != Exact && s.Mode != "" {
			c.add([]string{"sysctl", key, "mode"}, "%s mode %q: a port list has no order; use mode exact (hostprep merges reserve_ports into it)", key, s.Mode)
		}
		return
	}
	if KeyFields(key) == 3 {
		c.tripleSysctl(key, s, vat)
		return
	}
	if b, ok := numericKeys[key]; ok {
		c.numericSysctl(key, s, vat, b)
		return
	}
	if s.Mode == AtLeast || s.Mode == AtMost {
		if _, err := Fields(s.Value); err != nil {
			c.add(vat, "%s %q with mode %s: %v; %s compares numbers, so give whole numbers or use mode exact", key, s.Value, s.Mode, err, s.Mode)
		}
	}
}

// octalField is the first field of s's value written with a leading 0,
// which the kernel reads as octal (it reads written numbers with base 0,
// proc_get_long), "" when none. Only a value the kernel reads as numbers
// is judged: a known numeric key's (numericKeys, KeyFields, the port set)
// or one of whole numbers alone. Text such as the hex words of
// net.ipv4.tcp_fastopen_key ("00000001-00000002-00000003-00000004") is
// not read with base 0, so its zeros are no fault.
func octalField(key string, s Sysctl) string {
	if _, known := numericKeys[key]; !known && KeyFields(key) == 0 && key != sysctlval.PortSetKey && s.Parsed.Fields == nil {
		return ""
	}
	for _, f := range strings.FieldsFunc(s.Value, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '-' }) {
		if len(f) > 1 && f[0] == '0' && strings.Trim(f, "0123456789") == "" {
			return f
		}
	}
	return ""
}

// tripleSysctl checks a three-field key (tcp_rmem, tcp_wmem: bytes;
// tcp_mem, udp_mem: pages): three ordered numbers within the kernel's
// bounds.
func (c *checker) tripleSysctl(key string, s Sysctl, vat []string) {
	f, err := Fields(s.Value)
	what := "min default max in bytes"
	if key == "net.ipv4.tcp_mem" || key == "net.ipv4.udp_mem" {
		what = "min pressure max in pages (4 KiB), not bytes"
	}
	if err != nil || len(f) != 3 {
		c.add(vat, "%s %q: want three numbers %s, e.g. %q", key, s.Value, what, example(key))
		return
	}
	lo := int64(1)
	if key == "net.ipv4.tcp_mem" || key == "net.ipv4.udp_mem" {
		lo = 0
	}
	for i, x := range f {
		if x < lo {
			c.add(vat, "%s %q: field %d is %d; every field must be >= %d", key, s.Value, i+1, x, lo)
			return
		}
	}
	if f[0] > f[1] || f[1] > f[2] {
		sorted := slices.Clone(f)
		slices.Sort(sorted)
		c.add(vat, "%s %q: fields must be ordered min <= %s <= max (%s); did you mean %q?", key, s.Value, map[bool]string{true: "pressure", false: "default"}[lo == 0], what, strings.Trim(fmt.Sprint(sorted), "[]"))
		return
	}
	if s.IfRefused == RefusedNearest {
		return // tune uses the nearest value the kernel takes
	}
	for _, msg := range CheckBounds(key, s.Value, "") {
		c.add(vat, "%s", msg)
	}
}

// numericSysctl checks a one-number key against its bounds b (min, max).
func (c *checker) numericSysctl(key string, s Sysctl, vat []string, b [2]int64) {
	f, err := Fields(s.Value)
	if err != nil || len(f) != 1 {
		c.add(vat, "%s %q: want one whole number, e.g. %q", key, s.Value, example(key))
		return
	}
	if (f[0] < b[0] || f[0] > b[1]) && s.IfRefused != RefusedNearest {
		for _, msg := range CheckBounds(key, s.Value, "") {
			c.add(vat, "%s", msg)
		}
	}
}

func (c *checker) portRange(key string, s Sysctl, vat []string) {
	lo, hi, err := ParsePortRange(s.Value)
	if err != nil {
		c.add(vat, "%s %q: %v; want \"low high\" such as \"1024 65535\"", key, s.Value, err)
		return
	}
	if lo == hi {
		c.add(vat, "%s %q: a range of one port allows one outgoing connection per destination; make high greater than low, e.g. \"%d 65535\"", key, s.Value, max(lo, DefaultUnprivilegedPortStart))
		return
	}
	const upsKey = "net.ipv4.ip_unprivileged_port_start"
	start, where, own := int64(DefaultUnprivilegedPortStart), "its kernel default", false
	if _, set := c.p.Sysctl[upsKey]; set {
		v, ok := c.p.validNumber(upsKey)
		if !ok {
			// Its own problem is reported; a suggestion built on an
			// invalid value would be wrong too.
			return
		}
		start, where, own = v, "set by this profile at "+c.p.at("sysctl", upsKey, "value").String(), true
	}
	if int64(lo) < start && s.IfRefused != RefusedNearest {
		// Suggest the lowest valid low end with the profile's high end, or
		// 65535 when that high end is not above the start; a range needs
		// low < high <= 65535.
		var fix string
		switch {
		case start == DefaultUnprivilegedPortStart && !own:
			fix = fmt.Sprintf("use \"1024 %d\" (the lowest valid low end)", hi)
		case start < int64(hi):
			fix = fmt.Sprintf("use \"%d %d\" or lower %s", start, hi, upsKey)
		case start < 65535:
			fix = fmt.Sprintf("use \"%d 65535\" or lower %s", start, upsKey)
		default:
			fix = fmt.Sprintf("no port range fits above %d, so lower %s (kernel default %d)", start, upsKey, DefaultUnprivilegedPortStart)
		}
		c.addDerived(vat, "%s %q: low end %d is below %s %d (%s), and the kernel rejects it with EINVAL; %s", key, s.Value, lo, upsKey, start, where, fix)
		return
	}
	if s.Mode == AtLeast || s.Mode == AtMost {
		c.add([]string{"sysctl", key, "mode"}, "%s mode %q: a range is not a limit to raise or lower; use mode exact", key, s.Mode)
	}
}

func checkKey(key string) string {
	switch {
	case key == "":
		return "empty key; spell keys as the kernel does, e.g. net.core.somaxconn"
	case strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r >= 0x7f || r == '=' || r == '#' }) || strings.Contains(key, ".."):
		return "not a sysctl key; spell keys as the kernel does, e.g. net.core.somaxconn"
	case slashForm(key):
		// An interface's dot stays in its component: the dotted spelling
		// of net/ipv4/conf/eth0.100/rp_filter is net.ipv4.conf.eth0/100.rp_filter.
		return fmt.Sprintf("write it with dots as the kernel spells it, e.g. %q", sysctlkey.Dotted(sysctlkey.Path(strings.TrimPrefix(key, "/proc/sys/"))))
	case strings.HasPrefix(key, ".") || strings.HasSuffix(key, "."):
		return "not a sysctl key; spell keys as the kernel does, e.g. net.core.somaxconn"
	}
	top, _, ok := strings.Cut(key, ".")
	if !ok || !slices.Contains(sysctlTrees, top) {
		return fmt.Sprintf("not under a /proc/sys tree (%s); spell keys as the kernel does, e.g. net.core.somaxconn", strings.Join(sysctlTrees, ", "))
	}
	return ""
}

// slashForm reports a key spelled as a path (its first separator a
// slash, or a leading one): net/core/somaxconn, /proc/sys/net/core/somaxconn.
func slashForm(key string) bool {
	i := strings.IndexAny(key, "./")
	return i >= 0 && key[i] == '/'
}

// example is a valid value to show in a message about key.
func example(key string) string {
	switch key {
	case "net.ipv4.tcp_rmem":
		return "4096 131072 6291456"
	case "net.ipv4.tcp_wmem":
		return "4096 16384 4194304"
	case "net.ipv4.tcp_mem", "net.ipv4.udp_mem":
		return "786432 1048576 1572864"
	case "net.ipv4.ip_local_port_range":
		return "1024 65535"
	case "net.ipv4.ip_local_reserved_ports":
		return "1883,8883"
	case "net.ipv4.tcp_tw_reuse":
		return "1"
	}
	return "32768"
}

type namedLimit struct {
	path []string
	l    *Limit
}

// nofileLimits are the profile's nofile limits with their paths.
func (p *Profile) nofileLimits() []namedLimit {
	var all []namedLimit
	if p.Limits.Nofile != nil {
		all = append(all, namedLimit{[]string{"limits", "nofile"}, p.Limits.Nofile})
	}
	if p.Systemd.DefaultLimitNOFILE != nil {
		all = append(all, namedLimit{[]string{"systemd", "default_limit_nofile"}, p.Systemd.DefaultLimitNOFILE})
	}
	if p.Systemd.LimitNOFILE != nil {
		all = append(all, namedLimit{[]string{"systemd", "limit_nofile"}, p.Systemd.LimitNOFILE})
	}
	return all
}

func (c *checker) limits() {
	p := c.p
	all := p.nofileLimits()
	nrOpen, hasNrOpen := p.validNumber("fs.nr_open")
	fileMax, hasFileMax := p.validNumber("fs.file-max")
	for _, nl := range all {
		name := displayPath(nl.path)
		soft, hard := append(slices.Clone(nl.path), "soft"), append(slices.Clone(nl.path), "hard")
		switch {
		case nl.l.Mode != "" && nl.l.Mode != AtLeast:
			c.add(append(slices.Clone(nl.path), "mode"), "%s.mode %q: a nofile limit is always at-least (hostprep never lowers what sessions and services get now); remove mode or write at-least", name, nl.l.Mode)
			continue
		case nl.l.Hard == 0:
			c.add(hard, "%s.hard is 0 or missing; give both soft and hard, e.g. {soft: 1048576, hard: 1048576}", name)
			continue
		case nl.l.Soft == 0:
			c.add(soft, "%s.soft is 0 or missing; give both soft and hard, e.g. {soft: %d, hard: %d}", name, nl.l.Hard, nl.l.Hard)
			continue
		case nl.l.Soft > nl.l.Hard:
			hardAt := ""
			if hp, sp := c.p.at(hard...), c.p.at(soft...); hp.valid() && hp != sp {
				hardAt = " set at " + hp.String()
			}
			c.add(soft, "%s soft %d is above hard %d%s; the soft limit can never exceed the hard one, so lower soft to %d or raise hard", name, nl.l.Soft, nl.l.Hard, hardAt, nl.l.Hard)
			continue
		}
		if hasNrOpen && nl.l.Hard > uint64(max(nrOpen, 0)) {
			c.addDerived(hard, "%s hard %d is above fs.nr_open %d%s; the kernel caps RLIMIT_NOFILE at fs.nr_open (setrlimit fails, pam_limits logs \"Could not set limit\"), so raise fs.nr_open to at least %d or lower the hard limit to %d",
				name, nl.l.Hard, nrOpen, c.setAt("sysctl", "fs.nr_open", "value"), nl.l.Hard, nrOpen)
			continue
		}
		if !hasNrOpen && nl.l.Hard > NrOpenMax {
			c.add(hard, "%s hard %d is above the largest fs.nr_open a kernel accepts (%d); lower it", name, nl.l.Hard, NrOpenMax)
			continue
		}
		if hasFileMax && nl.l.Hard > uint64(max(fileMax, 0)) {
			c.addDerived(hard, "%s hard %d is above fs.file-max %d%s; one process could exhaust the system-wide file table, so raise fs.file-max to at least %d or lower the hard limit",
				name, nl.l.Hard, fileMax, c.setAt("sysctl", "fs.file-max", "value"), nl.l.Hard)
		}
	}
	for i, u := range p.Limits.Users {
		if !pamDomainRE.MatchString(u) {
			c.add([]string{"limits", "users", strconv.Itoa(i)}, "limits.users[%d] %q: not a pam_limits domain (letters, digits and . _ - @ %% : * $, no white space or control characters); use a user name, @group, %%group, a uid range such as 1000:, or \"*\"", i, u)
		}
	}
	for i, s := range p.Systemd.Services {
		if msg := checkServiceName(s); msg != "" {
			c.add([]string{"systemd", "services", strconv.Itoa(i)}, "systemd.services[%d] %q: %s", i, s, msg)
		}
	}
	if len(p.Systemd.Services) > 0 && p.Systemd.LimitNOFILE == nil && p.Limits.Nofile == nil {
		c.add([]string{"systemd", "services"}, "systemd.services is set but no LimitNOFILE is given (hostprep's drop-in for a unit always sets LimitNOFILE, and TasksMax= from systemd.tasks_max goes in the same file); set systemd.limit_nofile (or limits.nofile, which services then get)")
	}
	c.tasksMax()
}

// tasksMax checks systemd.tasks_max: 1..MaxTasks or infinity, and
// services to write it for.
func (c *checker) tasksMax() {
	m := c.p.Systemd.TasksMax
	if m == nil {
		return
	}
	at := []string{"systemd", "tasks_max"}
	switch {
	case *m == 0:
		c.add(at, "systemd.tasks_max 0: systemd ignores TasksMax=0 (config_parse_tasks_max logs it and keeps the unit's default); write a number of tasks >= 1, or infinity for no limit")
	case *m != TasksInfinity && *m > MaxTasks:
		c.add(at, "systemd.tasks_max %d: above %d, the most a cgroup's pids.max takes (PID_MAX_LIMIT; the kernel refuses more with EINVAL and systemd leaves the limit unset); write at most %d, or infinity for no limit", uint64(*m), MaxTasks, MaxTasks)
	}
	if len(c.p.Systemd.Services) == 0 {
		c.add(at, "systemd.tasks_max is set but systemd.services is empty: TasksMax= is written into each service's own drop-in; list the units in systemd.services or remove tasks_max")
	}
}

// unitPrefixRE is the part of a systemd unit name before "@" or the
// suffix: the characters unit_name_is_valid (src/basic/unit-name.c)
// allows, "\\" included for escaped names.
var unitPrefixRE = regexp.MustCompile(`^[A-Za-z0-9:_.\\-]+$`)

// unitInstanceRE is the instance part of a template instance name
// ("getty@tty1.service"), which may be empty for the template itself.
var unitInstanceRE = regexp.MustCompile(`^[A-Za-z0-9:_.\\-]*$`)

// unitNameMax is systemd's UNIT_NAME_MAX (256) without the NUL.
const unitNameMax = 255

// checkServiceName returns why s is not a service unit name hostprep can
// write a drop-in for, or "". A name without a dot gets ".service" (see
// systemd.services); a name with a dot must end in ".service", since the
// drop-in holds a [Service] section and other unit types would ignore it.
func checkServiceName(s string) string {
	const fix = "use a service unit name such as emqx, mosquitto.service or getty@tty1.service"
	full := unitname.Service(s) // php8.2-fpm is php8.2-fpm.service, as systemctl names it
	stem, ok := strings.CutSuffix(full, ".service")
	if !ok {
		return "not a service unit (LimitNOFILE is a [Service] setting, not one of ." + full[strings.LastIndex(full, ".")+1:] + " units); " + fix
	}
	if len(full) > unitNameMax {
		return fmt.Sprintf("longer than systemd's %d-character unit name limit; %s", unitNameMax, fix)
	}
	prefix, instance, templ := strings.Cut(stem, "@")
	if !unitPrefixRE.MatchString(prefix) || (templ && !unitInstanceRE.MatchString(instance)) {
		return "not a systemd unit name (letters, digits and : _ . \\ - with at most one @, no white space, slashes or control characters); " + fix
	}
	return ""
}

// pamDomainRE is a pam_limits domain as hostprep writes it: a user name,
// @group, %group, a uid/gid range (1000:2000, @500:) or "*". White space,
// "#" and control characters would split or comment out the line.
var pamDomainRE = regexp.MustCompile(`^[A-Za-z0-9._@%:*$-]+$`)

// nameRE is what a profile name may hold: it is written into the header
// of every file hostprep owns, so one line of plain characters.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// nameMax bounds a profile name (it ends up in file headers and tables).
const nameMax = 64

// badTextRune reports the control characters refused in free text
// (description, sysctl comments): everything unicode calls a control
// character except tab and newline, which the file writers fold to spaces.
func badTextRune(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n'
}

// text checks the strings that end up in files hostprep writes: the
// profile name (file headers), the description and sysctl comments
// (comment lines, folded to one line by the writer).
func (c *checker) text() {
	p := c.p
	switch {
	case len(p.Name) > nameMax:
		c.add([]string{"name"}, "name %.20q...: longer than %s; use a short name of letters, digits, '.', '_' and '-'", p.Name, plural.N(nameMax, "character"))
	case p.Name != "" && !nameRE.MatchString(p.Name):
		c.add([]string{"name"}, "name %q: a profile name may hold only letters, digits, '.', '_' and '-' (it is written into the header of every file hostprep owns); use e.g. %q", p.Name, SafeName(p.Name))
	}
	if i := strings.IndexFunc(p.Description, badTextRune); i >= 0 {
		c.add([]string{"description"}, "description: control character %U at byte %d; write plain text (newlines and tabs are fine)", []rune(p.Description[i:])[0], i)
	}
	keys := make([]string, 0, len(p.Sysctl))
	for k := range p.Sysctl {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cm := p.Sysctl[k].Comment
		if i := strings.IndexFunc(cm, badTextRune); i >= 0 {
			c.add([]string{"sysctl", k, "comment"}, "%s comment: control character %U at byte %d; write plain text (newlines and tabs are fine; the sysctl file gets the comment on one line)", k, []rune(cm[i:])[0], i)
		}
	}
}

// SafeName turns s into a valid profile name: runs of characters other
// than letters, digits, '.', '_' and '-' become one '-', and the result is
// cut to 64 characters; an empty result is "profile".
func SafeName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		ok := r < 0x80 && (r == '.' || r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r))
		if ok {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > nameMax {
		out = out[:nameMax]
	}
	if out == "" {
		return "profile"
	}
	return out
}

func (c *checker) ports() {
	for i, port := range c.p.ReservePorts {
		if port < 1 || port > 65535 {
			c.add([]string{"reserve_ports", strconv.Itoa(i)}, "reserve_ports[%d] %d: not a port; ports are 1..65535", i, port)
		}
	}
}

func (c *checker) preflight() {
	t := c.p.Preflight
	if t == nil {
		return
	}
	at := func(f string) []string { return []string{"preflight", f} }
	if !slices.Contains(ValidRoles, t.Role) {
		c.add(at("role"), "preflight.role %q: want one of %s (left out: %s)", t.Role, strings.Join(ValidRoles, ", "), DefaultRole)
	}
	if t.Sockets <= 0 {
		fix := "write it in the preflight section, e.g. sockets: 100000"
		if c.p.at(at("sockets")...).File == "" { // a --set or flag made the section, or code did
			fix = "give it: --set preflight.sockets=100000 (preflight and ready: --sockets 100000), or sockets: in the profile's preflight section"
		}
		c.add(at("sockets"), "preflight.sockets %d: want the number of concurrent connections the host must carry, > 0; %s", t.Sockets, fix)
	}
	if t.ConnRate < 0 {
		c.add(at("conn_rate"), "preflight.conn_rate %v: want new connections/s >= 0", float64(t.ConnRate))
	}
	for i, d := range t.Destinations {
		host, port, err := net.SplitHostPort(d)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || strings.ContainsFunc(host, unicode.IsSpace) || perr != nil || n < 1 || n > 65535 {
			c.add([]string{"preflight", "destinations", strconv.Itoa(i)}, "preflight.destinations[%d] %q: want ip:port such as 192.0.2.10:1883", i, d)
		}
	}
}

func (c *checker) fraction(path []string, v *float64) {
	if v != nil && (*v < 0 || *v > 1) {
		c.add(path, "%s %v: want a fraction 0..1 (0.01 = 1%%)", displayPath(path), *v)
	}
}

func (c *checker) duration(path []string, d time.Duration) {
	if d < 0 {
		c.add(path, "%s %s: want a duration >= 0", displayPath(path), d)
	}
}

func (c *checker) nonNegative(path []string, v float64) {
	if v < 0 {
		c.add(path, "%s %v: want a number >= 0", displayPath(path), v)
	}
}

func (c *checker) mqtt() {
	m := c.p.Probe.MQTT
	if m == nil {
		return
	}
	at := func(f ...string) []string { return append([]string{"probe", "mqtt"}, f...) }
	if m.QoS < 0 || m.QoS > 2 {
		c.add(at("qos"), "probe.mqtt.qos %d: MQTT QoS is 0, 1 or 2", m.QoS)
	}
	c.nonNegative(at("clients"), float64(m.Clients))
	c.nonNegative(at("conn_rate"), float64(m.ConnRate))
	c.nonNegative(at("size"), float64(m.Size))
	c.duration(at("pub_interval"), m.PubInterval)
	c.duration(at("duration"), m.Duration)
	c.duration(at("keepalive"), m.Keepalive)
	if m.Keepalive > 65535*time.Second {
		c.add(at("keepalive"), "probe.mqtt.keepalive %s: MQTT keepalive is at most 65535s (18h12m15s)", m.Keepalive)
	}
	if m.Broker != "" {
		// The probe's own rule (brokerurl.Parse), so a profile that
		// validates never fails later in `hostprep ready`.
		if _, err := brokerurl.Parse(m.Broker, "probe.mqtt.broker", brokerurl.Login{User: "--username (probe mqtt) or --mqtt-user (ready)",
			Password: "$HOSTPREP_MQTT_PASSWORD or a password file"}); err != nil {
			c.add(at("broker"), "%s; or leave it empty for the embedded broker", err)
		}
	}
	th := m.Thresholds
	c.fraction(at("thresholds", "loss"), th.Loss)
	c.fraction(at("thresholds", "connect_fail_rate"), th.ConnectFailRate)
	c.duration(at("thresholds", "connect_p95"), th.ConnectP95)
	c.duration(at("thresholds", "ack_p95"), th.AckP95)
	c.duration(at("thresholds", "e2e_p99"), th.E2EP99)
}

func (c *checker) iotdb() {
	d := c.p.Probe.IoTDB
	if d == nil {
		return
	}
	at := func(f ...string) []string { return append([]string{"probe", "iotdb"}, f...) }
	if d.Scenario != "" && !slices.Contains(ValidIoTDBScenarios, d.Scenario) {
		c.add(at("scenario"), "probe.iotdb.scenario %q: want one of %s", d.Scenario, strings.Join(ValidIoTDBScenarios, ", "))
	}
	for i, s := range d.Steps {
		if s < 1 {
			c.add(at("steps", strconv.Itoa(i)), "probe.iotdb.steps[%d] %d: a step is a number of concurrent workers, >= 1", i, s)
		}
	}
	if d.Port < 0 || d.Port > 65535 {
		c.add(at("port"), "probe.iotdb.port %d: not a port; the DataNode RPC port is 6667 by default", d.Port)
	}
	c.nonNegative(at("pool_size"), float64(d.PoolSize))
	c.nonNegative(at("fetch_size"), float64(d.FetchSize))
	c.duration(at("step_duration"), d.StepDuration)
	c.duration(at("wait_timeout"), d.WaitTimeout)
	th := d.Thresholds
	c.fraction(at("thresholds", "max_error_rate"), th.MaxErrorRate)
	c.duration(at("thresholds", "p95"), th.P95)
	c.nonNegative(at("thresholds", "min_tps"), float64(th.MinTPS))
	if th.TargetStep != 0 && !slices.Contains(d.Steps, th.TargetStep) {
		c.add(at("thresholds", "target_step"), "probe.iotdb.thresholds.target_step %d: not one of steps %v; use one of them or 0 for the last step", th.TargetStep, d.Steps)
	}
}

// Kernel defaults the warnings compare with.
const (
	// DefaultNrOpen is the kernel default of fs.nr_open (1024*1024,
	// fs/file.c sysctl_nr_open): the most RLIMIT_NOFILE a host that was
	// not tuned allows.
	DefaultNrOpen = 1 << 20
	// UsualNofile is the soft RLIMIT_NOFILE processes get by default (the
	// kernel's INR_OPEN_CUR, systemd's soft default).
	UsualNofile = 1024
)

// Warnings are static findings that do not make the profile invalid, one
// line each, prefixed with where the value was set:
//   - an ip_local_port_range whose ends share parity (the kernel logs a
//     warning and connect() loses half of its fast path; ip-sysctl.rst:
//     "it is better these numbers have different parity");
//   - a nofile soft or hard limit below UsualNofile (1024), which tune,
//     never lowering a nofile limit, leaves as it is on a usual host;
//   - a nofile hard limit above DefaultNrOpen (1048576) while the profile
//     sets no fs.nr_open: tune refuses it on a host with the default.
func (p *Profile) Warnings() []string {
	var w []string
	for _, nl := range p.nofileLimits() {
		name := displayPath(nl.path)
		for _, f := range []struct {
			field string
			v     uint64
		}{{"soft", nl.l.Soft}, {"hard", nl.l.Hard}} {
			if f.v > 0 && f.v < UsualNofile {
				w = append(w, fmt.Sprintf("%s%s.%s %d: lower than the usual default %d; tune never lowers a nofile limit (it is at-least), so on a usual host this changes nothing; to raise the limit use at least %d",
					p.where(append(slices.Clone(nl.path), f.field)...), name, f.field, f.v, UsualNofile, UsualNofile))
			}
		}
	}
	if _, set := p.Sysctl["fs.nr_open"]; !set {
		var top uint64
		var at []string
		for _, nl := range p.nofileLimits() {
			if nl.l.Hard > DefaultNrOpen && nl.l.Hard <= NrOpenMax && nl.l.Hard > top {
				top, at = nl.l.Hard, append(slices.Clone(nl.path), "hard")
			}
		}
		if top > 0 {
			w = append(w, fmt.Sprintf("%s%s %d: the profile sets no fs.nr_open; hosts with the default %d will refuse this: add fs.nr_open at-least %d",
				p.where(at...), displayPath(at), top, DefaultNrOpen, top))
		}
	}
	if s, ok := p.Sysctl["net.ipv4.ip_local_port_range"]; ok {
		if lo, hi, err := ParsePortRange(s.Value); err == nil && lo%2 == hi%2 {
			fix := hi + 1
			if fix > 65535 {
				fix = hi - 1
			}
			w = append(w, fmt.Sprintf("%snet.ipv4.ip_local_port_range %q: both ends are %s; the kernel prefers ends of different parity (ip-sysctl.rst), e.g. \"%d %d\"",
				p.where("sysctl", "net.ipv4.ip_local_port_range", "value"), s.Value, map[bool]string{true: "even", false: "odd"}[lo%2 == 0], lo, fix))
		}
	}
	return w
}
