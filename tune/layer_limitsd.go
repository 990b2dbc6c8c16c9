package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The limits.d layer: /etc/security/limits.d/60-hostprep.conf with soft and
// hard nofile for each user (root listed, since "*" does not cover it),
// never below what new sessions get now (neverlower.go). Written and
// rolled back as an owned file (ownedfile.go); verified at boot by
// limitsDItems (here; boot.go's bootLimitItems adds the fs.nr_open check
// every nofile layer shares). At rollback, the hard nofile of a limits
// file left behind, or not hostprep's, is what fs.nr_open is not lowered
// below (scanLeft, scanForeign, here).

// layerLimitsD names the limits.d layer's file at apply time.
const layerLimitsD = "limits.d"

// limitsDWants plans the limits.d file.
func (pl *Plan) limitsDWants(per journal.Persisted) []fileWant {
	if per.Nofile == nil {
		return nil
	}
	return []fileWant{{layer: layerLimitsD, path: files.LimitsConf,
		data: files.RenderLimits(pl.profiles, per.NofileUsers, per.Nofile.Soft, per.Nofile.Hard),
		note: fmt.Sprintf("new login sessions get nofile %d:%d (pam_limits); running shells and services keep their limit", per.Nofile.Soft, per.Nofile.Hard)}}
}

// anyUser is a user name in no group, so that only "*" lines apply to it:
// what every ordinary login session gets.
const anyUser = hostconf.AnyUser

// limitsDItems compares each nofile limit hostprep persisted in its
// limits.d file with what pam_limits gives a new login session at the
// next boot.
func limitsDItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	root := env.bootRoot()
	overlay = imageLimitsConf(env, overlay)
	var out []BootItem
	if n := per.Nofile; n != nil {
		for _, u := range per.NofileUsers {
			var b hostconf.Nofile
			var err error
			switch {
			case u == "*":
				b, err = hostconf.NofileOverlay(root, anyUser, overlay)
			case strings.HasPrefix(u, "@") && !strings.Contains(u, ":"):
				// A member of the group with no line of its own.
				b, err = hostconf.NofileForGroupsOverlay(root, anyUser, []string{u[1:]}, overlay)
			case strings.HasPrefix(u, "%") || strings.Contains(u, ":"):
				continue // maxlogins domains and uid/gid ranges: no single user stands for them
			default:
				b, err = hostconf.NofileOverlay(root, u, overlay)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, limitItem(env, "limits.d nofile for "+u, *n, b))
		}
	}
	return out, nil
}

func fmtRlimit(v uint64) string {
	if v == hostconf.Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// limitItem compares pam_limits' boot soft and hard with want, which
// hostprep wrote in files.LimitsConf; the problem says whether hostprep's
// file is missing, was edited, or another line wins.
func limitItem(env Env, name string, want journal.Limit, b hostconf.Nofile) BootItem {
	soft, hard := b.Soft, b.Hard
	it := BootItem{Limit: name, Want: fmtLimit(want.Soft, want.Hard), OK: true, hard: hostconf.Unlimited}
	if hard.Set {
		it.hard = hard.Value
	}
	if soft.Set && hard.Set && soft.Value > hard.Value {
		// pam_limits lowers a soft above the hard to the hard before
		// setrlimit (setup_limits in pam_limits.c).
		soft.Value = hard.Value
	}
	s, h := "inherited", "inherited"
	if soft.Set {
		s = fmtRlimit(soft.Value)
	}
	if hard.Set {
		h = fmtRlimit(hard.Value)
	}
	it.Boot.Value = s + ":" + h
	win := hard
	if !hard.Set || (hard.Value >= want.Hard && soft.Set && soft.Value < want.Soft) {
		win = soft
	}
	if win.Set {
		it.Boot.File, it.Boot.Line = win.File.Name(), win.Line
	}
	switch {
	case b.Broken.Set:
		it.OK = false
		it.Boot.Value, it.Boot.File = "no session", b.Broken.File.Name()
		it.Problem = brokenLimits(env, name, b.Broken.File)
	case b.NoLimits.Set:
		it.OK = false
		it.Boot.File, it.Boot.Line = b.NoLimits.File.Name(), b.NoLimits.Line
		it.Problem = fmt.Sprintf("%s: %s line %q makes pam_limits set no limit at all for it (PAM_IGNORE; files after it are not read), so sessions keep what they inherit, not the %s hostprep wrote; hostprep never edits a file it does not own: remove that line", name, b.NoLimits.Where(), b.NoLimits.Domain+" -", it.Want)
	case !soft.Set || !hard.Set:
		it.OK = false
		it.Problem = fmt.Sprintf("%s: pam_limits sets no nofile for it (soft %s, hard %s): hostprep's %s is missing, unreadable or edited; %s writes it again", name, s, h, files.LimitsConf, env.reapply())
	case (hard.Value < want.Hard || soft.Value < want.Soft) && win.File.Path == files.LimitsConf:
		it.OK = false
		it.Problem = fmt.Sprintf("%s: new login sessions get nofile %s:%s, below the %s hostprep wrote: hostprep's %s was edited (line %d); %s writes it again", name, s, h, it.Want, files.LimitsConf, win.Line, env.reapply())
	case hard.Value < want.Hard || soft.Value < want.Soft:
		it.OK = false
		it.Problem = fmt.Sprintf("%s: new login sessions get nofile %s:%s, below the %s hostprep wrote: %s line %q wins (a user line beats @group beats *, and a later file beats an earlier one); hostprep never edits a file it does not own: change or remove that line", name, s, h, it.Want, win.Where(), win.Domain)
	}
	return it
}

// imageLimitsConf is overlay with an empty limits.conf when an image
// has none and no PAM file of it loads pam_limits (an image of
// configuration only, or without PAM): then nothing fails a session for
// it. An image whose /etc/pam.d (or /usr/lib/pam.d) loads pam_limits
// without a limits.conf is left as it is: every login of a host booted
// from it fails (brokenLimits).
func imageLimitsConf(env Env, overlay map[string][]byte) map[string][]byte {
	if !env.ImageMode() || imagePamLimits(env.bootRoot()) != "" {
		return overlay
	}
	if _, ok := overlay[hostconf.LimitsConf]; ok {
		return overlay
	}
	if _, err := os.Lstat(filepath.Join(env.bootRoot(), hostconf.LimitsConf)); !errors.Is(err, fs.ErrNotExist) {
		return overlay
	}
	out := maps.Clone(overlay)
	if out == nil {
		out = map[string][]byte{}
	}
	out[hostconf.LimitsConf] = []byte{}
	return out
}

// imagePamLimits is the first PAM service file under root that loads
// pam_limits (relative to root), or "".
func imagePamLimits(root string) string {
	for _, d := range []string{"/etc/pam.d", "/usr/lib/pam.d"} {
		ents, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(root, d, e.Name()))
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if l = strings.TrimSpace(l); !strings.HasPrefix(l, "#") && strings.Contains(l, "pam_limits.so") {
					return path.Join(d, e.Name()) // a commented-out line loads nothing
				}
			}
		}
	}
	return ""
}

