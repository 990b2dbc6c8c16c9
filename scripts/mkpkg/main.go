// Command mkpkg builds hostprep's .deb and .rpm packages with nfpm
// (github.com/goreleaser/nfpm/v2) from a built binary and this checkout;
// ./install.sh --package deb|rpm runs it.
//
//	go run ./scripts/mkpkg --format deb --binary ./hostprep --version 1.2.0 --out dist
//
// A package holds:
//
//	/usr/bin/hostprep                                 the binary
//	/usr/share/man/man1/hostprep*.1.gz                one man page per command (hostprep gen-man)
//	/usr/lib/systemd/system/hostprep-ready.{service,timer}
//	                                                  examples/systemd, pointing at /usr/bin/hostprep;
//	                                                  installed, not enabled
//	/usr/share/doc/hostprep/                          README.md, docs/*.md and examples/
//
// It has no maintainer scripts: installing it changes nothing on the host
// until hostprep is run (systemctl enable --now hostprep-ready.timer to run
// it at boot). Exit 2 on bad flags, 1 when a package cannot be built.
package main

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// Options say what to package and where to write it.
type Options struct {
	// Formats are the packages to build: "deb", "rpm".
	Formats []string
	// Binary is the built hostprep (for GOARCH Arch).
	Binary string
	// Src is the checkout whose README.md, docs/ and examples/ are packaged.
	Src string
	// Version is hostprep's version (git describe: v1.2.0, v1.2.0-3-gabc,
	// 0a57aaf-dirty); see packageVersion.
	Version string
	// Arch is the Go architecture of Binary (amd64, arm64, ...).
	Arch string
	// Out is the directory the packages are written to (created).
	Out string
}

// binPath is where the packages install the binary; the example units
// (which name /usr/local/bin/hostprep, install.sh's place) are rewritten
// to it.
const binPath = "/usr/bin/hostprep"

func main() {
	o := Options{Arch: runtime.GOARCH}
	var formats string
	flag.StringVar(&formats, "format", "deb,rpm", "packages to build: deb, rpm or deb,rpm")
	flag.StringVar(&o.Binary, "binary", "", "the built hostprep binary (required)")
	flag.StringVar(&o.Src, "src", ".", "the hostprep checkout (README.md, docs/, examples/)")
	flag.StringVar(&o.Version, "version", "", "hostprep's version, e.g. the output of git describe (required)")
	flag.StringVar(&o.Arch, "arch", o.Arch, "Go architecture of --binary")
	flag.StringVar(&o.Out, "out", "dist", "directory to write the packages to")
	flag.Parse()
	o.Formats = strings.Split(formats, ",")
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "mkpkg:", err)
		os.Exit(2)
	}
	paths, err := Build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkpkg:", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

func (o Options) check() error {
	for _, f := range o.Formats {
		if f != "deb" && f != "rpm" {
			return fmt.Errorf("--format %q: want deb, rpm or deb,rpm", f)
		}
	}
	if o.Binary == "" {
		return errors.New("--binary is required: the hostprep binary to package (go build ./cmd/hostprep)")
	}
	if st, err := os.Stat(o.Binary); err != nil || st.IsDir() {
		return fmt.Errorf("--binary %s: not a file; build it first (go build ./cmd/hostprep)", o.Binary)
	}
	if o.Version == "" {
		return errors.New("--version is required, e.g. --version \"$(git describe --always --dirty)\"")
	}
	if _, err := os.Stat(filepath.Join(o.Src, "examples", "systemd")); err != nil {
		return fmt.Errorf("--src %s: not a hostprep checkout (no examples/systemd)", o.Src)
	}
	return nil
}

