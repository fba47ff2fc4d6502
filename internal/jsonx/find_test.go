package jsonx

import (
	"encoding/json"
	"reflect"
	"slices"
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

// TestFindRealShapes has answers shaped like real models' (prose, fences,
// several values) whose strings are delimited by triple quotes or
// backticks, or whose keys are not ASCII or not strings. The first
// candidate must be the exact intended value.
func TestFindRealShapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"python code in a backtick string inside a fence",
			"Here is the snippet you asked for:\n\n```json\n{\n  \"language\": \"python\",\n  \"code\": ```python\nimport re\nprint(re.sub(r\"\\s+\", \" \", s))\n```,\n  \"lines\": 2\n}\n```\n\nLet me know if you need more!",
			`{"language":"python","code":"import re\nprint(re.sub(r\"\\s+\", \" \", s))","lines":2}`},
		{"docstring in triple quotes, pretty printed",
			"Sure:\n{\n  \"name\": \"greet\",\n  \"doc\": \"\"\"\n      Say hello.\n\n      Uses \"quotes\" and a \\\\ backslash.\n      \"\"\",\n  \"args\": [\"name\"]\n}",
			`{"name":"greet","doc":"Say hello.\n\nUses \"quotes\" and a \\ backslash.","args":["name"]}`},
		{"JS template literal spanning lines",
			"Result:\n```js\n{query: `SELECT name, \"age\"\nFROM users\nWHERE id = 'x'`, limit: 10}\n```",
			`{"query":"SELECT name, \"age\"\nFROM users\nWHERE id = 'x'","limit":10}`},
		{"French keys after an example object",
			"Exemple : {\"nom\": \"...\"}\n\nVoici la réponse :\n```json\n{nom: \"Hôtel Étoile\", étoiles: 4, ville: \"Paris\", catégorie: \"luxe\"}\n```",
			`{"nom":"Hôtel Étoile","étoiles":4,"ville":"Paris","catégorie":"luxe"}`},
		{"Japanese and German keys",
			"```\n{名前: \"山田\", \"größe\": 180, größe2: 2}\n```",
			`{"名前":"山田","größe":180,"größe2":2}`},
		{"numeric keys in prose",
			"The map is {5: \"b\", 2.17: \"e\", null: \"n\", true: 1} as requested.",
			`{"5":"b","2.17":"e","null":"n","true":1}`},
		{"array of objects with bare values in prose",
			"Here are the rows:\n[{\"name\": Alice, \"age\": 30}, {\"name\": Bob, \"age\": 25}, {\"name\": \"Carol\", \"age\": 41}]\nHope this helps.",
			`[{"name":"Alice","age":30},{"name":"Bob","age":25},{"name":"Carol","age":41}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := Find(tt.in, PolicySyntax)
			if len(cs) == 0 {
				t.Fatalf("Find(%q) found nothing, want %s", tt.in, tt.want)
			}
			if got := string(cs[0].JSON); got != tt.want {
				t.Errorf("Find(%q)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			if cs[0].Lossy() {
				t.Errorf("lossy repairs %v", cs[0].Repairs)
			}
		})
	}
}

// TestFindScalars checks the scalar candidates FindWith offers, and their
// order, for a schema whose root is a scalar.
func TestFindScalars(t *testing.T) {
	t.Parallel()
	type cand struct {
		json string
		from ScalarFrom
	}
	num, boolean, str := ScalarNumber, ScalarBoolean, ScalarString
	tests := []struct {
		name  string
		in    string
		kinds ScalarKinds
		want  []cand
	}{
		{"bare integer", "42", num, []cand{{"42", ScalarWhole}}},
		{"bare literal", "  true\n", boolean, []cand{{"true", ScalarWhole}}},
		{"null", "null", ScalarNull | num, []cand{{"null", ScalarWhole}}},
		{"exponent", "-3.5e2", num, []cand{{"-3.5e2", ScalarWhole}}},
		{"quoted string", `"Paris"`, str, []cand{{`"Paris"`, ScalarWhole}}},
		{"single-quoted string", `'Paris'.`, str, []cand{{`"Paris"`, ScalarWhole}}},
		{"python literal", "True", boolean, []cand{{"true", ScalarWhole}}},
		{"scalar in a fence", "Here you go:\n```json\n42\n```\nAnything else?", num, []cand{{"42", ScalarWhole}}},
		{"emphasised yes", "**Yes.**", boolean, []cand{{"true", ScalarWhole}}},
		{"yes is text when no boolean is wanted", "yes", str, []cand{{`"yes"`, ScalarText}}},
		{"human number offered as text for Coerce", "$1,234.50", num, []cand{{`"$1,234.50"`, ScalarWhole}}},
		{"number in a sentence", "The answer is 42.", num, []cand{{"42", ScalarSole}}},
		{"labelled boolean", "Let me check the contract.\n\nAnswer: yes", boolean, []cand{{"true", ScalarLabeled}}},
		{"answer label preferred", "Pages: 12\n**Final answer:** 42", num, []cand{{"42", ScalarLabeled}}},
		{"labels that disagree", "Subtotal: 40\nTax: 2", num, nil},
		{"scalar line before an explanation", "\"Paris\"\n\nParis has been the capital since 987.", str, []cand{{`"Paris"`, ScalarLabeled}}},
		{"number line before an explanation", "42\n\nI counted 42 rows in the table.", num, []cand{{"42", ScalarLabeled}}},
		{"lines that disagree", "Here are the years:\n2021\n2022", num, nil},
		{"labelled text", "Sentiment: Positive", str, []cand{{`"Positive"`, ScalarLabeled}}},
		{"several numbers are no answer", "In 2023 the count was 42.", num, nil},
		{"a date makes numbers ambiguous", "On 2024-01-05 there were 42 cases.", num, nil},
		{"a number glued to letters is not one", "Call me at 10am.", num, nil},
		{"number after thinking", "<think>It is 41 or 42, let me count again.</think>\nThere are 42 items.", num, []cand{{"42", ScalarSole}}},
		{"yes first", "Yes, the contract is signed on page 3.", boolean, []cand{{"true", ScalarSole}}},
		{"no as a determiner is not an answer", "The contract has no signature.", boolean, nil},
		{"negated true", "The statement is not true.", boolean, nil},
		{"true and false disagree", "It is true for A and false for B.", boolean, nil},
		{"whole answer as text", "The capital of France is Paris.", str, []cand{{`"The capital of France is Paris."`, ScalarText}}},
		{"object first, scalars after", "{\"answer\": 42}", num | str, nil},
		{"no scalars unless asked", "42", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []cand
			for _, c := range FindWith(tt.in, FindOptions{Policy: PolicyCoerce, Scalars: tt.kinds}) {
				if c.Scalar == NotScalar {
					continue
				}
				got = append(got, cand{string(c.JSON), c.Scalar})
				if c.Start < 0 || c.End > len(tt.in) || c.Start >= c.End {
					t.Errorf("candidate %s has span [%d,%d) outside the text", c.JSON, c.Start, c.End)
				}
				if !json.Valid(c.JSON) {
					t.Errorf("invalid candidate %s", c.JSON)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FindWith(%q)\n got %v\nwant %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestFindScalarsOrder checks where scalars rank among other candidates,
// and that PolicyOff offers only scalars written as JSON.
func TestFindScalarsOrder(t *testing.T) {
	t.Parallel()
	in := "<think>maybe {\"n\": 1}</think>\nI found {\"n\": 2} in the text, so:\n\nAnswer: 42"
	var got []string
	for _, c := range FindWith(in, FindOptions{Policy: PolicySyntax, Scalars: ScalarNumber}) {
		got = append(got, string(c.JSON))
	}
	want := []string{`{"n":2}`, "42", `{"n":1}`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, tt := range []struct {
		in   string
		want int
	}{{"42", 1}, {"'x'", 0}, {"Answer: 42", 0}, {"```json\n\"x\"\n```", 1}} {
		cs := FindWith(tt.in, FindOptions{Policy: PolicyOff, Scalars: AnyScalar})
		if len(cs) != tt.want {
			t.Errorf("PolicyOff: FindWith(%q) = %d candidates, want %d", tt.in, len(cs), tt.want)
		}
		for _, c := range cs {
			if len(c.Repairs) > 0 {
				t.Errorf("PolicyOff candidate %s has repairs %v", c.JSON, c.Repairs)
			}
		}
	}
}

