package intake_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/internal/intake"
)

// line is what a test compares of one document.
type line struct{ id, source, text, meta, reason string }

func lineOf(d intake.Doc) line {
	l := line{id: d.ID, source: d.Source, text: d.Text, meta: string(d.Metadata)}
	if d.Err != nil {
		l.reason = d.Err.Error()
	}
	return l
}

// TestReadJSONLAsALocalFile reads the same JSON Lines from a local file
// and from a stream (an object in a bucket): every line gives the same
// document, its id and source under the stream's name where the file's
// path stood, and the same reasons for the bad ones.
func TestReadJSONLAsALocalFile(t *testing.T) {
	t.Parallel()
	content := strings.Join([]string{
		`{"id":"j1","text":"first","metadata":{"k":1}}`,
		`not json`,
		`{"text":"no id"}`,
		``,
		`{"id":7,"text":"numeric id"}`,
		`{"id":"big","text":"` + strings.Repeat("x", 101) + `"}`,
		`{"id":"latin","text":"caf` + "\xe9" + `"}`,
		`{"id":"j9","text":"last, no newline"}`,
	}, "\n")
	for _, name := range []string{"dump.jsonl", "dump.ndjson.gz"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			body := []byte(content)
			if strings.HasSuffix(name, ".gz") {
				body = gzipOf(t, content)
			}
			dir := t.TempDir()
			write(t, dir, name, body)
			path := filepath.Join(dir, name)
			r := intake.Reader{MaxDocument: 100}
			var local, remote []line
			if err := r.Read(t.Context(), []string{path}, func(d intake.Doc) error {
				l := lineOf(d)
				l.id = strings.ReplaceAll(l.id, path, "SRC")
				l.source = strings.ReplaceAll(l.source, path, "SRC")
				local = append(local, l)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			uri := "s3://bucket/exports/" + name
			if err := r.ReadJSONL(t.Context(), bytes.NewReader(body), name, uri, func(d intake.Doc) error {
				l := lineOf(d)
				l.id = strings.ReplaceAll(l.id, uri, "SRC")
				l.source = strings.ReplaceAll(l.source, uri, "SRC")
				remote = append(remote, l)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(remote) != 7 || remote[2].id != "SRC:3" || remote[2].text != "no id" || remote[0].meta != `{"k":1}` {
				t.Errorf("stream read as %+v; want 7 documents, line 3's id SRC:3", remote)
			}
			if len(local) != len(remote) {
				t.Fatalf("local file: %d documents, stream: %d", len(local), len(remote))
			}
			for i := range local {
				if local[i] != remote[i] {
					t.Errorf("document %d: local %+v, stream %+v", i, local[i], remote[i])
				}
			}
		})
	}
}

// brokenReader gives its bytes, then fails as a dropped connection does.
type brokenReader struct{ r io.Reader }

func (b brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset by peer")
	}
	return n, err
}

// TestReadJSONLCutShort: a compressed file that inflates past
// document.DefaultLimits.MaxRatio (a bomb), one whose gzip is damaged
// part way (document.ErrCorrupt, as a damaged compressed document is),
// local or streamed, and a stream that breaks part way end with a document
// saying so (ErrCutShort), after the lines before it.
func TestReadJSONLCutShort(t *testing.T) {
	t.Parallel()
	// A valid record, then 8 MiB of blanks on one line: about 8 KiB of gzip.
	bomb := gzipOf(t, `{"id":"first","text":"before the bomb"}`+"\n"+strings.Repeat(" ", 8<<20))
	// A valid record, then a long one the gzip stream breaks off inside.
	whole := gzipOf(t, `{"id":"first","text":"before the damage"}`+"\n"+`{"id":"long","text":"`+noiseText(64<<10)+`"}`+"\n")
	damaged := whole[:len(whole)/2]
	dir := t.TempDir()
	write(t, dir, "bomb.jsonl.gz", bomb)
	write(t, dir, "damaged.jsonl.gz", damaged)
	tests := []struct {
		name string
		read func(r *intake.Reader, fn func(intake.Doc) error) error
		is   error
		says string
	}{
		{"local bomb", func(r *intake.Reader, fn func(intake.Doc) error) error {
			return r.Read(t.Context(), []string{filepath.Join(dir, "bomb.jsonl.gz")}, fn)
		}, document.ErrBomb, "inflates to more than 200 times"},
		{"streamed bomb", func(r *intake.Reader, fn func(intake.Doc) error) error {
			return r.ReadJSONL(t.Context(), bytes.NewReader(bomb), "bomb.jsonl.gz", "s3://b/bomb.jsonl.gz", fn)
		}, document.ErrBomb, "inflates to more than 200 times"},
		{"local file damaged", func(r *intake.Reader, fn func(intake.Doc) error) error {
			return r.Read(t.Context(), []string{filepath.Join(dir, "damaged.jsonl.gz")}, fn)
		}, document.ErrCorrupt, "the gzip stream is damaged: unexpected EOF"},
		{"stream damaged", func(r *intake.Reader, fn func(intake.Doc) error) error {
			return r.ReadJSONL(t.Context(), bytes.NewReader(damaged), "damaged.jsonl.gz", "s3://b/damaged.jsonl.gz", fn)
		}, document.ErrCorrupt, "the gzip stream is damaged: unexpected EOF"},
		{"stream broken part way", func(r *intake.Reader, fn func(intake.Doc) error) error {
			in := strings.NewReader(`{"id":"first","text":"before the break"}` + "\n" + `{"id":"second","te`)
			return r.ReadJSONL(t.Context(), brokenReader{in}, "x.jsonl", "https://host/x.jsonl", fn)
		}, intake.ErrCutShort, "connection reset by peer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []intake.Doc
			if err := tc.read(&intake.Reader{}, func(d intake.Doc) error {
				got = append(got, d)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || got[0].Err != nil || got[0].ID != "first" {
				t.Fatalf("got %+v; want the first line, then the reason the rest is missing", got)
			}
			if err := got[1].Err; !errors.Is(err, tc.is) || !errors.Is(err, intake.ErrCutShort) || !errors.Is(err, intake.ErrBadInput) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("last document: %v; want it to match %v and ErrCutShort, saying %q", err, tc.is, tc.says)
			}
		})
	}
}

// noiseText is n letters that compress poorly, so that a gzip stream of
// them is long enough to cut in the middle.
func noiseText(n int) string {
	b := make([]byte, n)
	x := uint32(1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

// FuzzReadJSONL reads arbitrary bytes as a streamed JSON Lines object,
// plain and as a gzip stream: it must not panic, every document is either
// text within the limit or a reason, and every line's source names the
// object.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte(`{"id":"a","text":"x","metadata":{}}`+"\n"+`{"text":"y"}`), false)
	f.Add([]byte("not json\n\n{\"id\":[1],\"text\":\"z\"}"), false)
	f.Add([]byte("\xef\xbb\xbf{\"text\":\"bom\"}\r\n{\"id\":\"\",\"text\":1}"), false)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"id":"g","text":"gz"}` + "\n")) //nolint:errcheck // a bytes.Buffer
	zw.Close()                                        //nolint:errcheck // a bytes.Buffer
	f.Add(gz.Bytes(), true)
	f.Add(gz.Bytes()[:len(gz.Bytes())/2], true)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		name, uri := "o.jsonl", "s3://b/o.jsonl"
		if compressed {
			name, uri = "o.jsonl.gz", "s3://b/o.jsonl.gz"
		}
		r := intake.Reader{MaxDocument: 64}
		n := 0
		err := r.ReadJSONL(t.Context(), bytes.NewReader(data), name, uri, func(d intake.Doc) error {
			n++
			if !strings.HasPrefix(d.Source, uri) {
				t.Fatalf("source %q does not name the object", d.Source)
			}
			if d.ID == "" {
				t.Fatal("a document without an id")
			}
			if d.Err == nil && (strings.TrimSpace(d.Text) == "" || !utf8.ValidString(d.Text) || len(d.Text) > 64) {
				t.Fatalf("accepted %q", d.Text)
			}
			if d.Err != nil && !errors.Is(d.Err, intake.ErrBadInput) {
				t.Fatalf("a reason that is not bad input: %v", d.Err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !compressed && n > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d documents from %d lines", n, bytes.Count(data, []byte("\n"))+1)
		}
	})
}
