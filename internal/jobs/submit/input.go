// Package submit queues documents as extraction jobs: it reads files,
// folders, JSONL and stdin, rejects bad input with a reason, registers the
// schema, stores the documents in the audit store (so failed or outdated
// ones can be resubmitted without the original files) and publishes the
// jobs asynchronously with bounded pending acks. It also resubmits dead
// letters and documents whose results were made under an older schema.
package submit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// Doc is one input document, or the reason it was rejected.
type Doc struct {
	ID       string
	Source   string // path, path:line, or "stdin"
	Text     string
	Metadata json.RawMessage
	// Err, when set, rejects the document; Text is then unused.
	Err error
}

// ErrBadInput is matched by the reasons input documents are rejected.
var ErrBadInput = errors.New("bad input")

func reject(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, a...))
}

// Reader turns paths into documents.
type Reader struct {
	// Glob filters files found in folders by base name (e.g. "*.txt");
	// empty means every file. Files named explicitly are always read.
	Glob string
	// Transcode converts text that is not UTF-8 from Windows-1252 (a
	// superset of Latin-1) instead of rejecting it.
	Transcode bool
	// StdinText reads stdin as one document instead of JSONL.
	StdinText bool
	Stdin     io.Reader
}

// Read calls fn for every document under paths in order: files, folders
// (recursively), *.jsonl files (one document per line) and "-" for stdin.
// It stops at the first error fn returns.
func (r *Reader) Read(paths []string, fn func(Doc) error) error {
	if r.Glob != "" {
		if _, err := filepath.Match(r.Glob, ""); err != nil {
			return fmt.Errorf("--glob %q: %w", r.Glob, err)
		}
	}
	for _, p := range paths {
		if err := r.readPath(p, fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) readPath(p string, fn func(Doc) error) error {
	if p == "-" {
		if r.StdinText {
			b, err := io.ReadAll(r.Stdin)
			if err != nil {
				return fn(Doc{ID: "stdin", Source: "stdin", Err: reject("read stdin: %v", err)})
			}
			return fn(r.doc("stdin", "stdin", b, nil))
		}
		return r.readJSONL(r.Stdin, "stdin", fn)
	}
	info, err := os.Stat(p)
	if err != nil {
		return fn(Doc{ID: p, Source: p, Err: reject("cannot read: %v", unwrapPath(err))})
	}
	if !info.IsDir() {
		return r.readFile(p, fn)
	}
	return filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fn(Doc{ID: path, Source: path, Err: reject("cannot read: %v", unwrapPath(err))})
		}
		if d.IsDir() {
			return nil
		}
		if r.Glob != "" {
			if ok, _ := filepath.Match(r.Glob, d.Name()); !ok {
				return nil
			}
		}
		return r.readFile(path, fn)
	})
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (r *Reader) readFile(path string, fn func(Doc) error) error {
	if strings.HasSuffix(path, ".jsonl") {
		f, err := os.Open(path)
		if err != nil {
			return fn(Doc{ID: path, Source: path, Err: reject("cannot read: %v", unwrapPath(err))})
		}
		defer f.Close()
		return r.readJSONL(f, path, fn)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fn(Doc{ID: path, Source: path, Err: reject("cannot read: %v", unwrapPath(err))})
	}
	return fn(r.doc(filepath.ToSlash(path), path, b, nil))
}

// jsonlLine is one JSONL record.
type jsonlLine struct {
	ID       *string         `json:"id"`
	Text     *string         `json:"text"`
	Metadata json.RawMessage `json:"metadata"`
}

// maxLine bounds one JSONL line (a document inline in JSON).
const maxLine = 128 << 20

func (r *Reader) readJSONL(in io.Reader, source string, fn func(Doc) error) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		src := fmt.Sprintf("%s:%d", source, line)
		var l jsonlLine
		if err := json.Unmarshal(raw, &l); err != nil {
			if err := fn(Doc{ID: src, Source: src, Err: reject("not a JSON object {\"id\",\"text\",\"metadata\"}: %v", err)}); err != nil {
				return err
			}
			continue
		}
		var err error
		switch {
		case l.ID == nil || *l.ID == "":
			err = reject("missing \"id\"")
		case l.Text == nil:
			err = reject("missing \"text\"")
		case len(l.Metadata) > 0 && l.Metadata[0] != '{' && string(l.Metadata) != "null":
			err = reject("\"metadata\" must be an object")
		}
		if err != nil {
			if err := fn(Doc{ID: src, Source: src, Err: err}); err != nil {
				return err
			}
			continue
		}
		meta := l.Metadata
		if string(meta) == "null" {
			meta = nil
		}
		// JSON strings are UTF-8 already (invalid bytes became U+FFFD).
		if err := fn(r.doc(*l.ID, src, []byte(*l.Text), meta)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		src := fmt.Sprintf("%s:%d", source, line+1)
		return fn(Doc{ID: src, Source: src, Err: reject("cannot read: %v", err)})
	}
	return nil
}

// doc checks a document's bytes: not empty, UTF-8 (or transcoded).
func (r *Reader) doc(id, source string, b []byte, meta json.RawMessage) Doc {
	d := Doc{ID: id, Source: source, Metadata: meta}
	switch {
	case len(bytes.TrimSpace(b)) == 0:
		d.Err = reject("empty document")
	case !utf8.Valid(b):
		if !r.Transcode {
			d.Err = reject("not UTF-8 (first bad byte at offset %d); re-encode it or pass --transcode to read it as Windows-1252", firstInvalid(b))
			break
		}
		t, err := charmap.Windows1252.NewDecoder().Bytes(b)
		if err != nil {
			d.Err = reject("transcode from Windows-1252: %v", err)
			break
		}
		d.Text = string(t)
	default:
		d.Text = string(b)
	}
	return d
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