// brokenLimits is the problem of a limits file pam_limits cannot open:
// it then fails every session it opens ("cannot open session: Error in
// service module", measured with runuser and Debian 12's pam_limits).
func brokenLimits(env Env, name string, f hostconf.ConfFile) string {
	const fails = "pam_limits then fails every login session (\"cannot open session: Error in service module\": login, su, sshd, runuser), so no session gets any limit"
	if f.Path != hostconf.LimitsConf {
		return fmt.Sprintf("%s: pam_limits cannot open %s (a link to a missing file); %s; remove that entry or fix its link", name, f.Name(), fails)
	}
	missing := fmt.Sprintf("%s: %s does not exist", name, f.Name())
	if f.Target != f.Path {
		missing = fmt.Sprintf("%s: %s is a link to a missing file", name, f.Path)
	}
	if env.ImageMode() {
		return fmt.Sprintf("%s in the image, whose %s loads pam_limits: a host booted from it fails every login session there (\"cannot open session: Error in service module\"), so no session gets hostprep's limits.d value; the file comes with the PAM modules package (Debian: libpam-modules): install it into the image, or create %s (it may be empty)", missing, imagePamLimits(env.bootRoot()), hostconf.LimitsConf)
	}
	return fmt.Sprintf("%s; %s; restore it (Debian: libpam-modules ships it; it may be empty)", missing, fails)
}

// scanLeft finds, before anything is undone, the owned files rollback
// will leave (changed by someone else since hostprep wrote them) and the
// hard nofile each sets, so that r.need is known whatever order the files
// are undone in: a limits file written before hostprep's sysctl.d file is
// undone after it.
func (r *rollbackRun) scanLeft() {
	for path, j := range r.st.Files {
		cur, exists, err := files.Read(path)
		if err != nil || !exists || journal.SHA256(cur) == j.SetSHA256 || (j.Existed && string(cur) == string(j.Original)) {
			continue
		}
		if n, ok := files.HardNofile(cur); ok {
			r.keepFiles[path] = n
			if n > r.need || (n == r.need && path < r.needFile) {
				r.need, r.needFile, r.needWhy = n, path, "left behind, edited after hostprep wrote it"
			}
		}
	}
}

// scanForeign adds the limits files hostprep does not own
// (/etc/security/limits.conf and limits.d/*.conf, as pam_limits reads
// them) to what rollback must not lower fs.nr_open below: one written
// after apply, relying on hostprep's fs.nr_open, would make every login
// fail to set its hard nofile once rollback lowered fs.nr_open below it
// (pam_limits' setrlimit gets EPERM and the session fails).
func (r *rollbackRun) scanForeign() {
	for _, f := range hostconf.LimitsFiles(r.env.bootRoot()) {
		p := r.env.path(f.Path)
		if _, owned := r.st.Files[p]; owned || f.Masked {
			continue
		}
		cur, exists, err := files.Read(r.env.path(f.Target))
		if err != nil || !exists {
			continue
		}
		if n, ok := files.HardNofile(cur); ok && (n > r.need || (n == r.need && p < r.needFile)) {
			r.need, r.needFile, r.needWhy = n, p, "not hostprep's"
		}
	}
}
