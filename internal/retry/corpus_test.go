package retry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/schema"
)

// The answer corpus (testdata/corpus/CLASS.txt) holds messy answers as
// models write them, each with its schema and what a careful person would
// extract, or FAIL when no value may be accepted. A file is a list of
// blocks, each opened by a line starting with "=== ":
//
//	=== schema NAME          the JSON Schema on the following lines
//	=== case NAME            headers, then "--- answer", then the answer
//	schema: NAME             the schema (defined earlier in the file)
//	want: JSON | FAIL        the value to extract, or no accepted value
//	document: TEXT           the document (default: a neutral text)
//	mode: text|json|strict|tools   the mode (default text)
//	finish: length           the answer was cut off at the token limit
//	repair: off|syntax|coerce   the repair policy (default coerce)
//	answer_file: PATH        the answer is this file (relative to the corpus)
//	--- answer
//	…the answer, verbatim, up to the next "=== " line…
//
// In an answer, {{example}} and {{example:indent}} stand for the example
// the prompt shows (compact, or indented), for cases that repeat it.
type corpusCase struct {
	class, name, file string
	schema            *schema.Schema
	want              json.RawMessage // nil: no value may be accepted
	document, answer  string
	mode              llm.Mode
	finish            llm.FinishReason
	repair            jsonx.Policy // the repair policy (default coerce)
}

// loadCorpus reads every class file of the answer corpus.
func loadCorpus(t *testing.T) []corpusCase { return loadCases(t, "testdata/corpus") }

// loadCases reads every class file (*.txt) of a corpus directory.
func loadCases(t *testing.T, dir string) []corpusCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("corpus missing: %v", err)
	}
	var cases []corpusCase
	for _, f := range files {
		cases = append(cases, parseCorpusFile(t, f)...)
	}
	return cases
}

func parseCorpusFile(t *testing.T, file string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	class, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(file), ".txt"), ".") // NN-class.gen.txt is NN-class
	schemas := map[string]*schema.Schema{}
	var cases []corpusCase
	type block struct {
		head string
		line int
		body []string
	}
	var blocks []block
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(l, "=== ") {
			blocks = append(blocks, block{head: strings.TrimPrefix(l, "=== "), line: n})
			continue
		}
		if len(blocks) == 0 {
			continue // the file's own comments
		}
		blocks[len(blocks)-1].body = append(blocks[len(blocks)-1].body, l)
	}
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", file, b.line)
		kind, name, _ := strings.Cut(b.head, " ")
		switch kind {
		case "schema":
			s, err := schema.Compile([]byte(strings.Join(b.body, "\n")), schema.WithJSONSchema())
			if err != nil {
				t.Fatalf("%s: schema %s: %v", where, name, err)
			}
			schemas[name] = s
		case "case":
			c := corpusCase{class: class, name: name, file: where, document: "The document the answer was extracted from.", mode: llm.ModeText}
			i := 0
			var answerFile string
			for ; i < len(b.body) && b.body[i] != "--- answer"; i++ {
				k, v, ok := strings.Cut(b.body[i], ":")
				v = strings.TrimSpace(v)
				switch {
				case !ok && strings.TrimSpace(b.body[i]) == "":
				case k == "schema":
					if c.schema = schemas[v]; c.schema == nil {
						t.Fatalf("%s: unknown schema %q", where, v)
					}
				case k == "want" && v == "FAIL":
				case k == "want":
					if !json.Valid([]byte(v)) {
						t.Fatalf("%s: want is not JSON: %s", where, v)
					}
					c.want = compact([]byte(v))
				case k == "document":
					c.document = v
				case k == "mode":
					c.mode = llm.Mode(v)
				case k == "finish":
					c.finish = llm.FinishReason(v)
				case k == "repair":
					if c.repair, err = jsonx.ParsePolicy(v); err != nil {
						t.Fatalf("%s: %v", where, err)
					}
				case k == "answer_file":
					answerFile = v
				default:
					t.Fatalf("%s: unknown header %q", where, b.body[i])
				}
			}
			switch {
			case c.schema == nil:
				t.Fatalf("%s: case %s has no schema", where, name)
			case answerFile != "":
				raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), answerFile))
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				c.answer = string(raw)
			case i == len(b.body):
				t.Fatalf("%s: case %s has no answer", where, name)
			default:
				c.answer = strings.TrimSuffix(strings.Join(b.body[i+1:], "\n"), "\n")
			}
			if c.want != nil {
				if vs, err := c.schema.ValidateJSON(c.want); err != nil || len(vs) > 0 {
					t.Fatalf("%s: the wanted value does not validate: %v %v", where, err, vs)
				}
			}
			if strings.Contains(c.answer, "{{example") {
				ex, err := c.schema.Example()
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				var ind bytes.Buffer
				_ = json.Indent(&ind, ex, "", "  ")
				c.answer = strings.NewReplacer("{{example}}", string(ex), "{{example:indent}}", ind.String()).Replace(c.answer)
			}
			cases = append(cases, c)
		default:
			t.Fatalf("%s: unknown block %q", where, b.head)
		}
	}
	return cases
}

