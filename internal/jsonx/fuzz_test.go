package jsonx

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzFind asserts that Find never panics, that every candidate is valid
// JSON with a span inside the text, and that valid JSON passes through
// unchanged and unrepaired.
func FuzzFind(f *testing.F) {
	seeds := []string{
		`{"a": 1}`, `[1, 2,]`, `{'a': True}`, "```json\n{\"a\": \"x\n", `{"a": "b "c" d"}`,
		`"{\"a\": 1}"`, `{\"a\": [\"x\"]}`, "<think>{\"d\":1}</think>{\"a\":2}", `{a: b, c: [d e]}`,
		`[NaN, -Infinity, .5, +1, 007, 2024-01-01]`, `{"a": ISODate("x")}`, `{"a": [1, 2}`, `{/* c */ "a" // d` + "\n}",
		`{"a": "\x41\u12"}`, `"{\"\"\""{\"\" ")`, "{\"a\": \"\xff\"}", `({'a', 'b'})`, `{"a": ...}`, `[{"a": 1]`,
		"{\"c\": \"\"\"x\n  \"y\"\n  \"\"\"}", "{\"c\": ```py\nprint(1)\n```, \"n\": 1}", "```json\n{\"c\": ```\nx\n```}\n```",
		"{\"c\": `a\nb`}", `{"q": '''it's'''}`, `{étoiles: 4, 名前: "x"}`, `{5: "b", 2.17: "e", null: "n"}`,
		"Answer: yes", "The answer is 42.", "$1,234.50", "**Final answer:** -3.5e2", "<think>1</think>\n'x'",
	}

	files, _ := filepath.Glob("testdata/corpus/*.txt")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			seeds = append(seeds, string(b))
		}
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, policy := range []Policy{PolicyOff, PolicySyntax} {
			for _, c := range FindWith(text, FindOptions{Policy: policy, Scalars: AnyScalar}) {
				if !json.Valid(c.JSON) {
					t.Fatalf("Find(%q, %s) returned invalid JSON %q", text, policy, c.JSON)
				}
				if c.Start < 0 || c.Start >= c.End || c.End > len(text) {
					t.Fatalf("Find(%q, %s): span [%d,%d) outside the text", text, policy, c.Start, c.End)
				}
				if policy == PolicyOff && len(c.Repairs) > 0 {
					t.Fatalf("PolicyOff candidate has repairs %v", c.Repairs)
				}
			}
		}
		// Valid JSON (an object or array in valid UTF-8, with no reasoning
		// tag or fence in its strings) must come back equal and unrepaired.
		trimmed := strings.TrimSpace(text)
		if !json.Valid([]byte(trimmed)) || !utf8.ValidString(text) || trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') ||
			strings.Contains(text, "```") || strings.Contains(text, "<think") || strings.Contains(text, "<reasoning") || strings.Contains(text, "</") {
			return
		}
		cs := Find(text, PolicySyntax)
		if len(cs) == 0 {
			t.Fatalf("valid JSON %q not found", text)
		}
		if len(cs[0].Repairs) > 0 {
			t.Fatalf("valid JSON %q repaired: %v", text, cs[0].Repairs)
		}
		var want, got any
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.UseNumber()
		_ = dec.Decode(&want)
		dec = json.NewDecoder(bytes.NewReader(cs[0].JSON))
		dec.UseNumber()
		_ = dec.Decode(&got)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("valid JSON %q came back as %s", text, cs[0].JSON)
		}
	})
}
