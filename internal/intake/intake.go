// Package intake is the one document reader of the extractq commands:
// `extractq extract` and `submit` read files, folders, JSONL and stdin
// through it, so both accept and reject the same inputs with the same
// reasons.
//
// A file's (or stdin's) bytes become a document through package document:
// its format is recognised by content (Reader.Format overrides), and a PDF,
// an e-mail or an office file arrives as text with its pages, metadata and
// attachments kept (Doc.Document). Plain text, and bytes no registered
// format claims, keep the text rules: a document must not be empty, must be
// UTF-8 (or, with Transcode, Windows-1252, which it is converted from), must
// not be binary (a NUL byte) and must not exceed MaxDocument bytes.
//
// A JSONL line is {"id": "…" or a number, "text": "…", "metadata": {…}},
// its text taken as it is; without an id the line's place (path:LINE) is
// its id, as a file's path is its id. A bad document is handed on with its
// reason (Doc.Err) and the rest is still read; a path named on the command
// line that does not exist stops everything before any document is read.
package intake

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/eval"
)

// DefaultMaxDocument is the largest document accepted by default (64 MiB,
// the fleet's limit too).
const DefaultMaxDocument = 64 << 20

// Doc is one input document, or the reason it was rejected.
type Doc struct {
	ID     string
	Source string // path, path:LINE, path#ATTACHMENT, "stdin" or "stdin:LINE"
	// Text is the document's text (Document.Text): what a model reads.
	Text string
	// Metadata is a JSON object, or nil: a JSONL line's own, or for a
	// document read by a format reader (PDF, e-mail, …) what it says about
	// itself (DocumentMetadata).
	Metadata json.RawMessage
	// Document is what the reader made of the input: pages, metadata,
	// attachments, the reader's name and version. Plain text and JSONL lines
	// are a document of format "text" without pages. Nil when Err is set.
	Document *document.Document
	// Original holds the input's bytes when they are not the text itself (a
	// PDF, an e-mail), so that the fleet can keep them by hash and re-read
	// them after a reader upgrade; nil for text and attachments.
	Original []byte
	// WithPassword says reading the document needed Reader.Password
	// (document.Document.Locked: it, or a part inlined into it, opened
	// only with it): jobs carry no password, so a worker may not read
	// Original again, and the fleet keeps the pictures of its pages with
	// its job instead. A document that opened without it is not marked:
	// a worker reads it again as any other.
	WithPassword bool
	// Err, when set, rejects the document; Text is then empty. It matches
	// ErrBadInput, and the document package's error (document.ErrEncrypted,
	// …) when a reader refused it.
	Err error
}

// Errors a caller branches on.
var (
	// ErrBadInput is matched by the reasons documents are rejected.
	ErrBadInput = errors.New("bad input")
	// ErrUsage is matched by errors about the arguments themselves (a path
	// that does not exist, a bad --glob): nothing was read.
	ErrUsage = errors.New("bad input arguments")
	// ErrCutShort is matched by the last document of a JSON Lines file or
	// stream that could not be read to its end (a dropped connection, a
	// damaged or over-inflating compressed stream): the lines after it are
	// missing.
	ErrCutShort = errors.New("cannot read the rest of the file")
	// ErrNoDocuments: the paths hold no document at all (empty folders, a
	// --glob that matches nothing, empty stdin).
	ErrNoDocuments = errors.New("no documents")
)

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
	// StdinText reads stdin as one document even when its first line
	// looks like JSONL.
	StdinText bool
	// MaxDocument is the largest document in bytes (0: DefaultMaxDocument).
	MaxDocument int64
	// Stdin is what "-" reads.
	Stdin io.Reader

	// Format reads every file as this registered format instead of
	// recognising it by content ("pdf", "eml", …; see document.FormatNames).
	Format string
	// Password opens encrypted documents.
	Password string
	// Attachments says what becomes of a document's attachments (an
	// e-mail's files): the default AttachSeparate makes each its own
	// document.
	Attachments Attachments
	// OCR reads pages without a text layer (scans, images). Without it such
	// pages are kept as images when Native is set, and otherwise the
	// document is rejected naming both remedies.
	OCR document.OCR
	// Native says the model reads images, so pages without a text layer
	// may go to it as pictures.
	Native bool
	// NoNativePDF says the input is native and the model reads no PDFs: a
	// PDF is rejected naming the remedies (--input text, a model that
	// reads PDFs) rather than queued for a call that must fail.
	NoNativePDF bool
	// NativeInput says the input is native: a PDF goes whole to the model
	// (when it reads PDFs), so one that opens only with Password is
	// rejected naming the remedies (--input auto, decrypt it): no model
	// opens an encrypted PDF.
	NativeInput bool
	// WholePDF says a PDF may go whole to the model (it reads PDFs and the
	// input is not text): then pages the reader cannot read (a JPEG 2000 scan,
	// text as outlines) are the model's to read; without it such a PDF is
	// rejected naming the pages and the remedies.
	WholePDF bool
}

