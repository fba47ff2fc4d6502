package retry

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestFidelityCorpus runs the fidelity corpus (testdata/fidelity: one file
// per behaviour class of issue 27, same format as testdata/corpus) through
// the engine, one answer and no re-ask, and asserts that no case yields a
// valid but wrong value. It logs, per class, how many answers gave their
// value at once, how many were re-asked and how many values were wrong
// (the table in doc/fidelity.md: go test -run TestFidelityCorpus -v
// ./internal/retry/). A re-ask where a value was wanted costs a call, not
// a wrong value: it is counted and logged.
func TestFidelityCorpus(t *testing.T) {
	t.Parallel()
	cases := loadCases(t, "testdata/fidelity")
	if len(cases) < 400 {
		t.Errorf("the fidelity corpus has %d cases; it must have at least 400", len(cases))
	}
	type tally struct{ cases, wantValue, recovered, reasked, missed, wrong int }
	classes := map[string]*tally{}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.MaxReasks = 0
		res, _ := runCorpusCase(t, c, cfg)
		tl := classes[c.class]
		if tl == nil {
			tl = &tally{}
			classes[c.class] = tl
		}
		tl.cases++
		if c.want != nil {
			tl.wantValue++
		}
		switch judgeCase(c, res) {
		case verdictRight:
			if res.Outcome.Accepted() {
				tl.recovered++
			} else {
				tl.reasked++
			}
		case verdictNoValue:
			tl.reasked++
			tl.missed++
			t.Logf("re-asked, want %s: %s %s (%s): %s", c.want, c.class, c.name, c.file, res.Reason)
		case verdictWrong:
			tl.wrong++
			want := "a re-ask"
			if c.want != nil {
				want = string(c.want)
			}
			t.Errorf("VALID BUT WRONG: %s %s (%s)\n got %s\nwant %s", c.class, c.name, c.file, res.Value, want)
		}
	}
	var all tally
	var b strings.Builder
	b.WriteString("\n| class | cases | value wanted | recovered in one answer | re-asked | of which a value was wanted | valid but wrong |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range slices.Sorted(maps.Keys(classes)) {
		tl := classes[n]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d |\n", n, tl.cases, tl.wantValue, tl.recovered, tl.reasked, tl.missed, tl.wrong)
		all.cases += tl.cases
		all.wantValue += tl.wantValue
		all.recovered += tl.recovered
		all.reasked += tl.reasked
		all.missed += tl.missed
		all.wrong += tl.wrong
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d | %d | %d | %d |\n", all.cases, all.wantValue, all.recovered, all.reasked, all.missed, all.wrong)
	t.Log(b.String())
}

// TestPlaceholderNamesItself: a template is refused under its own name,
// quoting what was refused; dots the document holds are a value.
func TestPlaceholderNamesItself(t *testing.T) {
	t.Parallel()
	const snippets = `{"type":"object","properties":{"snippets":{"type":"array","items":{"type":"string"}}},"required":["snippets"]}`
	tests := []struct {
		name, document, answer string
		class                  llm.AttemptClass
		reason                 string // in Result.Reason
	}{
		{"dots the document holds", "Contents ..... 1", `{"snippets": ["....."]}`, llm.ClassNone, ""},
		{"dots the document does not hold", "Contents, page 1", `{"snippets": ["....."]}`, llm.ClassTemplate, `refused as a template, every string a placeholder: {"snippets":["....."]}`},
		{"angle-bracket placeholders", "Contents, page 1", `{"snippets": ["<snippet>"]}`, llm.ClassTemplate, `placeholder: {"snippets":["<snippet>"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, _ := runOnce(t, snippets, tt.document, tt.answer, nil)
			if got := res.Attempts[0].Class; got != tt.class {
				t.Fatalf("class %q, want %q (%s)", got, tt.class, res.Reason)
			}
			if !strings.Contains(res.Reason, tt.reason) || strings.Contains(res.Reason, "no JSON") {
				t.Errorf("reason %q does not say %q", res.Reason, tt.reason)
			}
		})
	}
}
