package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/cli"
)

// runRepairCmd runs `extractq repair args...` with stdin and returns stdout,
// stderr and the exit code run() would return.
func runRepairCmd(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cli.Run(root, append([]string{"repair"}, args...), &errOut)
	return out.String(), errOut.String(), code
}

func TestRepairCmd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "answer.txt")
	if err := os.WriteFile(file, []byte("Sure:\n```json\n{\"a\": [1, 2,],}\n```"), 0o644); err != nil {
		t.Fatal(err)
	}
	messy := "Here you go: {'name': 'Ada', 'ok': True,} and also {\"b\": 2}"
	write := func(name, text string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	level := write("level.json", `{"type":"string","enum":["ONE","TWO","THREE"]}`)
	foo := write("foo.json", `{"type":"object","properties":{"foo":{"type":"number"}},"required":["foo"]}`)
	vendor := write("vendor.json", `{"type":"object","properties":{"name":{"type":"string"},"tax_id":{"type":"string"}},"required":["name"],"additionalProperties":false}`)
	toc := write("toc.txt", "Contents ..... 1")
	snippets := write("snippets.json", `{"type":"object","properties":{"s":{"type":"array","items":{"type":"string"}}},"required":["s"]}`)
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantOut    string
		wantErr    []string // substrings of stderr
		wantCode   int
		wantNoErrs bool
	}{
		{"stdin compact with repairs", messy, nil, `{"name":"Ada","ok":true}` + "\n",
			[]string{"repair single_quotes @14", "repair python_literal @35", "repair trailing_comma @39"}, 0, false},
		{"dash is stdin", `{"a": 1}`, []string{"-"}, `{"a":1}` + "\n", nil, 0, true},
		{"file", "", []string{file}, `{"a":[1,2]}` + "\n", []string{"trailing_comma"}, 0, false},
		{"pretty", `{"a": [1]}`, []string{"--pretty"}, "{\n  \"a\": [\n    1\n  ]\n}\n", nil, 0, true},
		{"all", messy, []string{"--all"}, `{"name":"Ada","ok":true}` + "\n" + `{"b":2}` + "\n", []string{"candidate 1 (bytes 13-41): repair single_quotes"}, 0, false},
		{"policy off skips repaired", messy, []string{"--policy", "off"}, `{"b":2}` + "\n", nil, 0, true},
		{"nothing found", "no JSON here", nil, "", []string{"no usable JSON found in stdin"}, 1, false},
		{"nothing valid under off", "{'a': 1}", []string{"--policy=off"}, "", []string{"none is strictly valid"}, 1, false},
		{"missing file", "", []string{filepath.Join(dir, "nope.txt")}, "", []string{"nope.txt", "pass a readable file"}, 2, false},
		{"bad policy", "{}", []string{"--policy", "lenient"}, "", []string{"unknown repair policy"}, 2, false},
		{"pretty with all", "{}", []string{"--pretty", "--all"}, "", []string{"cannot be combined"}, 2, false},
		{"two files", "", []string{file, file}, "", []string{"accepts at most 1 arg"}, 2, false},
		{"schema: an enum root in prose", "The answer is One", []string{"--schema", level}, `"ONE"` + "\n", []string{"repair enum_in_prose"}, 0, false},
		{"schema: two enum values are no value", "TWO, or maybe THREE", []string{"--schema", level}, "", []string{"no valid value in stdin", "several different values"}, 1, false},
		{"schema: a bare scalar for a one-property object", "1214", []string{"--schema", foo}, `{"foo":1214}` + "\n", []string{"coerce_wrap_object"}, 0, false},
		{"schema: coercion off", "1214", []string{"--schema", foo, "--policy", "syntax"}, "", []string{"no valid value"}, 1, false},
		{"schema: strict nulls undone with repair off", `{"name": "ACME", "tax_id": null}`, []string{"--schema", vendor, "--mode", "strict", "--policy", "off"}, `{"name":"ACME"}` + "\n", nil, 0, true},
		{"schema: the same null in text mode is a violation", `{"name": "ACME", "tax_id": null}`, []string{"--schema", vendor, "--policy", "off"}, "", []string{"violation /tax_id"}, 1, false},
		{"schema: dots the document holds", `{"s": ["....."]}`, []string{"--schema", snippets, "--document", toc}, `{"s":["....."]}` + "\n", nil, 0, true},
		{"schema: a template without the document", `{"s": ["....."]}`, []string{"--schema", snippets}, "", []string{"template"}, 1, false},
		{"schema with all", "{}", []string{"--schema", level, "--all"}, "", []string{"--all lists every candidate"}, 2, false},
		{"schema: a bad mode", "{}", []string{"--schema", level, "--mode", "xml"}, "", []string{"--mode \"xml\""}, 2, false},
		{"mode without schema", "{}", []string{"--mode", "strict"}, "", []string{"only apply with --schema"}, 2, false},
		{"schema: a missing schema", "{}", []string{"--schema", filepath.Join(dir, "none.json")}, "", []string{"none.json"}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runRepairCmd(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			if tt.wantNoErrs && errOut != "" {
				t.Errorf("stderr %q, want none", errOut)
			}
		})
	}
}
