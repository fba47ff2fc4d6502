package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/extractq/extractq/schema"
)

// Label is one document and the value it should give.
type Label struct {
	// ID is the document's id: its path (as given, slash-separated) for a
	// labelled folder, the "id" field of a JSONL line.
	ID string `json:"id"`
	// Path is the document's file; "" when the text is given inline.
	Path string `json:"path,omitempty"`
	// Text is the document's text, read by LoadOptions.ReadDocument.
	Text string `json:"-"`
	// Expected is the label: the value a correct extraction gives.
	Expected json.RawMessage `json:"expected"`
	// Source says where the label was read: FILE or FILE:LINE.
	Source string `json:"source"`
}

// Set is a loaded set of labels, and what did not pair up.
type Set struct {
	Labels []Label
	// Unlabelled lists documents found without a label (not scored).
	Unlabelled []string
	// Orphans lists labels without a document (not run).
	Orphans []string
}

// ErrLabels is matched by every error about the labels themselves.
var ErrLabels = errors.New("bad labels")

// LabelError lists every problem found in a set of labels at once, so that
// one pass fixes them all.
type LabelError struct {
	Problems []string
}

func (e *LabelError) Error() string {
	const show = 20
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) in the labels:", len(e.Problems))
	for i, p := range e.Problems {
		if i == show {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Problems)-show)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

func (e *LabelError) Unwrap() error { return ErrLabels }

// LoadOptions say how labelled documents are read.
type LoadOptions struct {
	// ReadDocument returns a document file's text; nil reads the file as
	// UTF-8 text. Commands pass the document reader, so PDFs and e-mails
	// are labelled like text.
	ReadDocument func(path string) (string, error)
}

// LabelSuffix ends a label file beside its document: invoice-01.pdf is
// labelled by invoice-01.expected.json.
const LabelSuffix = ".expected.json"

// IsLabelFile reports whether a file is a label beside a document rather
// than a document.
func IsLabelFile(name string) bool { return strings.HasSuffix(name, LabelSuffix) }

// Load reads labels from a folder (NAME.expected.json beside each document
// NAME.*) or a JSONL file ({"id", "text" | "path", "expected"} per line),
// and validates each label against s (nil: no validation). Every problem —
// a label that does not validate, malformed lines, two labels for one id —
// is reported together in a *LabelError; documents without a label and
// labels without a document are listed in the Set, not dropped silently.
func Load(path string, s *schema.Schema, opts LoadOptions) (*Set, error) {
	if opts.ReadDocument == nil {
		opts.ReadDocument = readText
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("labels %s: %w", path, err)
	}
	var set *Set
	var problems []string
	if info.IsDir() {
		set, problems, err = loadFolder(path, opts)
	} else {
		set, problems, err = loadJSONL(path, opts)
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, l := range set.Labels {
		if first, dup := seen[l.ID]; dup {
			problems = append(problems, fmt.Sprintf("%s: id %q is labelled twice (first at %s): keep one label per document", l.Source, l.ID, first))
			continue
		}
		seen[l.ID] = l.Source
		if s == nil {
			continue
		}
		vs, err := s.ValidateJSON(l.Expected)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: label of %q is not JSON: %v", l.Source, l.ID, err))
			continue
		}
		for _, v := range vs {
			problems = append(problems, fmt.Sprintf("%s: label of %q does not validate against the schema at %s: %s", l.Source, l.ID, pointerOrRoot(v.Pointer), v.Message))
		}
	}
	if len(problems) > 0 {
		return nil, &LabelError{Problems: problems}
	}
	if len(set.Labels) == 0 {
		return nil, fmt.Errorf("%w: %s holds no labels (want NAME%s beside each document, or a JSONL of {\"id\", \"text\"|\"path\", \"expected\"})", ErrLabels, path, LabelSuffix)
	}
	return set, nil
}

func pointerOrRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

func readText(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("%s is not UTF-8 text", path)
	}
	return string(b), nil
}