func (r *Reader) max() int64 {
	if r.MaxDocument > 0 {
		return r.MaxDocument
	}
	return DefaultMaxDocument
}

// Check validates the arguments without reading any document: every path
// must exist (or be "-") and the glob must be well-formed. Read calls it
// first; callers may call it earlier to fail before connecting anywhere.
func (r *Reader) Check(paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("%w: no input: give files, folders, JSONL files, or - for stdin", ErrUsage)
	}
	if r.Glob != "" {
		if _, err := filepath.Match(r.Glob, ""); err != nil {
			return fmt.Errorf("%w: --glob %q: %v", ErrUsage, r.Glob, err)
		}
	}
	stdin := 0
	for _, p := range paths {
		if p == "-" {
			if stdin++; stdin > 1 {
				return fmt.Errorf("%w: - (stdin) given twice", ErrUsage)
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%w: input %s: %v", ErrUsage, p, unwrapPath(err))
		}
	}
	return nil
}

// Read calls fn for every document under paths, in order: files, folders
// (recursively, in lexical order, hidden files and folders and label
// files NAME.expected.json skipped), JSONL
// files (*.jsonl, *.ndjson: one document per line) and "-" for stdin (JSONL
// when its first line is a {"text": …} object, else one document). It
// stops at the first error fn returns, and when ctx ends (returning its
// cause). It returns ErrNoDocuments when the paths hold none.
func (r *Reader) Read(ctx context.Context, paths []string, fn func(Doc) error) error {
	if err := r.Check(paths); err != nil {
		return err
	}
	n := 0
	emit := func(d Doc) error {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		n++
		return fn(d)
	}
	for _, p := range paths {
		if err := r.readPath(ctx, p, emit); err != nil {
			return err
		}
	}
	if n == 0 {
		return fmt.Errorf("%w in %s: the folders are empty, --glob matched nothing, or stdin was empty", ErrNoDocuments, strings.Join(paths, ", "))
	}
	return nil
}

func (r *Reader) readPath(ctx context.Context, p string, fn func(Doc) error) error {
	if p == "-" {
		return r.readStdin(ctx, fn)
	}
	info, err := os.Stat(p)
	if err != nil {
		return fn(Doc{ID: p, Source: p, Err: reject("cannot read: %v", unwrapPath(err))})
	}
	if !info.IsDir() {
		return r.readFile(ctx, p, info, fn)
	}
	return filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fn(Doc{ID: filepath.ToSlash(path), Source: path, Err: reject("cannot read: %v", unwrapPath(err))})
		}
		if path != p && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || eval.IsLabelFile(d.Name()) {
			return nil // a label beside its document is not a document
		}
		if r.Glob != "" {
			if ok, _ := filepath.Match(r.Glob, d.Name()); !ok {
				return nil
			}
		}
		info, err := d.Info()
		if err != nil {
			return fn(Doc{ID: filepath.ToSlash(path), Source: path, Err: reject("cannot read: %v", unwrapPath(err))})
		}
		return r.readFile(ctx, path, info, fn)
	})
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// IsJSONL reports whether a file is read as JSON Lines (by its extension),
// compressed (.jsonl.gz, .ndjson.bz2) or not.
func IsJSONL(path string) bool {
	_, jsonl := jsonlCompression(path)
	return jsonl
}

