package submit_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/jobs/submit"
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

func TestReader(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.txt", []byte("hello"))
	write(t, dir, "sub/b.txt", []byte("nested"))
	write(t, dir, "sub/notes.md", []byte("not matched by the glob"))
	write(t, dir, "empty.txt", []byte(" \n\t"))
	write(t, dir, "latin1.txt", []byte("caf\xe9"))
	write(t, dir, "docs.jsonl", []byte(`{"id":"j1","text":"first","metadata":{"k":1}}
not json
{"text":"no id"}
{"id":"j4"}
{"id":"j5","text":"five","metadata":[1]}

{"id":"j6","text":"six"}
`))
	type want struct{ text, reason string }
	tests := []struct {
		name   string
		r      submit.Reader
		paths  []string
		stdin  string
		expect map[string]want // by source
	}{
		{
			name: "folder with glob", r: submit.Reader{Glob: "*.txt"}, paths: []string{dir},
			expect: map[string]want{
				"a.txt": {text: "hello"}, "sub/b.txt": {text: "nested"},
				"empty.txt": {reason: "empty document"}, "latin1.txt": {reason: "not UTF-8 (first bad byte at offset 3)"},
			},
		},
		{
			name: "transcode", r: submit.Reader{Transcode: true}, paths: []string{filepath.Join(dir, "latin1.txt")},
			expect: map[string]want{"latin1.txt": {text: "café"}},
		},
		{
			name: "jsonl", paths: []string{filepath.Join(dir, "docs.jsonl")},
			expect: map[string]want{
				"docs.jsonl:1": {text: "first"}, "docs.jsonl:2": {reason: "not a JSON object"},
				"docs.jsonl:3": {reason: `missing "id"`}, "docs.jsonl:4": {reason: `missing "text"`},
				"docs.jsonl:5": {reason: `"metadata" must be an object`}, "docs.jsonl:7": {text: "six"},
			},
		},
		{
			name: "missing path", paths: []string{filepath.Join(dir, "nope.txt")},
			expect: map[string]want{"nope.txt": {reason: "cannot read: no such file or directory"}},
		},
		{
			name: "stdin jsonl", paths: []string{"-"}, stdin: `{"id":"s1","text":"from stdin"}`,
			expect: map[string]want{"stdin:1": {text: "from stdin"}},
		},
		{
			name: "stdin text", r: submit.Reader{StdinText: true}, paths: []string{"-"}, stdin: "one document",
			expect: map[string]want{"stdin": {text: "one document"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Stdin = strings.NewReader(tc.stdin)
			got := map[string]submit.Doc{}
			if err := tc.r.Read(tc.paths, func(d submit.Doc) error {
				got[strings.TrimPrefix(filepath.ToSlash(d.Source), filepath.ToSlash(dir)+"/")] = d
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if len(got) != len(tc.expect) {
				t.Fatalf("documents from %v, want %d", keys, len(tc.expect))
			}
			for src, w := range tc.expect {
				d, ok := got[src]
				switch {
				case !ok:
					t.Errorf("%s: not read (got %v)", src, keys)
				case w.reason != "" && (d.Err == nil || !strings.Contains(d.Err.Error(), w.reason)):
					t.Errorf("%s: err = %v, want %q", src, d.Err, w.reason)
				case w.reason == "" && (d.Err != nil || d.Text != w.text):
					t.Errorf("%s: text %q err %v, want %q", src, d.Text, d.Err, w.text)
				}
			}
		})
	}
}