// TestFindJoinedFlag checks that a joined run is marked and its parts are
// not.
func TestFindJoinedFlag(t *testing.T) {
	t.Parallel()
	cs := Find("{\"a\": 1},\n{\"a\": 2}", PolicySyntax)
	if len(cs) != 3 || cs[0].Joined || cs[1].Joined || !cs[2].Joined {
		t.Fatalf("candidates %+v: want two parts then one join", cs)
	}
	if cs[2].Start != cs[0].Start || cs[2].End != cs[1].End {
		t.Errorf("join spans [%d,%d), want [%d,%d)", cs[2].Start, cs[2].End, cs[0].Start, cs[1].End)
	}
}

// TestReasoningTagsHoldLess checks what appendReasoning's shortcut relies
// on: every reasoning tag holds a '<'.
func TestReasoningTagsHoldLess(t *testing.T) {
	for _, tag := range reasoningTags {
		if !strings.Contains(tag.open, "<") || !strings.Contains(tag.close, "<") {
			t.Errorf("tag %q / %q holds no '<'", tag.open, tag.close)
		}
	}
}

// FuzzReasoningShortcut checks that appendReasoning, which takes text
// without '<' as one answer span, splits every text as the walk of its
// tags (appendTagged) does.
func FuzzReasoningShortcut(f *testing.F) {
	for _, s := range []string{"", "x", `{"a":1}`, "<think>a</think>{}", "a\n</think>\n{}", "<reasoning>\nx", "think>{}", " <thinking> x </thinking>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, want := appendReasoning(nil, text), appendTagged(nil, text)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: shortcut %v, walk %v", text, got, want)
		}
	})
}