// jsonlCompression says whether path names JSON Lines, and how they are
// compressed: "", "gzip" or "bzip2".
func jsonlCompression(path string) (compression string, jsonl bool) {
	name := strings.ToLower(filepath.Base(path))
	for _, c := range []struct{ ext, kind string }{{".gz", "gzip"}, {".bz2", "bzip2"}} {
		if n, ok := strings.CutSuffix(name, c.ext); ok {
			name, compression = n, c.kind
			break
		}
	}
	ext := filepath.Ext(name)
	return compression, ext == ".jsonl" || ext == ".ndjson"
}

// openJSONL opens a JSON Lines file, decompressing it as its name says.
// The lines are read as they come out: a large export is never held whole,
// and each line is bounded as in a plain file.
func openJSONL(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rd, err := decompressJSONL(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return readCloser{rd, f}, nil
}

// readCloser reads from a decompressor and closes the file under it.
type readCloser struct {
	io.Reader
	f *os.File
}

func (rc readCloser) Close() error { return rc.f.Close() }

// decompressJSONL returns the JSON Lines in rd, decompressed as name says
// (.gz, .bz2), or rd itself. A JSON Lines file is a stream whether it is
// local or fetched (its size unknown to document.NewInflateReader), so
// the same bytes meet the same bound either way: past
// document.DefaultLimits.MaxRatio times the compressed bytes read so far
// (and 1 MiB), the read fails with document.ErrBomb; a damaged stream is
// document.ErrCorrupt.
func decompressJSONL(rd io.Reader, name string) (io.Reader, error) {
	compression, _ := jsonlCompression(name)
	if compression == "" {
		return rd, nil
	}
	return document.NewInflateReader(rd, compression, -1, document.Limits{})
}

// ReadJSONL reads the JSON Lines in rd (an object fetched from a bucket or
// a URL, as it arrives) exactly as a local file named name is read:
// decompressed as the name says (.jsonl.gz, .ndjson.bz2; a stream that
// inflates past document.DefaultLimits.MaxRatio is refused with
// document.ErrBomb), one document per non-blank line, each line bounded
// by MaxDocument and never the stream as a whole; a line without an id
// gets source:LINE. A line that cannot be read is a document with its
// reason (Doc.Err), and so is a stream that breaks part way (after the
// documents before it). It returns fn's error, or ctx's cause.
func (r *Reader) ReadJSONL(ctx context.Context, rd io.Reader, name, source string, fn func(Doc) error) error {
	zr, err := decompressJSONL(rd, name)
	if err != nil {
		return fn(Doc{ID: source, Source: source, Err: fmt.Errorf("%w: cannot read: %w", ErrBadInput, err)})
	}
	err = r.readJSONL(bufio.NewReaderSize(zr, 64<<10), source, func(d Doc) error {
		if err := context.Cause(ctx); err != nil {
			return err
		}
		return fn(d)
	})
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return err
}

func (r *Reader) readFile(ctx context.Context, path string, info fs.FileInfo, fn func(Doc) error) error {
	id := filepath.ToSlash(path)
	if IsJSONL(path) {
		f, err := openJSONL(path)
		if err != nil {
			return fn(Doc{ID: id, Source: path, Err: fmt.Errorf("%w: cannot read: %w", ErrBadInput, unwrapPath(err))})
		}
		defer f.Close()
		return r.readJSONL(bufio.NewReaderSize(f, 64<<10), path, fn)
	}
	if info.Size() > r.max() {
		// Do not read a file only to reject it.
		return fn(Doc{ID: id, Source: path, Err: r.tooLarge(info.Size())})
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fn(Doc{ID: id, Source: path, Err: reject("cannot read: %v", unwrapPath(err))})
	}
	return r.read(ctx, id, path, b, fn)
}

func (r *Reader) tooLarge(n int64) error {
	return reject("document too large: %d bytes, the limit is %d (raise --max-document, or split the document)", n, r.max())
}

// readStdin reads JSONL when the first non-blank line is a {"text": …}
// object (unless StdinText), else all of stdin as one document.
func (r *Reader) readStdin(ctx context.Context, fn func(Doc) error) error {
	in := r.Stdin
	if in == nil {
		in = strings.NewReader("")
	}
	var rest io.Reader = in
	if !r.StdinText {
		// Read up to the end of the first non-blank line to decide; what
		// was read is put back in front of the rest.
		br := bufio.NewReaderSize(in, 64<<10)
		var head []byte
		for {
			line, tooLong, err := readLine(br, 2*r.max()+64<<10)
			if tooLong {
				return fn(Doc{ID: "stdin", Source: "stdin", Err: reject("document too large: more than %d bytes (raise --max-document, or split the document)", r.max())})
			}
			if err == nil {
				line = append(line, '\n')
			}
			head = append(head, line...)
			if err != nil && err != io.EOF {
				return fn(Doc{ID: "stdin", Source: "stdin", Err: reject("cannot read stdin: %v", err)})
			}
			if len(bytes.TrimSpace(line)) > 0 {
				if looksLikeRecord(line) {
					return r.readJSONL(bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), br), 64<<10), "stdin", fn)
				}
				break
			}
			if err == io.EOF {
				break
			}
		}
		rest = io.MultiReader(bytes.NewReader(head), br)
	}
	b, err := io.ReadAll(io.LimitReader(rest, r.max()+int64(len(bom))+1))
	if err != nil {
		return fn(Doc{ID: "stdin", Source: "stdin", Err: reject("cannot read stdin: %v", err)})
	}
	if len(b) == 0 {
		return nil // nothing at all: ErrNoDocuments, not an empty document
	}
	if int64(len(bytes.TrimPrefix(b, bom))) > r.max() {
		return fn(Doc{ID: "stdin", Source: "stdin", Err: reject("document too large: more than %d bytes (raise --max-document, or split the document)", r.max())})
	}
	return r.read(ctx, "stdin", "stdin", b, fn)
}

