package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/cli"
)

// runRoot runs the extractq root command as main does and returns the exit
// code with what was written.
func runRoot(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetIn(strings.NewReader(stdin))
	code = cli.Run(root, args, &errb)
	return code, out.String(), errb.String()
}

func schemaTestDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"book.yaml":        "title: string -- the title\ntopics: [string, 1..5 unique]\nyear?: integer 1900..2100\nstatus: enum(open, closed)\n",
		"book.json":        `{"type":"object","properties":{"title":{"type":"string"},"price":{"$ref":"https://example.com/s/money.json"}},"required":["title"],"additionalProperties":false}`,
		"defs/money.json":  `{"type":"number","minimum":0}`,
		"bad.json":         `{"type":"object","properties":{"a":{"type":"strin"}}}`,
		"bad-compact.yaml": "title: string\nyear: integr\n",
		"contradict.json":  `{"type":"string","minLength":5,"maxLength":2}`,
		"list.json":        `{"type":"array","items":{"type":"string"}}`,
		"freeform.json":    `{"type":"object","properties":{"title":{"type":"string"},"meta":{"type":"object"}},"required":["title"]}`,
		"good.json":        `{"title":"Dune","topics":["sf"],"status":"open"}`,
		"invalid.json":     `{"title":5,"topics":[],"status":"Open"}`,
		"notjson.json":     `{"title":`,
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("output line %q is not JSON: %v", l, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestSchemaCheckCmd(t *testing.T) {
	dir := schemaTestDir(t)
	p := func(n string) string { return filepath.Join(dir, n) }
	refDir := "--ref-dir=https://example.com/s/=" + p("defs")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings
		stderr     []string
		noStdout   bool
		stdoutJSON bool
	}{
		{"compact YAML", []string{"schema", "check", p("book.yaml")}, 0, []string{`"additionalProperties": false`, `"required": [`}, []string{"book.yaml: ok (sha256:"}, false, true},
		{"with ref dir", []string{"schema", "check", refDir, p("book.json")}, 0, []string{`"$ref": "https://example.com/s/money.json"`}, []string{"ok"}, false, true},
		{"unresolvable ref", []string{"schema", "check", p("book.json")}, 2, nil, []string{"book.json: at /properties/price/$ref", "https://example.com/s/money.json", "--ref-dir"}, true, false},
		{"invalid among valid", []string{"schema", "check", p("book.yaml"), p("bad.json"), p("bad-compact.yaml")}, 2, []string{"# " + p("book.yaml")},
			[]string{"bad.json: at /properties/a/type", "bad-compact.yaml: at /year: compact notation: unknown type", "2 of 3 schemas are invalid"}, false, false},
		{"missing file", []string{"schema", "check", p("nope.json")}, 2, nil, []string{"nope.json: cannot read"}, true, false},
		{"bad draft", []string{"schema", "check", "--draft", "5", p("book.yaml")}, 2, nil, []string{"--draft", "7 or 2020-12"}, true, false},
		{"bad ref-dir", []string{"schema", "check", "--ref-dir", "nodir", p("book.yaml")}, 2, nil, []string{"PREFIX=DIR"}, true, false},
		{"no file", []string{"schema", "check"}, 2, nil, []string{"arg"}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runRoot(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			if tc.noStdout && out != "" {
				t.Errorf("unexpected stdout: %s", out)
			}
			if tc.stdoutJSON && !json.Valid([]byte(out)) {
				t.Errorf("stdout is not one JSON document:\n%s", out)
			}
		})
	}
}