// corpusVerdict is how the engine did on one case.
type corpusVerdict int

const (
	verdictRight   corpusVerdict = iota // the wanted value, or no value when FAIL
	verdictNoValue                      // no value where one was wanted: a re-ask, not a wrong value
	verdictWrong                        // a value, and not the wanted one: valid but wrong
)

// runCorpusCase runs the real engine on one case: one attempt, no re-ask,
// the answer scripted, the prompt as Run builds it.
func runCorpusCase(t *testing.T, c corpusCase, cfg Config) (*llm.Result, *extractqtest.Provider) {
	t.Helper()
	cfg.Mode = c.mode
	if c.repair != "" {
		cfg.Repair = c.repair
	}
	p := extractqtest.New([]extractqtest.Reply{{Text: c.answer, Finish: c.finish}},
		extractqtest.WithModes(llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools))
	res, _ := Run(t.Context(), p, c.document, c.schema, cfg)
	if res == nil {
		t.Fatalf("%s: nil result", c.file)
	}
	return res, p
}

func judgeCase(c corpusCase, res *llm.Result) corpusVerdict {
	if !res.Outcome.Accepted() {
		if c.want == nil {
			return verdictRight
		}
		return verdictNoValue
	}
	if c.want != nil && sameJSON(res.Value, c.want) {
		return verdictRight
	}
	return verdictWrong
}

func sameJSON(a, b []byte) bool {
	va, err1 := decode(a)
	vb, err2 := decode(b)
	return err1 == nil && err2 == nil && bytes.Equal(canonical(va), canonical(vb))
}

// TestCorpus runs every corpus case through the engine and asserts that
// none yields a valid but wrong value; it logs the pass rate per class
// (the table in the README: go test -run TestCorpus -v ./internal/retry/).
// Cases the engine answers with a lossy repair also run the loop: the
// value is not accepted while re-asks remain, and AcceptLossy returns it
// only at the end.
func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 300 {
		t.Errorf("the corpus has %d cases; it must have at least 300", len(cases))
	}
	type tally struct{ cases, right, noValue, wrong, fail int }
	classes := map[string]*tally{}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.MaxReasks = 0
		res, _ := runCorpusCase(t, c, cfg)
		v := judgeCase(c, res)
		tl := classes[c.class]
		if tl == nil {
			tl = &tally{}
			classes[c.class] = tl
		}
		tl.cases++
		if c.want == nil {
			tl.fail++
		}
		switch v {
		case verdictRight:
			tl.right++
		case verdictNoValue:
			tl.noValue++
			t.Logf("no value: %s %s (%s): %s", c.class, c.name, c.file, res.Reason)
		case verdictWrong:
			tl.wrong++
			want := "no value"
			if c.want != nil {
				want = string(c.want)
			}
			t.Errorf("VALID BUT WRONG: %s %s (%s)\n got %s\nwant %s", c.class, c.name, c.file, res.Value, want)
		}
		if res.Attempts[0].Class == llm.ClassLossy {
			checkLossyLoop(t, c)
		}
	}
	names := make([]string, 0, len(classes))
	for n := range classes {
		names = append(names, n)
	}
	sort.Strings(names)
	var all tally
	var b strings.Builder
	b.WriteString("\n| class | cases | of which must fail | right | no value (re-ask) | valid but wrong | pass rate |\n|---|---|---|---|---|---|---|\n")
	for _, n := range names {
		tl := classes[n]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.1f%% |\n", n, tl.cases, tl.fail, tl.right, tl.noValue, tl.wrong, 100*float64(tl.right)/float64(tl.cases))
		all.cases += tl.cases
		all.fail += tl.fail
		all.right += tl.right
		all.noValue += tl.noValue
		all.wrong += tl.wrong
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d | %d | %d | %.1f%% |\n", all.cases, all.fail, all.right, all.noValue, all.wrong, 100*float64(all.right)/float64(all.cases))
	t.Log(b.String())
}

// checkLossyLoop runs a lossy case with re-asks, the model repeating its
// answer: the value is never accepted early, and AcceptLossy returns it
// (valid) only when the re-asks are spent.
func checkLossyLoop(t *testing.T, c corpusCase) {
	t.Helper()
	for _, accept := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.MaxReasks, cfg.AcceptLossy, cfg.Mode = 2, accept, c.mode
		p := extractqtest.New(nil, extractqtest.WithModes(llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools),
			extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply { return extractqtest.Reply{Text: c.answer, Finish: c.finish} }))
		res, _ := Run(t.Context(), p, c.document, c.schema, cfg)
		switch {
		case p.Calls() != 3:
			t.Errorf("%s %s: a lossy value was accepted after %d of 3 calls", c.class, c.name, p.Calls())
		case !accept && res.Outcome != llm.OutcomeExhausted:
			t.Errorf("%s %s: without AcceptLossy the outcome is %s", c.class, c.name, res.Outcome)
		case accept && res.Outcome != llm.OutcomeLossy:
			t.Errorf("%s %s: with AcceptLossy the outcome is %s", c.class, c.name, res.Outcome)
		case accept:
			assertValid(t, c.schema, res)
		}
	}
}