// looksLikeRecord reports whether line is a JSON object with a "text"
// member: what makes stdin JSONL rather than one document.
func looksLikeRecord(line []byte) bool {
	line = bytes.TrimSpace(bytes.TrimPrefix(line, bom))
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	_, ok := m["text"]
	return ok
}

var bom = []byte("\xef\xbb\xbf")

// readJSONL emits one document per non-blank line. A line longer than the
// largest document could be is rejected and skipped without being held in
// memory whole.
func (r *Reader) readJSONL(br *bufio.Reader, source string, fn func(Doc) error) error {
	// JSON escaping can make a line longer than the text it carries; allow
	// for it, and reject the text itself by MaxDocument after decoding.
	limit := 2*r.max() + 64<<10
	for n := 1; ; n++ {
		line, tooLong, err := readLine(br, limit)
		if n == 1 {
			// Before the blank-line check: a first line of a BOM alone is blank.
			line = bytes.TrimPrefix(line, bom)
		}
		src := fmt.Sprintf("%s:%d", source, n)
		if tooLong {
			if ferr := fn(Doc{ID: src, Source: src, Err: reject("line longer than %d bytes: its document is above --max-document (%d bytes)", limit, r.max())}); ferr != nil {
				return ferr
			}
		} else if len(bytes.TrimSpace(line)) > 0 && (err == nil || err == io.EOF) {
			// (A line cut short by a read error is not a record: the error
			// below names it.)
			if ferr := fn(r.record(line, src)); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fn(Doc{ID: src, Source: src, Err: fmt.Errorf("%w: %w: %w", ErrBadInput, ErrCutShort, err)})
		}
	}
}

// readLine reads one line (without its newline). A line above limit is
// consumed and reported as too long instead of returned.
func readLine(br *bufio.Reader, limit int64) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if int64(len(buf)+len(chunk)) > limit {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil {
			buf = bytes.TrimSuffix(buf, []byte("\n"))
		}
		return buf, tooLong, err
	}
}

