package jsonx

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// plainSeeds are answers plainAt takes or nearly takes: compact JSON of
// every kind, and near misses the parser must see.
var plainSeeds = []string{
	`{"currency":"GBP","invoice_number":"VEN-25594","items":[{"name":"Total","qty":512}],"paid":false,"total":901.58,"vendor":"Jane Doe"}`,
	`{"a":null,"b":[true,false,null,-0,1E5,1e-3,0.5,-12.5e+3],"c":{},"d":[],"e":""}`,
	`[{"a":1},{"b":2}]`, `{"a":1},{"b":2}`, `{"a":1}{"b":2}`, `[1,2,3]`, `[3]`, `[see]`, `{"a":"x"}trailing`,
	`{"s":"it's a \"quote\""}`, `{"s":"tab	in"}`, `{"s":"ünï 😀"}`, "{\"s\":\"bad \xff\"}", `{"s":"...","t":"…"}`,
	`{"a":01}`, `{"a":1,234}`, `{"a":+1}`, `{"a":.5}`, `{"a":1.}`, `{"a":NaN}`, `{"a":True}`, `{'a':1}`, `{a:1}`,
	`{"a":1,}`, `[1,]`, `{"a":[1,2}`, `{"a":1]`, `{"a" :1}`, `{"a":"b"c"}`, `{"a":"""x"""}`, `{"a":"x"+"y"}`,
	`{"a":"<think>x</think>"}`, "{\"a\":\"```\"}", "```json\n{\"a\":1}\n```", `{"k":"v"}` + "\n" + `{"k":"w"}`,
	`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":{"k":{"l":{"m":{"n":{"o":{"p":{"q":1}}}}}}}}}}}}}}}}}`,
	"Here it is: {\"a\":1} and [1,2] and `{\"b\":2}`.", `{"a":"b","a":"c"}`, `{"":""}`, `[""]`, `["",""]`, `{"a":""}"`,
	`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`, `{"a":1}}`, `{"a":1}]`,
}

// findBoth runs FindWith with and without plainAt's shortcut.
func findBoth(text string, opt FindOptions) (fast, parsed []Candidate) {
	fast = FindWith(text, opt)
	copyPlain = false
	defer func() { copyPlain = true }()
	return fast, FindWith(text, opt)
}

func checkPlain(t *testing.T, text string) {
	t.Helper()
	for _, opt := range []FindOptions{{Policy: PolicyOff}, {Policy: PolicySyntax}, {Policy: PolicyCoerce}, {Policy: PolicyCoerce, Scalars: AnyScalar}} {
		fast, parsed := findBoth(text, opt)
		if !reflect.DeepEqual(fast, parsed) {
			t.Fatalf("FindWith(%q, %+v)\nwith plainAt: %+v\nparser only:  %+v", text, opt, fast, parsed)
		}
	}
}

// TestPlainMatchesParser checks that plainAt's shortcut finds exactly
// what the parser finds, on the seeds and the answer corpus.
func TestPlainMatchesParser(t *testing.T) {
	seeds := append([]string(nil), plainSeeds...)
	files, _ := filepath.Glob("testdata/corpus/*.txt")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			seeds = append(seeds, string(b))
		}
	}
	taken := 0
	for _, s := range seeds {
		checkPlain(t, s)
		if end, _ := plainEnd(s, 0, len(s)); end > 0 {
			taken++
		}
	}
	if taken < 10 {
		t.Errorf("plainEnd took only %d seeds: the shortcut is not exercised", taken)
	}
}

// FuzzPlain checks plainAt's shortcut against the parser on any text.
func FuzzPlain(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) { checkPlain(t, text) })
}
