package intake_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/intake"
)

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

type want struct{ id, text, reason string }

func TestReader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a.txt", []byte("hello"))
	write(t, dir, "sub/b.txt", []byte("nested"))
	write(t, dir, "sub/notes.md", []byte("not matched by the glob"))
	write(t, dir, ".hidden/c.txt", []byte("never read"))
	write(t, dir, ".DS_Store.txt", []byte("never read"))
	write(t, dir, "empty.txt", []byte(" \n\t"))
	write(t, dir, "latin1.txt", []byte("caf\xe9"))
	write(t, dir, "binary.txt", []byte("PK\x03\x04\x00\x00zip"))
	write(t, dir, "utf16.txt", []byte("h\x00i\x00"))
	write(t, dir, "bom.txt", []byte("\xef\xbb\xbfwith a byte-order mark"))
	write(t, dir, "big.txt", []byte(strings.Repeat("x", 101)))
	write(t, dir, "docs.jsonl", []byte(`{"id":"j1","text":"first","metadata":{"k":1}}
not json
{"text":"no id"}
{"id":"j4"}
{"id":"j5","text":"five","metadata":[1]}

{"id":7,"text":"numeric id"}
["an","array"]
{"id":{"x":1},"text":"object id"}
{"id":"j10","text":12}
{"id":"j11","text":"caf`+"\xe9"+`"}
{"id":"j12","text":"`+strings.Repeat("y", 101)+`"}
{"id":"j13","text":"nul\u0000byte"}
{"id":"j14","text":"   "}
{"id":"j15","text":"last, no newline"}`))
	write(t, dir, "more.ndjson", []byte(`{"id":"n1","text":"ndjson too"}`+"\n"))

	tests := []struct {
		name   string
		r      intake.Reader
		paths  []string
		stdin  string
		expect map[string]want // by source, relative to dir
	}{
		{
			name: "folder with glob", r: intake.Reader{Glob: "*.txt", MaxDocument: 100}, paths: []string{dir},
			expect: map[string]want{
				"a.txt": {id: "a.txt", text: "hello"}, "sub/b.txt": {id: "sub/b.txt", text: "nested"},
				"empty.txt":  {reason: "empty document"},
				"latin1.txt": {reason: "not UTF-8 (first bad byte at offset 3); re-encode it, or pass --transcode"},
				"binary.txt": {reason: "read as zip: corrupt document"}, // a zip's magic, not text
				"utf16.txt":  {reason: "iconv -f UTF-16"},
				"bom.txt":    {id: "bom.txt", text: "with a byte-order mark"},
				"big.txt":    {reason: "document too large: 101 bytes, the limit is 100 (raise --max-document"},
			},
		},
		{
			name: "transcode", r: intake.Reader{Transcode: true}, paths: []string{filepath.Join(dir, "latin1.txt")},
			expect: map[string]want{"latin1.txt": {id: "latin1.txt", text: "café"}},
		},
		{
			name: "jsonl", r: intake.Reader{MaxDocument: 100}, paths: []string{filepath.Join(dir, "docs.jsonl"), filepath.Join(dir, "more.ndjson")},
			expect: map[string]want{
				"docs.jsonl:1":  {id: "j1", text: "first"},
				"docs.jsonl:2":  {reason: "not JSON: want {\"id\""},
				"docs.jsonl:3":  {id: "docs.jsonl:3", text: "no id"},
				"docs.jsonl:4":  {reason: `missing "text"`},
				"docs.jsonl:5":  {reason: `"metadata" must be an object, got an array`},
				"docs.jsonl:7":  {id: "7", text: "numeric id"},
				"docs.jsonl:8":  {reason: "not a JSON object: want {\"id\": …, \"text\": \"…\", \"metadata\": {…}} on each line, got an array"},
				"docs.jsonl:9":  {reason: `"id" must be a string or a number, got an object`},
				"docs.jsonl:10": {reason: `"text" must be a string, got a number`},
				"docs.jsonl:11": {reason: "not UTF-8 (first bad byte at offset"},
				"docs.jsonl:12": {reason: "document too large: 101 bytes"},
				"docs.jsonl:13": {reason: "binary data"},
				"docs.jsonl:14": {reason: "empty document"},
				"docs.jsonl:15": {id: "j15", text: "last, no newline"},
				"more.ndjson:1": {id: "n1", text: "ndjson too"},
			},
		},
		{
			name: "jsonl transcoded", r: intake.Reader{Transcode: true}, paths: []string{filepath.Join(dir, "docs.jsonl")},
			expect: nil, // checked below: line 11 is read
		},
		{
			name: "stdin jsonl", paths: []string{"-"}, stdin: "\n" + `{"id":"s1","text":"from stdin"}` + "\n" + `{"text":"no id"}`,
			expect: map[string]want{"stdin:2": {id: "s1", text: "from stdin"}, "stdin:3": {id: "stdin:3", text: "no id"}},
		},
		{
			name: "stdin plain text is one document", paths: []string{"-"}, stdin: "Invoice 42\nACME Ltd\n",
			expect: map[string]want{"stdin": {id: "stdin", text: "Invoice 42\nACME Ltd\n"}},
		},
		{
			name: "stdin JSON that is not a record is text", paths: []string{"-"}, stdin: `{"invoice": 42}` + "\nmore",
			expect: map[string]want{"stdin": {id: "stdin", text: `{"invoice": 42}` + "\nmore"}},
		},
		{
			name: "stdin forced text", r: intake.Reader{StdinText: true}, paths: []string{"-"}, stdin: `{"id":"s1","text":"looks like JSONL"}`,
			expect: map[string]want{"stdin": {id: "stdin", text: `{"id":"s1","text":"looks like JSONL"}`}},
		},
		{
			name: "stdin too large", r: intake.Reader{MaxDocument: 10}, paths: []string{"-"}, stdin: strings.Repeat("z", 11),
			expect: map[string]want{"stdin": {reason: "document too large: more than 10 bytes"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.r.Stdin = strings.NewReader(tc.stdin)
			got := map[string]intake.Doc{}
			var order []string
			if err := tc.r.Read(t.Context(), tc.paths, func(d intake.Doc) error {
				src := strings.TrimPrefix(filepath.ToSlash(d.Source), filepath.ToSlash(dir)+"/")
				got[src] = d
				order = append(order, src)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if tc.expect == nil {
				if d := got["docs.jsonl:11"]; d.Err != nil || d.Text != "café" {
					t.Errorf("transcoded line: %q %v, want café", d.Text, d.Err)
				}
				return
			}
			if !sort.StringsAreSorted(order) && tc.name == "folder with glob" {
				t.Errorf("folder read out of lexical order: %v", order)
			}
			if len(got) != len(tc.expect) {
				t.Fatalf("documents from %v, want %d", order, len(tc.expect))
			}
			for src, w := range tc.expect {
				d, ok := got[src]
				switch {
				case !ok:
					t.Errorf("%s: not read (got %v)", src, order)
				case w.reason != "":
					if d.Err == nil || !strings.Contains(d.Err.Error(), w.reason) || !errors.Is(d.Err, intake.ErrBadInput) {
						t.Errorf("%s: err = %v, want %q", src, d.Err, w.reason)
					}
					if d.Err != nil && strings.Contains(d.Err.Error(), "Go value") {
						t.Errorf("%s: error names a Go type: %v", src, d.Err)
					}
				default:
					id := strings.TrimPrefix(d.ID, filepath.ToSlash(dir)+"/")
					if d.Err != nil || d.Text != w.text || id != w.id {
						t.Errorf("%s: id %q text %q err %v, want id %q text %q", src, id, d.Text, d.Err, w.id, w.text)
					}
				}
			}
		})
	}
}

func TestReaderArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a.txt", []byte("hello"))
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		r     intake.Reader
		paths []string
		want  error
		msg   string
	}{
		{name: "missing path stops before reading", paths: []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "nope.txt")}, want: intake.ErrUsage, msg: "nope.txt: no such file or directory"},
		{name: "no paths", want: intake.ErrUsage, msg: "give files"},
		{name: "bad glob", r: intake.Reader{Glob: "["}, paths: []string{dir}, want: intake.ErrUsage, msg: "--glob"},
		{name: "stdin twice", paths: []string{"-", "-"}, want: intake.ErrUsage, msg: "twice"},
		{name: "empty folder", paths: []string{filepath.Join(dir, "empty")}, want: intake.ErrNoDocuments},
		{name: "glob matching nothing", r: intake.Reader{Glob: "*.pdf"}, paths: []string{dir}, want: intake.ErrNoDocuments},
		{name: "empty stdin", paths: []string{"-"}, want: intake.ErrNoDocuments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.r.Stdin = strings.NewReader("")
			n := 0
			err := tc.r.Read(t.Context(), tc.paths, func(intake.Doc) error { n++; return nil })
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Read = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if errors.Is(tc.want, intake.ErrUsage) && n > 0 {
				t.Errorf("%d documents read before the usage error, want none", n)
			}
		})
	}
}

