package facts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// The configuration-file part of a target's limits comes from hostconf,
// the one reading of systemd's and pam_limits' files that tune's boot
// verification also uses: the manager's DefaultLimitNOFILE
// (hostconf.ManagerNofile), a unit's file and drop-ins (hostconf.UnitNofile) and
// limits.conf/limits.d for a login session (hostconf.NofileForGroups).
// preflight adds what the files alone cannot say: how systemd resolves a
// value above fs.nr_open or infinity (resolveNofile), what a running unit
// or process has (systemctl show, /proc/PID/limits).

// readConf names the files hostconf read for --record: each file where
// the program finds it and, behind a symlink, the file it points to, so a
// replay resolves, shadows and names them as the live host did.
func (g *Gatherer) readConf(files []hostconf.ConfFile) {
	if g.rec == nil {
		return
	}
	for _, f := range files {
		if !g.rec.unitLinks && inUnitDirs(f.Path) {
			// the unit name map read every link in the unit
			// directories: aliases, linked unit files, masks
			g.rec.unitLinks = true
			for p, t := range hostconf.UnitDirLinks(g.Root) {
				if _, ok := g.rec.links[filepath.Join(g.Root, p)]; !ok {
					g.rec.link(filepath.Join(g.Root, p), t)
				}
			}
		}
		p := filepath.Join(g.Root, f.Path)
		if f.Target == "" || f.Target == f.Path {
			g.rec.add(p)
			continue
		}
		g.rec.link(p, f.Target)
		if f.Target != "/dev/null" {
			t := filepath.Join(g.Root, f.Target)
			g.rec.add(t)
			g.rec.filterAs[t] = p
		}
	}
}

// inUnitDirs says whether p (relative to the root) lies in one of
// hostconf.UnitDirs: a unit file or drop-in.
func inUnitDirs(p string) bool {
	for _, d := range hostconf.UnitDirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// systemdDefault reads the manager's DefaultLimitNOFILE as systemd merges
// system.conf and its drop-ins (tune/hostconf.ManagerNofile); systemd's
// built-in 1024:524288 when none sets it.
func (g *Gatherer) systemdDefault() {
	set, files, err := hostconf.ManagerNofile(g.Root)
	g.readConf(files)
	if err != nil {
		g.note("systemd DefaultLimitNOFILE: %v", err)
		return
	}
	g.F.Systemd.DefaultLimitNOFILE = &profiles.Limit{Soft: set.Soft, Hard: set.Hard}
	g.F.Systemd.DefaultLimitNOFILEFrom = set.Where()
}

// loginNofile reads what pam_limits gives a new login session of the user
// running hostprep (or the recorded one) from limits.conf and limits.d
// (tune/hostconf.NofileForGroups), into Facts.Login.
func (g *Gatherer) loginNofile() {
	name, groups := g.user()
	var overlay map[string][]byte
	if _, err := os.Lstat(filepath.Join(g.Root, hostconf.LimitsConf)); !g.live() && errors.Is(err, fs.ErrNotExist) {
		// A recording or fixture without limits.conf did not record
		// it: read it as empty, not as the missing file that fails
		// every session on a host.
		overlay = map[string][]byte{hostconf.LimitsConf: {}}
	}
	n, err := hostconf.NofileForGroupsOverlay(g.Root, name, groups, overlay)
	g.readConf(n.Files)
	if err != nil {
		g.note("limits.conf/limits.d: %v", err)
		return
	}
	if n.Broken.Set {
		g.note("pam_limits cannot open %s (missing, or a link to a missing file): every new login session fails to open; restore the file or remove that entry", n.Broken.File.Name())
		return
	}
	l := &LoginNofile{User: name, Groups: groups}
	line := func(v hostconf.LimitValue) *LimitLine {
		if !v.Set {
			return nil
		}
		return &LimitLine{Value: v.Value, Domain: v.Domain, From: v.Where()}
	}
	l.Soft, l.Hard = line(n.Soft), line(n.Hard)
	g.F.Login = l
}

// describe says what the login gets and from which lines:
// `user alice: soft 65536 ("@adm", /etc/security/limits.conf:4), hard not set`;
// a soft and hard from one line (a "-" line) are said once:
// `user root: nofile 65536 ("root", /etc/security/limits.conf:4)`.
func (l *LoginNofile) Describe() string {
	one := func(which string, v *LimitLine) string {
		if v == nil {
			return which + " not set (inherited)"
		}
		return fmt.Sprintf("%s %s (%q, %s)", which, FmtNofile(v.Value), v.Domain, v.From)
	}
	if s, h := l.Soft, l.Hard; s != nil && h != nil && *s == *h { // one "-" line, or two alike: said once
		return fmt.Sprintf("user %s: %s", l.User, one("nofile", s))
	}
	return fmt.Sprintf("user %s: %s, %s", l.User, one("soft", l.Soft), one("hard", l.Hard))
}

// unitNofile is what a unit's files say (tune/hostconf.UnitNofile).
type unitNofile struct {
	// file is the unit's own file ("" when missing).
	file string
	// missing says why there is no unit to start ("" when there is one);
	// absent that the host has no such unit at all (not masked or broken).
	missing string
	absent  bool
	// lim is the unit's LimitNOFILE (found) or the manager default; from
	// is the FILE:LINE that sets it.
	lim   profiles.Limit
	from  string
	found bool
	// user is the unit's User= ("" for root).
	user string
	// files are the unit file and its drop-ins, in the order systemd
	// reads them.
	files []hostconf.ConfFile
}

// unitFromFiles reads a unit's LimitNOFILE and User= from its file and
// drop-ins under the root as systemd merges them (tune/hostconf.UnitNofile,
// hostconf.LastSetting). Errors (exitcode.Environment): a file that exists
// but cannot be read.
func (g *Gatherer) unitFromFiles(unit string) (unitNofile, error) {
	set, files, err := hostconf.UnitNofile(g.Root, unit)
	g.readConf(files)
	var u unitNofile
	if err != nil {
		return u, exitcode.Environmentf("--service %s: %v (run as root)", unit, err)
	}
	if len(files) == 0 || !hostconf.IsUnitFile(files[0].Path, unit) {
		u.absent = true
		u.missing = "no such unit: no unit file in " + strings.Join(hostconf.UnitDirs, ", ") + ", no SysV init script in /etc/init.d that systemd-sysv-generator makes one of (drop-ins alone do not make a unit)"
		return u, nil
	}
	if files[0].Masked {
		u.missing = fmt.Sprintf("it is masked (%s is empty or a symlink to /dev/null), so systemd refuses to start it", files[0].Name())
		return u, nil
	}
	if files[0].Broken != "" {
		u.missing = fmt.Sprintf("systemd cannot parse its unit file (%s), so it fails to load the unit and refuses to start it", files[0].Broken)
		return u, nil
	}
	u.file, u.files = files[0].Name(), files
	u.lim, u.from = profiles.Limit{Soft: set.Soft, Hard: set.Hard}, set.Where()
	for _, f := range files {
		u.found = u.found || (set.Set && f.Path == set.File.Path)
	}
	if !u.found {
		// The manager default applies: record the files it came from.
		_, mfiles, _ := hostconf.ManagerNofile(g.Root)
		g.readConf(mfiles)
	}
	u.user, _, err = hostconf.LastSetting(g.Root, files, "Service", "User")
	if err != nil {
		return u, exitcode.Environmentf("--service %s: %v (run as root)", unit, err)
	}
	return u, nil
}
