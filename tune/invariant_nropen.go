package tune

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/proclimits"
	"github.com/hostprep/hostprep/profiles"
)

// The fs.nr_open invariant: fs.nr_open, live and after the next boot,
// stays at or above every hard nofile configured anywhere on the host.
// The kernel refuses setrlimit(RLIMIT_NOFILE) above fs.nr_open (EPERM), so
// a hard nofile above it fails wherever it is set: pam_limits fails the
// session ("sudo: pam_open_session: Permission denied", cron stops),
// systemd fails to start the unit. The configuration is read with
// hostconf (the same readers verify --boot uses), as the plan leaves it
// (hostprep's own files with their planned bytes).

// hardNofile is one configured hard nofile: its value in file
// descriptors, who gets it and where it is set ("FILE:LINE", or what
// else it is, for PID 1).
type hardNofile struct {
	hard  uint64
	who   string
	where string
	fails string // what breaks when fs.nr_open is below it
}

// configuredHardNofiles lists every hard nofile set on the host under the
// root, highest first: pam_limits' for root and for an ordinary login
// user (limits.conf and limits.d, explicit root lines included), systemd's
// DefaultLimitNOFILE, the LimitNOFILE= of each service unit in the unit
// directories, and PID 1's own hard limit (live from /proc/1/limits on a
// host; at boot the value systemd gives itself, hostconf.Pid1NofileHard).
// Unlimited and infinity values are left out: pam_limits and systemd turn
// them into fs.nr_open itself. overlay gives planned bytes of files
// (paths relative to the root). Errors: exitcode.Environment when a
// configuration file exists but cannot be read.
func configuredHardNofiles(env Env, overlay map[string][]byte) ([]hardNofile, error) {
	root := env.bootRoot()
	var out []hardNofile
	add := func(hard uint64, who, where, fails string) {
		if hard == 0 || hard == hostconf.Unlimited {
			return
		}
		out = append(out, hardNofile{hard: hard, who: who, where: where, fails: fails})
	}
	const pamFails = `pam_limits fails every such session ("sudo: pam_open_session: Permission denied", cron stops)`
	for _, u := range []struct{ user, who string }{{"root", "root's login sessions"}, {anyUser, "every login session"}} {
		n, err := hostconf.NofileOverlay(root, u.user, overlay)
		if err != nil {
			return nil, exitcode.Environmentf("tune: %w", err)
		}
		if n.Hard.Set {
			add(n.Hard.Value, u.who, n.Hard.Where(), pamFails)
		}
	}
	m, _, err := hostconf.ManagerNofileOverlay(root, overlay)
	if err != nil {
		return nil, exitcode.Environmentf("tune: %w", err)
	}
	if m.Infinity == "" {
		add(m.Hard, "every systemd service (DefaultLimitNOFILE)", m.Where(), "systemd fails to start every service that inherits it")
	}
	for _, unit := range serviceUnits(env, overlay) {
		s, _, err := hostconf.UnitNofileOverlay(root, unit, overlay)
		if err != nil {
			return nil, exitcode.Environmentf("tune: %w", err)
		}
		if s.Set && s.Infinity == "" && s.Where() != m.Where() {
			add(s.Hard, unit+" (LimitNOFILE)", s.Where(), "systemd fails to start "+unit)
		}
	}
	if !env.ImageMode() {
		p := filepath.Join(env.proc(), "1", "limits")
		if _, hard, err := proclimits.Nofile(p); err == nil {
			add(hard, "PID 1 (now)", p, "services given LimitNOFILE=infinity and a daemon-reexec fail to set it")
		}
	}
	pid1 := env.pid1Nofile()
	add(pid1.Value, "PID 1 (after the next boot)", pid1.From, "services given LimitNOFILE=infinity fail to set it")
	// one entry per line that sets it (the two pam_limits users share "*" lines)
	seen := map[string]bool{}
	out = slices.DeleteFunc(out, func(h hardNofile) bool {
		k := h.where + "\x00" + fmt.Sprint(h.hard)
		dup := seen[k]
		seen[k] = true
		return dup
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].hard > out[j].hard })
	return out, nil
}