// TestReaderLongLine checks that a JSONL line far above the limit is
// rejected and skipped, and the lines after it are still read.
func TestReaderLongLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := `{"id":"huge","text":"` + strings.Repeat("w", 300<<10) + `"}`
	write(t, dir, "x.jsonl", []byte(`{"id":"a","text":"before"}`+"\n"+long+"\n"+`{"id":"b","text":"after"}`+"\n"))
	r := intake.Reader{MaxDocument: 1 << 10}
	var got []string
	if err := r.Read(t.Context(), []string{filepath.Join(dir, "x.jsonl")}, func(d intake.Doc) error {
		if d.Err != nil {
			got = append(got, "rejected: "+d.Err.Error())
		} else {
			got = append(got, d.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "a" || !strings.Contains(got[1], "above --max-document") || got[2] != "b" {
		t.Fatalf("got %q, want a, a rejection, b", got)
	}
}

func TestReaderStopsWithContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{"1.txt", "2.txt", "3.txt"} {
		write(t, dir, n, []byte("doc "+n))
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	stop := errors.New("interrupted")
	n := 0
	err := (&intake.Reader{}).Read(ctx, []string{dir}, func(intake.Doc) error {
		n++
		cancel(stop)
		return nil
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("Read after cancel = %v with %d documents, want the cause after 1", err, n)
	}
}
