package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const smallSchema = `{"type":"object","required":["total"],"properties":{"total":{"type":"number"}}}`

func TestLoadFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"a.txt":               "total 5",
		"a.expected.json":     `{"total": 5}`,
		"sub/b.txt":           "total 6",
		"sub/b.expected.json": `{"total": 6}`,
		"c.txt":               "no label here",
		"d.expected.json":     `{"total": 1}`,
	})
	set, err := Load(dir, mustSchema(t, smallSchema), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Labels) != 2 || set.Labels[0].Text != "total 5" || !strings.HasSuffix(set.Labels[1].ID, "sub/b.txt") {
		t.Errorf("labels: %+v", set.Labels)
	}
	if len(set.Unlabelled) != 1 || !strings.HasSuffix(set.Unlabelled[0], "c.txt") {
		t.Errorf("unlabelled: %v", set.Unlabelled)
	}
	if len(set.Orphans) != 1 || !strings.HasSuffix(set.Orphans[0], "d.expected.json") {
		t.Errorf("orphans: %v", set.Orphans)
	}
}

func TestLoadProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		files map[string]string
		path  string
		want  []string
	}{
		{"label does not validate", map[string]string{"a.txt": "x", "a.expected.json": `{"total": "five"}`}, ".",
			[]string{"a.expected.json", "at /total", "number"}},
		{"label is not JSON", map[string]string{"a.txt": "x", "a.expected.json": `{total: 5}`}, ".",
			[]string{"a.expected.json: not valid JSON"}},
		{"two labels for one id", map[string]string{"l.jsonl": `{"id":"x","text":"t","expected":{"total":1}}` + "\n" + `{"id":"x","text":"u","expected":{"total":2}}`}, "l.jsonl",
			[]string{"l.jsonl:2", `"x" is labelled twice`, "l.jsonl:1"}},
		{"both text and path", map[string]string{"l.jsonl": `{"id":"x","text":"t","path":"a.txt","expected":{"total":1}}`}, "l.jsonl",
			[]string{`gives both "text" and "path"`}},
		{"every problem at once", map[string]string{"l.jsonl": `{"id":"x","text":"t","expected":{"total":"no"}}` + "\n" + `not json`}, "l.jsonl",
			[]string{"l.jsonl:1", "l.jsonl:2", "2 problem(s)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			write(t, dir, c.files)
			_, err := Load(filepath.Join(dir, c.path), mustSchema(t, smallSchema), LoadOptions{})
			if !errors.Is(err, ErrLabels) {
				t.Fatalf("err = %v, want ErrLabels", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestLoadJSONLPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"docs/a.txt": "total 5",
		"l.jsonl": `{"id":"a","path":"docs/a.txt","expected":{"total":5}}` + "\n\n" +
			`{"id":7,"text":"total 7","expected":{"total":7}}` + "\n" +
			`{"id":"gone","path":"docs/missing.txt","expected":{"total":1}}` + "\n",
	})
	set, err := Load(filepath.Join(dir, "l.jsonl"), mustSchema(t, smallSchema), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Labels) != 2 || set.Labels[0].Text != "total 5" || set.Labels[1].ID != "7" {
		t.Errorf("labels: %+v", set.Labels)
	}
	if len(set.Orphans) != 1 || !strings.Contains(set.Orphans[0], "missing.txt") {
		t.Errorf("orphans: %v", set.Orphans)
	}
}