// serviceUnits are the service units (and templates) in the unit
// directories under the root whose unit file or drop-ins mention
// LimitNOFILE (with overlay's files, paths relative to the root), each
// once, sorted: the units whose LimitNOFILE= the invariant reads with
// hostconf. A file that never names the setting cannot set it, so the
// others are not read (a host has hundreds of units). A drop-in for every
// service (service.d) makes every unit a candidate.
func serviceUnits(env Env, overlay map[string][]byte) []string {
	const setting = "LimitNOFILE"
	all, cand := map[string]bool{}, map[string]bool{}
	every := false
	// note records rel (relative to the root), whose bytes mention the
	// setting when mentions: a unit file or a drop-in of a unit.
	note := func(rel string, mentions bool) {
		dir, name := path.Base(path.Dir(rel)), path.Base(rel)
		unit := name
		if strings.HasSuffix(dir, ".d") { // a drop-in: the unit is its directory's name
			unit = strings.TrimSuffix(dir, ".d")
			if unit == "service" && mentions {
				every = true
			}
		}
		if !strings.HasSuffix(unit, ".service") {
			return
		}
		all[unit] = true
		if mentions {
			cand[unit] = true
		}
	}
	read := func(rel string) bool {
		if b, ok := overlay[rel]; ok {
			return bytes.Contains(b, []byte(setting))
		}
		b, err := os.ReadFile(env.path(rel))
		return err == nil && bytes.Contains(b, []byte(setting))
	}
	for _, d := range hostconf.UnitDirs {
		ents, _ := os.ReadDir(env.path(d))
		for _, e := range ents {
			rel := path.Join(d, e.Name())
			if strings.HasSuffix(e.Name(), ".d") {
				sub, _ := os.ReadDir(env.path(rel))
				for _, f := range sub {
					if strings.HasSuffix(f.Name(), ".conf") {
						note(path.Join(rel, f.Name()), read(path.Join(rel, f.Name())))
					}
				}
				continue
			}
			note(rel, read(rel))
		}
	}
	for rel, b := range overlay {
		if slices.ContainsFunc(hostconf.UnitDirs, func(d string) bool { return strings.HasPrefix(rel, d+"/") }) {
			note(rel, bytes.Contains(b, []byte(setting)))
		}
	}
	if every {
		cand = all
	}
	return slices.Sorted(maps.Keys(cand))
}

// checkNrOpenInvariant refuses (exitcode.BadInput, exit 2) a profile that
// sets fs.nr_open below a hard nofile configured anywhere on the host
// (configuredHardNofiles, with hostprep's own files as this plan writes
// them). The value checked is the one the profile persists, which is
// fs.nr_open after the next boot and, for every mode but at-least over a
// higher live value, also the live one. The error names the file:line of
// the highest conflicting limit, what fails, and the fix.
func (pl *Plan) checkNrOpenInvariant(p *profiles.Profile, targets map[string]target) error {
	t, ok := targets[keyNrOpen]
	if !ok {
		return nil
	}
	nrOpen, _, err := pl.effective(keyNrOpen, targets, defaultNrOpen)
	if err != nil {
		return err
	}
	limits, err := configuredHardNofiles(pl.env, overlayOf(pl.env, pl.files))
	if err != nil {
		return err
	}
	return nrOpenConflict(p.Where("sysctl", keyNrOpen), nrOpen, t.value, limits)
}

// nrOpenConflict is the error for fs.nr_open nrOpen (as the profile wrote
// it: value) below the highest of limits, or nil when every limit fits.
func nrOpenConflict(where string, nrOpen uint64, value string, limits []hardNofile) error {
	var over []hardNofile
	for _, l := range limits {
		if l.hard > nrOpen {
			over = append(over, l)
		}
	}
	if len(over) == 0 {
		return nil
	}
	first := over[0]
	also := ""
	if len(over) > 1 {
		var rest []string
		for _, l := range over[1:] {
			rest = append(rest, fmt.Sprintf("%d for %s (%s)", l.hard, l.who, l.where))
		}
		also = "; also above it: " + strings.Join(rest, ", ")
	}
	return exitcode.BadInputf("%ssysctl fs.nr_open %s: below the hard nofile %d that %s sets for %s; the kernel refuses a nofile limit above fs.nr_open, so %s%s: set fs.nr_open to at least %d (`fs.nr_open: {value: \"%d\", mode: at-least}`), or lower that limit first",
		where, value, first.hard, first.where, first.who, first.fails, also, first.hard, first.hard)
}
