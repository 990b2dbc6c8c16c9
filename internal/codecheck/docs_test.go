package codecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/hostprep/hostprep/internal/testenv"
)

// maxReadmeLines is the longest README.md may be: what hostprep is, the
// quick start, a screen per command, exit codes and where each topic
// lives. The reference belongs in docs/.
const maxReadmeLines = 400

var (
	// mdLink is an inline Markdown link or image, [text](target) or
	// [text](target "title"); the text may wrap onto the next line.
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	// codeSpan is inline code on one line, where a link is no link.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// mdHeading is an ATX heading, # to ######.
	mdHeading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// headingLinkTarget is a link in a heading: GitHub's anchor keeps its
	// text and drops its target.
	headingLinkTarget = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// githubAnchor returns the anchor GitHub gives a heading (github-slugger):
// the rendered text lower-cased, every character that is not a letter,
// mark, digit, connector (_), space or hyphen dropped, and each space
// made a hyphen.
func githubAnchor(heading string) string {
	s := headingLinkTarget.ReplaceAllString(heading, "$1")
	s = strings.NewReplacer("`", "", "*", "").Replace(s)
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdText returns a Markdown file's lines with fenced code blocks blanked,
// so neither their links nor their "# comments" count.
func mdText(b []byte) []string {
	lines := strings.Split(string(b), "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// mdAnchors returns the anchors of a Markdown file's headings, numbered
// as GitHub numbers repeats (name, name-1, name-2).
func mdAnchors(b []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range mdText(b) {
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := githubAnchor(m[2])
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// brokenLinks returns, for each Markdown file (relative to root), every
// relative link whose file does not exist and every #anchor that no
// heading of its target makes. Links to other sites are not followed.
func brokenLinks(t *testing.T, root string, files []string) []string {
	t.Helper()
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[path] = mdAnchors(b)
		return anchorsOf[path]
	}
	var bad []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		lines := mdText(b)
		for i := range lines {
			lines[i] = codeSpan.ReplaceAllString(lines[i], "")
		}
		text := strings.Join(lines, "\n")
		for _, m := range mdLink.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			line := 1 + strings.Count(text[:m[0]], "\n")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			full := filepath.Join(root, f) // a bare #anchor is in this file
			if path != "" {
				full = filepath.Join(root, filepath.Dir(f), path)
			}
			st, err := os.Stat(full)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s:%d: link %s: no such file %s", f, line, target, path))
				continue
			}
			if anchor == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(full, ".md") {
				bad = append(bad, fmt.Sprintf("%s:%d: link %s: #%s in a file that is not Markdown", f, line, target, anchor))
				continue
			}
			if !anchors(full)[anchor] {
				bad = append(bad, fmt.Sprintf("%s:%d: link %s: no heading makes the anchor #%s", f, line, target, anchor))
			}
		}
	}
	return bad
}

// docFiles lists README.md and docs/*.md relative to root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	sort.Strings(files[1:])
	return files
}

// TestDocsLinksResolve fails on a relative link in README.md or docs/*.md
// to a file that does not exist, or to an #anchor no heading makes, and
// on a README.md longer than maxReadmeLines.
func TestDocsLinksResolve(t *testing.T) {
	root := testenv.RepoRoot()
	files := docFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found only %v: README.md and the docs/ pages", files)
	}
	for _, p := range brokenLinks(t, root, files) {
		t.Error(p)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the reference into a page under docs/ and link it", n, maxReadmeLines)
	}
}

// The anchors are GitHub's: code marks and punctuation dropped, spaces
// made hyphens, repeats numbered; a link to a missing file or anchor, or
// an anchor on a folder, is reported with its file and line, and a link
// inside code is no link.
func TestBrokenLinksFound(t *testing.T) {
	for heading, want := range map[string]string{
		"`hostprep probe mqtt`":                   "hostprep-probe-mqtt",
		"Boot behaviour: the host after a reboot": "boot-behaviour-the-host-after-a-reboot",
		"A unit's LimitNOFILE= and TasksMax=":     "a-units-limitnofile-and-tasksmax",
		"Measured, not estimated: `--active`":     "measured-not-estimated---active",
		"See [docs](docs/x.md) now":               "see-docs-now",
		"fd.soft ≤ fd.hard_max":                   "fdsoft--fdhard_max",
	} {
		if got := githubAnchor(heading); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
	root := testenv.TempTree(t, map[string]string{
		"README.md": "# Top\n\n## Usage\n\n## Usage\n\nSee [a](docs/a.md#part-two), [b](docs/a.md#nope),\n" +
			"[c](docs/missing.md), [d](#usage-1), [e](#usage-2), [f](docs/#x), `[g](nowhere.md)`,\n" +
			"[h](https://example.com/x.md#y), [multi\nline](docs/a.md).\n\n```sh\n[i](nowhere.md)\n# not a heading\n```\n",
		"docs/a.md": "# A\n\n## Part two\n\nBack [up](../README.md#top).\n",
	})
	got := strings.Join(brokenLinks(t, root, []string{"README.md", "docs/a.md"}), "\n")
	want := strings.Join([]string{
		"README.md:7: link docs/a.md#nope: no heading makes the anchor #nope",
		"README.md:8: link docs/missing.md: no such file docs/missing.md",
		"README.md:8: link #usage-2: no heading makes the anchor #usage-2",
		"README.md:8: link docs/#x: #x in a file that is not Markdown",
	}, "\n")
	if got != want {
		t.Errorf("broken links:\n%s\nwant:\n%s", got, want)
	}
}