// Build writes one package per format into o.Out and returns their paths.
func Build(o Options) ([]string, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp("", "hostprep-pkg-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	contents, err := stageContents(o, stage)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, format := range o.Formats {
		p, err := buildOne(o, format, contents)
		if err != nil {
			return out, fmt.Errorf("%s: %w", format, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func buildOne(o Options, format string, contents files.Contents) (string, error) {
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	version, pre := packageVersion(o.Version)
	// A copy of the contents: the packager rewrites them (PrepareForPackager).
	var own files.Contents
	for _, c := range contents {
		cc := *c
		if c.FileInfo != nil {
			fi := *c.FileInfo
			cc.FileInfo = &fi
		}
		own = append(own, &cc)
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name: "hostprep", Arch: o.Arch, Platform: "linux",
		Version: version, Prerelease: pre, VersionSchema: "none", Release: "1",
		Section: "admin", Priority: "optional",
		Maintainer:  "hostprep maintainers <hostprep@users.noreply.github.com>",
		Homepage:    "https://github.com/hostprep/hostprep",
		Description: "Get a Linux host ready for very large loads, and prove it\nhostprep tunes a Linux host for very many connections (tune), checks whether\nit can carry a target number of sockets (preflight), proves it with a short\ncalibrated MQTT or IoTDB load (probe), or does all three (ready).",
		Overridables: nfpm.Overridables{Contents: own,
			RPM: nfpm.RPM{Summary: "Get a Linux host ready for very large loads, and prove it", Group: "Applications/System"}},
	})
	if err := nfpm.Validate(info); err != nil {
		return "", err
	}
	path := filepath.Join(o.Out, pkgr.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := pkgr.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}

// packageVersion splits git describe's output into a version both dpkg
// and rpm order correctly: "v1.2.0" is 1.2.0; "v1.2.0-3-gabc" is 1.2.0
// with prerelease "3.gabc"; a checkout without a tag ("0a57aaf-dirty")
// is 0.0.0 with prerelease "git.0a57aaf.dirty". The prerelease sorts
// before the plain version (1.2.0~3.gabc in dpkg and rpm).
func packageVersion(describe string) (version, prerelease string) {
	clean := func(s string) string {
		return strings.Trim(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(s, "."), ".")
	}
	if m := regexp.MustCompile(`^v?(\d+\.\d+\.\d+)(.*)$`).FindStringSubmatch(describe); m != nil {
		return m[1], clean(m[2])
	}
	return "0.0.0", clean("git." + describe)
}

// stageContents lays out the files a package holds: the binary, the man
// pages (gzipped, written by the binary's own gen-man), the systemd units
// with the binary's packaged path, and the docs.
func stageContents(o Options, stage string) (files.Contents, error) {
	file := func(src, dst string, mode fs.FileMode, typ string) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: typ, FileInfo: &files.ContentFileInfo{Mode: mode, Owner: "root", Group: "root"}}
	}
	bin, err := filepath.Abs(o.Binary)
	if err != nil {
		return nil, err
	}
	cs := files.Contents{file(bin, binPath, 0o755, "")}

	man := filepath.Join(stage, "man")
	if err := os.Mkdir(man, 0o755); err != nil {
		return nil, err
	}
	if out, err := exec.Command(bin, "gen-man", man).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s gen-man: %v: %s", o.Binary, err, out)
	}
	pages, _ := filepath.Glob(filepath.Join(man, "*.1"))
	if len(pages) == 0 {
		return nil, fmt.Errorf("%s gen-man wrote no man page", o.Binary)
	}
	for _, p := range pages {
		if err := gzipFile(p, p+".gz"); err != nil {
			return nil, err
		}
		cs = append(cs, docFile(file, p+".gz", "/usr/share/man/man1/"+filepath.Base(p)+".gz")...)
	}

	units, _ := filepath.Glob(filepath.Join(o.Src, "examples", "systemd", "hostprep-*"))
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			return nil, err
		}
		staged := filepath.Join(stage, filepath.Base(u))
		if err := os.WriteFile(staged, []byte(strings.ReplaceAll(string(b), "/usr/local/bin/hostprep", binPath)), 0o644); err != nil {
			return nil, err
		}
		cs = append(cs, file(staged, "/usr/lib/systemd/system/"+filepath.Base(u), 0o644, ""))
	}

	const docDir = "/usr/share/doc/hostprep/"
	docs := []string{"README.md"}
	mds, _ := filepath.Glob(filepath.Join(o.Src, "docs", "*.md"))
	for _, m := range mds {
		docs = append(docs, filepath.Join("docs", filepath.Base(m)))
	}
	err = filepath.WalkDir(filepath.Join(o.Src, "examples"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err
		}
		rel, err := filepath.Rel(o.Src, p)
		docs = append(docs, rel)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		src, err := filepath.Abs(filepath.Join(o.Src, d))
		if err != nil {
			return nil, err
		}
		cs = append(cs, docFile(file, src, docDir+filepath.ToSlash(d))...)
	}
	return cs, nil
}

// docFile is a documentation file: marked %doc in the rpm (nfpm keeps the
// "doc" type for rpm only and drops such files from a deb), a plain file
// in the deb.
func docFile(file func(src, dst string, mode fs.FileMode, typ string) *files.Content, src, dst string) []*files.Content {
	rpm, deb := file(src, dst, 0o644, "doc"), file(src, dst, 0o644, "")
	rpm.Packager, deb.Packager = "rpm", "deb"
	return []*files.Content{rpm, deb}
}

func gzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestCompression)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