// record decodes one JSONL line into a document. Its errors name the line
// and the field, never a Go type.
func (r *Reader) record(line []byte, src string) Doc {
	bad := func(format string, a ...any) Doc { return Doc{ID: src, Source: src, Err: reject(format, a...)} }
	if !utf8.Valid(line) {
		if !r.Transcode {
			return bad("not UTF-8 (first bad byte at offset %d of the line); re-encode the file, or pass --transcode to read it as Windows-1252", firstInvalid(line))
		}
		t, err := charmap.Windows1252.NewDecoder().Bytes(line)
		if err != nil {
			return bad("transcode from Windows-1252: %v", err)
		}
		line = t
	}
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] != '{' {
		if json.Valid(trimmed) {
			return bad(`not a JSON object: want {"id": …, "text": "…", "metadata": {…}} on each line, got %s`, kindOf(trimmed))
		}
		return bad(`not JSON: want {"id": …, "text": "…", "metadata": {…}} on each line`)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return bad(`not valid JSON (%s): want {"id": …, "text": "…", "metadata": {…}} on each line`, syntaxReason(err))
	}
	id := src
	if raw, ok := m["id"]; ok && string(raw) != "null" {
		switch {
		case len(raw) > 0 && raw[0] == '"':
			var s string
			_ = json.Unmarshal(raw, &s) // valid: the object decoded
			if strings.TrimSpace(s) == "" {
				return bad(`"id" is empty: give each line a unique id, or leave "id" out to use the line's place`)
			}
			id = s
		case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
			id = string(raw)
		default:
			return bad(`"id" must be a string or a number, got %s`, kindOf(raw))
		}
	}
	raw, ok := m["text"]
	if !ok || string(raw) == "null" {
		return bad(`missing "text": each line needs {"text": "the document"}`)
	}
	if raw[0] != '"' {
		return bad(`"text" must be a string, got %s`, kindOf(raw))
	}
	var text string
	_ = json.Unmarshal(raw, &text)
	var meta json.RawMessage
	if raw, ok := m["metadata"]; ok && string(raw) != "null" {
		if raw[0] != '{' {
			return bad(`"metadata" must be an object, got %s`, kindOf(raw))
		}
		meta = raw
	}
	if int64(len(text)) > r.max() {
		return Doc{ID: id, Source: src, Err: r.tooLarge(int64(len(text)))}
	}
	// The line is UTF-8 already (or transcoded): check the rest.
	d := r.doc(id, src, []byte(text), meta)
	return d
}

// kindOf names a JSON value's kind for an error message.
func kindOf(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// syntaxReason says what is wrong with malformed JSON without Go's type
// names.
func syntaxReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends too early"
	}
	return "malformed"
}

// doc checks a document's bytes as plain text: not too large, not binary,
// not empty, UTF-8 (or transcoded). A leading byte-order mark is dropped.
func (r *Reader) doc(id, source string, b []byte, meta json.RawMessage) Doc {
	d := Doc{ID: id, Source: source, Metadata: meta}

	b = bytes.TrimPrefix(b, bom)
	switch {
	case int64(len(b)) > r.max():
		d.Err = r.tooLarge(int64(len(b)))
	case len(bytes.TrimSpace(b)) == 0:
		d.Err = reject("empty document")
	case document.Unread(b) != "":
		d.Err = fmt.Errorf("%w: %s: %w", ErrBadInput, document.Unread(b), document.ErrUnsupported)
	case bytes.IndexByte(b, 0) >= 0:
		d.Err = fmt.Errorf("%w: binary data (a NUL byte at offset %d) in no format extractq reads (%s): name its format with --format, convert it to one of them, or convert UTF-16 text without a byte-order mark to UTF-8 (iconv -f UTF-16 -t UTF-8): %w", ErrBadInput, bytes.IndexByte(b, 0), knownFormats(), document.ErrUnknownFormat)
	case !utf8.Valid(b):
		if !r.Transcode {
			d.Err = reject("not UTF-8 (first bad byte at offset %d); re-encode it, or pass --transcode to read it as Windows-1252", firstInvalid(b))
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
	if d.Err == nil {
		d.Document = textDocument(d.Text)
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
