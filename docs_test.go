package extractq_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches a Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks checks every relative link between the project's Markdown
// pages: the file (or folder) it names exists, and so does the heading its
// #anchor names. A page moved or a heading renamed fails here, not in a
// reader's browser.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	var pages []string
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 5 {
		t.Fatalf("found only %d Markdown pages: %v", len(pages), pages)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		a, err := headingAnchors(page)
		if err != nil {
			t.Errorf("%v", err)
		}
		anchors[page] = a
		return a
	}
	checked := 0
	for _, page := range pages {
		links, err := relativeLinks(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			checked++
			target, anchor, _ := strings.Cut(l.target, "#")
			dest := page
			if target != "" {
				dest = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link to %s: no such file", page, l.line, l.target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchorsOf(dest)[anchor] {
				t.Errorf("%s:%d: link to %s: %s has no heading #%s", page, l.line, l.target, dest, anchor)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d links", checked)
	}
}

type link struct {
	target string
	line   int
}

// relativeLinks lists a page's links outside code blocks that point into
// the repository (not to the web).
func relativeLinks(page string) ([]link, error) {
	f, err := os.Open(page)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []link
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fence := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(line), -1) {
			t := m[1]
			if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") {
				continue
			}
			out = append(out, link{t, n})
		}
	}
	return out, sc.Err()
}

// stripCode removes inline code spans, whose brackets are not links.
func stripCode(line string) string {
	var b strings.Builder
	in := false
	for _, r := range line {
		if r == '`' {
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors lists the anchors GitHub gives a page's headings:
// lower-cased, punctuation dropped, spaces as hyphens, repeats numbered.
func headingAnchors(page string) (map[string]bool, error) {
	b, err := os.ReadFile(page)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", page, err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		var s strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				s.WriteRune(r)
			case r == ' ':
				s.WriteByte('-')
			}
		}
		a := s.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out, nil
}