func TestSchemaExampleCmd(t *testing.T) {
	dir := schemaTestDir(t)
	p := func(n string) string { return filepath.Join(dir, n) }
	code, out, errOut := runRoot(t, "", "schema", "example", p("book.yaml"), p("contradict.json"), p("bad.json"), p("list.json"))
	if code != 2 {
		t.Errorf("exit %d, want 2: bad.json is an invalid schema (%s)", code, errOut)
	}
	if code, _, errOut := runRoot(t, "", "schema", "example", p("book.yaml"), p("contradict.json")); code != 1 {
		t.Errorf("exit %d, want 1: a valid schema without an example is a failed input (%s)", code, errOut)
	}
	lines := jsonLines(t, out)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out)
	}
	for i, want := range []struct {
		file     string
		ok       bool
		contains string
	}{
		{"book.yaml", true, `"status":"open"`},
		{"contradict.json", false, "minLength 5 is greater than maxLength 2"},
		{"bad.json", false, "at /properties/a/type"},
		{"list.json", true, `["example"]`},
	} {
		l := lines[i]
		if l["file"] != p(want.file) {
			t.Errorf("line %d file = %v, want %s", i, l["file"], p(want.file))
		}
		_, hasEx := l["example"]
		if hasEx != want.ok {
			t.Errorf("line %d: example present = %v, want %v: %v", i, hasEx, want.ok, l)
		}
		text, _ := json.Marshal(l)
		if !strings.Contains(string(text), want.contains) {
			t.Errorf("line %d lacks %q: %s", i, want.contains, text)
		}
	}
	// --seed varies the instance, deterministically.
	_, a, _ := runRoot(t, "", "schema", "example", "--seed", "5", p("book.yaml"))
	_, b, _ := runRoot(t, "", "schema", "example", "--seed", "5", p("book.yaml"))
	_, c, _ := runRoot(t, "", "schema", "example", "--seed", "6", p("book.yaml"))
	if a != b || a == c {
		t.Errorf("seeded instances: same seed equal %v, other seed differs %v", a == b, a != c)
	}
}

