package facts

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
)

// hardNofile gathers every hard nofile configured on the host
// (Facts.HardNofile): the hard and "-" nofile lines of limits.conf and
// limits.d for any domain (root's included), and each unit file's and
// drop-in's LimitNOFILE; and fs.nr_open at boot (Facts.BootNrOpen).
// systemd's DefaultLimitNOFILE and PID 1's limit are facts already.
//
// The files are read past the recorder: a recording keeps the lines
// found (Recording.HardNofile), not every unit file of the host.
func (g *Gatherer) hardNofile() {
	if g.rep != nil && g.rep.HardNofileRead {
		g.F.HardNofile, g.F.BootNrOpen = g.rep.HardNofile, g.rep.BootNrOpen
	} else {
		g.scanHardNofile()
		if v, file, line, ok := hostconf.SysctlAtBoot(g.Root, "fs.nr_open"); ok {
			var n uint64
			if _, err := fmt.Sscan(v, &n); err == nil {
				g.F.BootNrOpen = &LimitLine{Value: n, From: fmt.Sprintf("%s:%d", file, line)}
			}
		}
	}
	if g.rec != nil {
		g.rec.m.HardNofile, g.rec.m.HardNofileRead, g.rec.m.BootNrOpen = g.F.HardNofile, true, g.F.BootNrOpen
	}
}

// scanHardNofile reads the hard nofile lines of limits.conf, limits.d
// and every unit file and drop-in under the root.
func (g *Gatherer) scanHardNofile() {
	for _, cf := range hostconf.LimitsFiles(g.Root) {
		if cf.Masked {
			continue
		}
		g.scanLines(cf.Target, func(line string) (string, uint64, bool) {
			fs := strings.Fields(line)
			if len(fs) < 4 || fs[2] != "nofile" || (fs[1] != "hard" && fs[1] != "-") {
				return "", 0, false
			}
			v, ok := hostconf.ParseLimitsValue(fs[3])
			return fs[0], v, ok && v != Unlimited // pam_limits gives "unlimited" nofile fs.nr_open itself
		})
	}
	for _, dir := range hostconf.UnitDirs {
		for _, pat := range []string{"*.service", "*.service.d/*.conf"} {
			files, _ := filepath.Glob(filepath.Join(g.Root, dir, pat))
			for _, file := range files {
				rel := strings.TrimPrefix(file, strings.TrimSuffix(g.Root, "/"))
				unit := filepath.Base(file)
				if d := filepath.Dir(file); strings.HasSuffix(d, ".d") {
					unit = strings.TrimSuffix(filepath.Base(d), ".d")
				}
				g.scanLines(rel, func(line string) (string, uint64, bool) {
					v, ok := strings.CutPrefix(line, "LimitNOFILE=")
					if !ok {
						return "", 0, false
					}
					l, err := parseSystemdLimit(strings.TrimSpace(v))
					return unit, l.Hard, err == nil && l.Hard != Unlimited // systemd clamps infinity itself
				})
			}
		}
	}
}

// scanLines reads the file at rel (under the root) and records, for each
// line match accepts, a configured hard nofile with its FILE:LINE.
func (g *Gatherer) scanLines(rel string, match func(line string) (domain string, v uint64, ok bool)) {
	fh, err := os.Open(filepath.Join(g.Root, rel))
	if err != nil {
		return
	}
	defer fh.Close()
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		return
	}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if d, v, ok := match(line); ok {
			g.F.HardNofile = append(g.F.HardNofile, LimitLine{Value: v, Domain: d, From: fmt.Sprintf("%s:%d", rel, n)})
		}
	}
}