// loadFolder pairs NAME.expected.json with NAME.* in each folder.
func loadFolder(root string, opts LoadOptions) (*Set, []string, error) {
	set := &Set{}
	var problems []string
	labels := map[string]string{} // NAME (path without extension) → label file
	docs := map[string][]string{} // NAME → document files
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if IsLabelFile(p) {
			labels[strings.TrimSuffix(p, LabelSuffix)] = p
			return nil
		}
		name := strings.TrimSuffix(p, filepath.Ext(p))
		docs[name] = append(docs[name], p)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("labels %s: %w", root, err)
	}
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		if _, ok := labels[name]; !ok {
			set.Unlabelled = append(set.Unlabelled, docs[name]...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		lf := labels[name]
		ds := docs[name]
		switch {
		case len(ds) == 0:
			set.Orphans = append(set.Orphans, lf)
			continue
		case len(ds) > 1:
			problems = append(problems, fmt.Sprintf("%s: labels %d documents (%s): keep one document per name", lf, len(ds), strings.Join(ds, ", ")))
			continue
		}
		b, err := os.ReadFile(lf)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", lf, err))
			continue
		}
		if !json.Valid(b) {
			problems = append(problems, fmt.Sprintf("%s: not valid JSON", lf))
			continue
		}
		text, err := opts.ReadDocument(ds[0])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: cannot read the labelled document: %v", ds[0], err))
			continue
		}
		set.Labels = append(set.Labels, Label{ID: filepath.ToSlash(ds[0]), Path: ds[0], Text: text, Expected: bytes.TrimSpace(b), Source: lf})
	}
	return set, problems, nil
}

// loadJSONL reads one label per line; a "path" is relative to the file.
func loadJSONL(file string, opts LoadOptions) (*Set, []string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, fmt.Errorf("labels %s: %w", file, err)
	}
	defer f.Close()
	set := &Set{}
	var problems []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", file, n)
		var rec struct {
			ID       json.RawMessage `json:"id"`
			Text     *string         `json:"text"`
			Path     string          `json:"path"`
			Expected json.RawMessage `json:"expected"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			problems = append(problems, fmt.Sprintf(`%s: not a JSON object {"id", "text"|"path", "expected"}: %v`, src, err))
			continue
		}
		id := strings.Trim(string(rec.ID), `"`)
		if id == "" || id == "null" {
			problems = append(problems, fmt.Sprintf(`%s: missing "id"`, src))
			continue
		}
		if len(rec.Expected) == 0 || string(rec.Expected) == "null" {
			problems = append(problems, fmt.Sprintf(`%s: %q has no "expected" value`, src, id))
			continue
		}
		l := Label{ID: id, Expected: rec.Expected, Source: src}
		switch {
		case rec.Text != nil && rec.Path != "":
			problems = append(problems, fmt.Sprintf(`%s: %q gives both "text" and "path": keep one`, src, id))
			continue
		case rec.Text != nil:
			l.Text = *rec.Text
		case rec.Path != "":
			l.Path = rec.Path
			if !filepath.IsAbs(l.Path) {
				l.Path = filepath.Join(filepath.Dir(file), l.Path)
			}
			text, err := opts.ReadDocument(l.Path)
			if errors.Is(err, fs.ErrNotExist) {
				set.Orphans = append(set.Orphans, fmt.Sprintf("%s (%s: no such file)", src, l.Path))
				continue
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: cannot read %s: %v", src, l.Path, err))
				continue
			}
			l.Text = text
		default:
			set.Orphans = append(set.Orphans, fmt.Sprintf(`%s (%q has neither "text" nor "path")`, src, id))
			continue
		}
		if strings.TrimSpace(l.Text) == "" {
			set.Orphans = append(set.Orphans, fmt.Sprintf("%s (%q: the document is empty)", src, id))
			continue
		}
		set.Labels = append(set.Labels, l)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("labels %s: %w", file, err)
	}
	return set, problems, nil
}