func TestSchemaConvertCmd(t *testing.T) {
	dir := schemaTestDir(t)
	p := func(n string) string { return filepath.Join(dir, n) }
	refDir := "--ref-dir=https://example.com/s/=" + p("defs")
	tests := []struct {
		args     []string
		code     int
		contains []string
		absent   []string
	}{
		{[]string{"--to", "openai", p("book.yaml")}, 0, []string{`"year": {`, `"null"`, `"additionalProperties": false`}, []string{`"uniqueItems"`, "$schema"}},
		{[]string{"--to", "gemini", p("book.yaml")}, 0, []string{`"type": "OBJECT"`, `"propertyOrdering"`}, []string{`"additionalProperties"`}},
		{[]string{"--to", "anthropic", p("book.yaml")}, 0, []string{`"additionalProperties": false`, "at most 5 items"}, []string{`"maxItems"`}},
		{[]string{"--to", "ollama", refDir, p("book.json")}, 0, []string{`"minimum": 0`}, []string{`"$ref"`}},
		{[]string{"--to", "jsonschema", p("book.yaml")}, 0, []string{`"$schema"`}, nil},
		{[]string{"--to", "openai", p("list.json")}, 0, []string{`"items": {`, `"required": [`}, nil},
		{[]string{"--to", "openai", p("freeform.json")}, 1, []string{"would forbid values this schema allows", "- /properties/meta: a free-form object", "JSON mode"}, []string{`"type"`}},
		{[]string{"--to", "ollama", p("freeform.json")}, 0, []string{`"meta": {`}, nil},
		{[]string{"--to", "openai", p("bad.json")}, 2, []string{"bad.json: at /properties/a/type"}, nil},
		{[]string{"--to", "xml", p("book.yaml")}, 2, []string{"unknown form"}, nil},
		{[]string{"--to", "openai"}, 2, []string{"arg"}, nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runRoot(t, "", append([]string{"schema", "convert"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			all := out + errOut
			for _, s := range tc.contains {
				if !strings.Contains(all, s) {
					t.Errorf("output lacks %q:\n%s", s, all)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(out, s) {
					t.Errorf("output has %q:\n%s", s, out)
				}
			}
			if code == 0 && !json.Valid([]byte(out)) {
				t.Errorf("stdout is not JSON:\n%s", out)
			}
		})
	}
}

func TestValidateCmd(t *testing.T) {
	dir := schemaTestDir(t)
	p := func(n string) string { return filepath.Join(dir, n) }
	type line struct {
		key   string // "index" or "file"
		val   any
		valid bool
		has   string // substring of the line
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		code  int
		lines []line
		err   string
	}{
		{"all valid", "", []string{"--schema", p("book.yaml"), p("good.json")}, 0, []line{{"file", p("good.json"), true, ""}}, ""},
		{"some invalid", "", []string{"--schema", p("book.yaml"), p("good.json"), p("invalid.json"), p("notjson.json")}, 1, []line{
			{"file", p("good.json"), true, ""},
			{"file", p("invalid.json"), false, `"pointer":"/title","keyword":"type","message":"must be string, not integer","value":"5","want":["string"]`},
			{"file", p("notjson.json"), false, `"error":"not JSON`},
		}, ""},
		{"stdin file", `{"title":"x","topics":["a"],"status":"closed"}`, []string{"--schema", p("book.yaml"), "-"}, 0, []line{{"file", "-", true, ""}}, ""},
		{"jsonl", "{\"title\":\"x\",\"topics\":[\"a\"],\"status\":\"closed\"}\n\n{\"title\":\"x\"}\nnope\n", []string{"--schema", p("book.yaml"), "--jsonl"}, 1, []line{
			{"index", float64(0), true, ""},
			{"index", float64(1), false, `"pointer":"/status","keyword":"required"`},
			{"index", float64(2), false, `"error"`},
		}, ""},
		{"jsonl all valid", "{\"title\":\"x\",\"topics\":[\"a\"],\"status\":\"open\"}\n", []string{"--schema", p("book.yaml"), "--jsonl"}, 0, []line{{"index", float64(0), true, ""}}, ""},
		{"bad schema", "", []string{"--schema", p("bad.json"), p("good.json")}, 2, nil, "bad.json: at /properties/a/type"},
		{"unresolvable ref", "", []string{"--schema", p("book.json"), p("good.json")}, 2, nil, "https://example.com/s/money.json"},
		{"ref dir", "", []string{"--schema", p("book.json"), "--ref-dir", "https://example.com/s/=" + p("defs"), p("good.json")}, 1, []line{{"file", p("good.json"), false, `"/status","keyword":"additionalProperties"`}}, ""},
		{"draft flag", "", []string{"--schema", p("book.yaml"), "--draft", "7", p("good.json")}, 0, []line{{"file", p("good.json"), true, ""}}, ""},
		{"no schema", "", []string{p("good.json")}, 2, nil, "--schema FILE is required"},
		{"nothing to validate", "", []string{"--schema", p("book.yaml")}, 2, nil, "--jsonl"},
		{"jsonl with files", "", []string{"--schema", p("book.yaml"), "--jsonl", p("good.json")}, 2, nil, "give no INSTANCE files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runRoot(t, tc.stdin, append([]string{"validate"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			if tc.err != "" && !strings.Contains(errOut, tc.err) {
				t.Errorf("stderr lacks %q: %s", tc.err, errOut)
			}
			got := jsonLines(t, out)
			if len(got) != len(tc.lines) {
				t.Fatalf("%d lines, want %d:\n%s", len(got), len(tc.lines), out)
			}
			raw := strings.Split(strings.TrimSpace(out), "\n")
			for i, want := range tc.lines {
				if got[i][want.key] != want.val {
					t.Errorf("line %d %s = %v, want %v", i, want.key, got[i][want.key], want.val)
				}
				if got[i]["valid"] != want.valid {
					t.Errorf("line %d valid = %v, want %v", i, got[i]["valid"], want.valid)
				}
				if want.has != "" && !strings.Contains(raw[i], want.has) {
					t.Errorf("line %d lacks %s: %s", i, want.has, raw[i])
				}
			}
		})
	}
}
