package jsonx

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestFind checks where candidates are found and in which order.
func TestFind(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		policy Policy
		want   []string // every candidate's JSON, in order
	}{
		{"json fence with prose", "Here is the JSON:\n```json\n{\"name\": \"Ada\"}\n```\nHope that helps!", PolicySyntax, []string{`{"name":"Ada"}`}},
		{"adjacent escaped values", `"{\"a\":1}"{\"b\":2}"`, PolicySyntax, []string{`{"a":1}`, `{"b":2}`, `[{"a":1},{"b":2}]`}},
		{"leading BOM", "\uFEFF{\"a\": 1}", PolicyOff, []string{`{"a":1}`}},
		{"backticks inside a fenced string", "```json\n{\"a\": \"use ```code``` here\"}\n```", PolicyOff, []string{"{\"a\":\"use ```code``` here\"}"}},
		{"crlf fence", "Result:\r\n```json\r\n{\"a\": 1}\r\n```\r\n", PolicySyntax, []string{`{"a":1}`}},
		{"bare fence", "```\n[1, 2]\n```", PolicySyntax, []string{`[1,2]`}},
		{"one-line fence", "```json {\"a\": 1}```", PolicySyntax, []string{`{"a":1}`}},
		{"unterminated fence", "Sure!\n```json\n{\"a\": 1, \"b\": \"cut", PolicySyntax, []string{`{"a":1,"b":"cut"}`}},
		{"fence first, then prose", "Like {\"x\": 0} but:\n```json\n{\"x\": 1}\n```", PolicySyntax, []string{`{"x":1}`, `{"x":0}`}},
		{"two fences in order", "```json\n{\"a\": 1}\n```\nor\n```json\n{\"a\": 2}\n```", PolicySyntax, []string{`{"a":1}`, `{"a":2}`}},
		{"ndjson fence", "```jsonl\n{\"a\": 1}\n{\"a\": 2}\n```", PolicySyntax, []string{`{"a":1}`, `{"a":2}`, `[{"a":1},{"a":2}]`}},
		{"prose before and after", "The answer is {\"a\": [1, {\"b\": \"}\"}]} as requested.", PolicySyntax, []string{`{"a":[1,{"b":"}"}]}`}},
		{"several objects in prose", "first {\"a\": 1} then {\"b\": 2} and [3, 4]", PolicySyntax, []string{`{"a":1}`, `{"b":2}`, `[3,4]`}},
		{"top-level array", "[{\"a\": 1}, {\"a\": 2}]", PolicySyntax, []string{`[{"a":1},{"a":2}]`}},
		{"braces inside strings", `{"a": "{[(\"", "b": "]}"} {"c": "'{'"}`, PolicySyntax, []string{`{"a":"{[(\"","b":"]}"}`, `{"c":"'{'"}`, `[{"a":"{[(\"","b":"]}"},{"c":"'{'"}]`}},
		{"objects without brackets also joined", "{\"a\": 1},\n{\"a\": 2}\n\nand {\"b\": 3}", PolicySyntax, []string{`{"a":1}`, `{"a":2}`, `[{"a":1},{"a":2}]`, `{"b":3}`}},
		{"off: no joining", "{\"a\": 1}, {\"a\": 2}", PolicyOff, []string{`{"a":1}`, `{"a":2}`}},
		{"think block last", "<think>maybe {\"draft\": 1}</think>\n{\"final\": 2}", PolicySyntax, []string{`{"final":2}`, `{"draft":1}`}},
		{"thinking block", "<thinking>\n{\"draft\": 1}\n</thinking>\n```json\n{\"final\": 2}\n```", PolicySyntax, []string{`{"final":2}`, `{"draft":1}`}},
		{"stray closing think tag", "I think {\"draft\": 1} fits.\n</think>\n\n{\"final\": 2}", PolicySyntax, []string{`{"final":2}`, `{"draft":1}`}},
		{"think tag inside a value", "{\"note\": \"the <think> tag\", \"n\": 1}", PolicyOff, []string{`{"note":"the <think> tag","n":1}`}},
		{"closing tag inside a value", "{\"note\": \"</think>\", \"n\": 1}", PolicyOff, []string{`{"note":"</think>","n":1}`}},
		{"unclosed think", "<think>the answer is {\"a\": 1", PolicySyntax, []string{`{"a":1}`}},
		{"prose junk skipped", "See [1], {name} and [citation needed] or [2024-01-05]. {\"real\": true}", PolicySyntax, []string{`{"real":true}`}},
		{"js literal in prose", "Result: {name: 'Ada', age: 36}", PolicySyntax, []string{`{"name":"Ada","age":36}`}},
		{"no JSON", "I could not find any data.", PolicySyntax, nil},
		{"empty", "", PolicySyntax, nil},
		{"off: valid found in prose", "Sure: {\"a\": 1}.", PolicyOff, []string{`{"a":1}`}},
		{"off: repaired rejected, inner not taken", `{"a": {"b": 1},}`, PolicyOff, nil},
		{"off: python rejected", "```python\n{'a': True}\n```", PolicyOff, nil},
		{"coerce policy repairs syntax", "{'a': 1,}", PolicyCoerce, []string{`{"a":1}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Find(tt.in, tt.policy) {
				got = append(got, string(c.JSON))
				if c.Start < 0 || c.End > len(tt.in) || c.Start >= c.End {
					t.Errorf("candidate %s has span [%d,%d) outside the text", c.JSON, c.Start, c.End)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Find(%q, %s)\n got %q\nwant %q", tt.in, tt.policy, got, tt.want)
			}
		})
	}
}

func TestFindMarksOrigin(t *testing.T) {
	in := "<think>{\"d\": 1}</think>\n```json\n{\"a\": 1}\n```\nalso {\"b\": 2}"
	cs := Find(in, PolicySyntax)
	if len(cs) != 3 {
		t.Fatalf("got %d candidates, want 3", len(cs))
	}
	type flags struct{ fenced, reasoning bool }
	want := []flags{{true, false}, {false, false}, {false, true}}
	for i, c := range cs {
		if got := (flags{c.Fenced, c.Reasoning}); got != want[i] {
			t.Errorf("candidate %d %s: fenced/reasoning %v, want %v", i, c.JSON, got, want[i])
		}
		if src := in[c.Start:c.End]; !json.Valid([]byte(src)) {
			t.Errorf("candidate %d span %q is not the value's source", i, src)
		}
	}
}

// TestFindBounded checks that hostile inputs stay bounded: deep nesting is
// dropped, not a stack overflow, and the candidate count is capped.
func TestFindBounded(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+10) + strings.Repeat("]", maxDepth+10)
	if cs := Find(deep, PolicySyntax); len(cs) != 0 {
		t.Errorf("nesting deeper than %d accepted", maxDepth)
	}
	okDeep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if cs := Find(okDeep, PolicyOff); len(cs) != 1 {
		t.Errorf("nesting of 100 rejected")
	}
	many := strings.Repeat(`{"a":1} `, 1000)
	if cs := Find(many, PolicySyntax); len(cs) != MaxCandidates {
		t.Errorf("got %d candidates, want the cap %d", len(cs), MaxCandidates)
	}
}
