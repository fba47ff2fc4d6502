package retry

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/internal/providers"
)

const lineItemsSchema = `{"type":"array","items":{"type":"object",
  "properties":{"sku":{"type":"string"},"qty":{"type":"integer"}},
  "required":["sku","qty"],"additionalProperties":false}}`

// sixteenItems is prose around an array of 16 objects; every third SKU is
// written without quotes. bad drops the qty of item 9.
func sixteenItems(bad bool) (answer, want string) {
	var b, w strings.Builder
	b.WriteString("Sure! Here are all the line items I found in the invoice:\n\n[\n")
	w.WriteByte('[')
	for i := range 16 {
		sku := fmt.Sprintf(`"SKU-%d"`, i)
		if i%3 == 0 {
			sku = fmt.Sprintf("SKU-%d", i)
		}
		if bad && i == 9 {
			fmt.Fprintf(&b, "  {\"sku\": %s},\n", sku)
		} else {
			fmt.Fprintf(&b, "  {\"sku\": %s, \"qty\": %d},\n", sku, i+1)
		}
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(&w, `{"sku":"SKU-%d","qty":%d}`, i, i+1)
	}
	b.WriteString("]\n\nLet me know if you need anything else!")
	w.WriteByte(']')
	return b.String(), w.String()
}

// runOnce runs the engine on one answer with no re-ask.
func runOnce(t *testing.T, schemaSrc, document, answer string, cfg func(*Config)) (*llm.Result, *extractqtest.Provider) {
	t.Helper()
	c := DefaultConfig()
	c.MaxReasks = 0
	if cfg != nil {
		cfg(&c)
	}
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(answer)})
	res, _ := Run(t.Context(), p, document, mustSchema(t, schemaSrc), c)
	if res == nil {
		t.Fatal("nil result")
	}
	return res, p
}

func TestRankingAccountsForTheWholeAnswer(t *testing.T) {
	t.Parallel()
	good, want := sixteenItems(false)
	bad, _ := sixteenItems(true)
	tests := []struct {
		name, schema, answer string
		want                 string // "" for no accepted value
		class                llm.AttemptClass
	}{
		{"16 objects in prose, some values unquoted: all 16", lineItemsSchema, good, want, llm.ClassNone},
		{"one item invalid: no one-element array of another item", lineItemsSchema, bad, "", llm.ClassSchema},
		{"a lone object where an array is wanted is still wrapped", lineItemsSchema, `Here it is: {"sku": "A-1", "qty": 2}`, `[{"sku":"A-1","qty":2}]`, llm.ClassNone},
		{"draft then correction: the correction", invoiceSchema,
			"Draft:\n" + validAnswer + "\n\nWait, I misread the price. Here is the corrected JSON:\n" + strings.Replace(validAnswer, "12.5", "13.5", -1),
			strings.Replace(validAnswer, "12.5", "13.5", -1), llm.ClassNone},
		{"valid value, then a correction that is invalid: re-asked, not the draft", invoiceSchema,
			validAnswer + "\nActually, the price is written differently:\n" + invalidAnswer, "", llm.ClassSchema},
		{"two different objects and nothing says which: ambiguous", invoiceSchema,
			"```json\n" + validAnswer + "\n```\n\n```json\n" + strings.Replace(validAnswer, "ACME", "Globex", 1) + "\n```", "", llm.ClassAmbiguous},
		{"the same object twice is not ambiguous", invoiceSchema,
			"```json\n" + validAnswer + "\n```\nIn one line: " + validAnswer, validAnswer, llm.ClassNone},
		{"a fragment quoted after the answer does not compete", `{"type":"object","properties":{"vendor":{"type":"string"},"total":{"type":"number"},"paid":{"type":"boolean"},"note":{"type":"string"}}}`,
			"```json\n{\"vendor\": \"ACME Industrial Supplies\", \"total\": 1234.5, \"paid\": true, \"note\": \"delivered in two parts\"}\n```\nI set `{\"paid\": true}` because the invoice is stamped PAID.",
			`{"vendor":"ACME Industrial Supplies","total":1234.5,"paid":true,"note":"delivered in two parts"}`, llm.ClassNone},
		{"a draft inside reasoning never beats the visible answer", invoiceSchema,
			"<think>maybe " + validAnswer + "</think>\n" + invalidAnswer, "", llm.ClassSchema},
		{"a plain-valid value beats a coercible one", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
			`{"n": "7"} hmm, no: {"n": 8}`, `{"n":8}`, llm.ClassNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, _ := runOnce(t, tt.schema, document, tt.answer, nil)
			if got := res.Attempts[0].Class; got != tt.class {
				t.Errorf("class %q, want %q (value %s)", got, tt.class, res.Attempts[0].Value)
			}
			if tt.want == "" {
				if res.Outcome.Accepted() {
					t.Fatalf("accepted %s, want no value", res.Value)
				}
				return
			}
			if res.Outcome != llm.OutcomeOK || string(res.Value) != tt.want {
				t.Fatalf("got %s %s, want %s", res.Outcome, res.Value, tt.want)
			}
		})
	}
}

const personSchema = `{"type":"object","properties":{
  "name":{"type":"string","description":"the person's full name"},
  "role":{"type":"string","enum":["engineer","manager","sales"]},
  "code":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$"}},
  "required":["name","role","code"],"additionalProperties":false}`

func TestEchoedExampleIsNeverAccepted(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, personSchema)
	ex, err := s.Example()
	if err != nil {
		t.Fatal(err)
	}
	real := `{"name":"Grace Hopper","role":"engineer","code":"NAV-1906"}`
	t.Run("example then the answer: the answer", func(t *testing.T) {
		t.Parallel()
		res, _ := runOnce(t, personSchema, "Rear Admiral Grace Hopper, engineer, badge NAV-1906.",
			"Following the format\n```json\n"+string(ex)+"\n```\nthe extracted data is:\n```json\n"+real+"\n```", nil)
		if res.Outcome != llm.OutcomeOK || string(res.Value) != real {
			t.Fatalf("got %s %s", res.Outcome, res.Value)
		}
	})
	t.Run("only the example: re-asked, saying so", func(t *testing.T) {
		t.Parallel()
		c := DefaultConfig()
		c.MaxReasks = 1
		p := extractqtest.New([]extractqtest.Reply{extractqtest.Text("```json\n" + string(ex) + "\n```"), extractqtest.Text(real)})
		res, err := Run(t.Context(), p, "Rear Admiral Grace Hopper, engineer, badge NAV-1906.", s, c)
		if err != nil || string(res.Value) != real || res.Attempts[0].Class != llm.ClassEcho {
			t.Fatalf("got %v %s, attempts %+v", err, res.Value, res.Attempts)
		}
		msgs := p.Requests()[1].Messages
		if fb := msgs[len(msgs)-1].Content; !strings.Contains(fb, "repeats the example") {
			t.Errorf("feedback does not say the answer repeats the example:\n%s", fb)
		}
	})
	t.Run("only the example, reformatted: never accepted", func(t *testing.T) {
		t.Parallel()
		res, _ := runOnce(t, personSchema, "Rear Admiral Grace Hopper.", "Here you go:\n"+indentJSON(t, ex), func(c *Config) { c.AcceptLossy = true })
		if res.Outcome.Accepted() {
			t.Fatalf("accepted the example %s", res.Value)
		}
	})
	t.Run("a document that is the example may be extracted as it is", func(t *testing.T) {
		t.Parallel()
		res, _ := runOnce(t, personSchema, string(ex), string(ex), nil)
		if res.Outcome != llm.OutcomeOK {
			t.Fatalf("got %s: %s", res.Outcome, res.Reason)
		}
	})
	t.Run("an example a real answer may equal is not distinctive", func(t *testing.T) {
		t.Parallel()
		const flags = `{"type":"object","properties":{"paid":{"type":"boolean"},"status":{"enum":["open","closed"]},"n":{"type":"integer"}},"required":["paid","status","n"]}`
		ex, err := mustSchema(t, flags).Example()
		if err != nil {
			t.Fatal(err)
		}
		res, _ := runOnce(t, flags, "Invoice 1, open, paid.", string(ex), nil)
		if res.Outcome != llm.OutcomeOK {
			t.Fatalf("got %s: %s", res.Outcome, res.Reason)
		}
	})
	t.Run("with the schema in the prompt there is no example to repeat", func(t *testing.T) {
		t.Parallel()
		res, _ := runOnce(t, personSchema, "x", string(ex), func(c *Config) { c.SchemaIn = SchemaInSchema })
		if res.Outcome != llm.OutcomeOK {
			t.Fatalf("got %s: %s", res.Outcome, res.Reason)
		}
	})
}

func indentJSON(t *testing.T, doc []byte) string {
	t.Helper()
	v, err := decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for k, x := range v.(map[string]any) { // another key order, another layout
		fmt.Fprintf(&b, "  %q: %q,\n", k, x)
	}
	return "{\n" + strings.TrimSuffix(b.String(), ",\n") + "\n}"
}

func TestFieldGuideInExamplePlacement(t *testing.T) {
	t.Parallel()
	res, p := runOnce(t, personSchema, "x", `{"name":"A","role":"sales","code":"ABC-1234"}`, nil)
	if res.Outcome != llm.OutcomeOK {
		t.Fatal(res.Reason)
	}
	system := p.Requests()[0].Messages[0].Content
	for _, want := range []string{"<example>", "the person's full name", `"engineer"`, `"manager"`, `^[A-Z]{3}-[0-9]{4}$`} {
		if !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system)
		}
	}
}

// TestReasksDiffer: a deterministic model that repeats its mistake word
// for word gets a different re-ask every time, which names the attempt
// and the repetition, at a rising temperature.
func TestReasksDiffer(t *testing.T) {
	t.Parallel()
	const dated = `{"type":"object","properties":{"issued":{"type":"string","format":"date"}},"required":["issued"]}`
	s := mustSchema(t, dated)
	for _, h := range []History{HistoryLast, HistoryFull} {
		t.Run(string(h), func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.History = h
			p := extractqtest.New(nil, extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply {
				return extractqtest.Text(`{"issued": "3 March 2024"}`)
			}))
			res, err := Run(t.Context(), p, "Issued on 3 March 2024.", s, cfg)
			if !errors.Is(err, llm.ErrExhausted) {
				t.Fatalf("got %v %s", err, res.Value)
			}
			reqs := p.Requests()
			seen := map[string]int{}
			for i, r := range reqs[1:] {
				fb := r.Messages[len(r.Messages)-1].Content
				if j, dup := seen[fb]; dup {
					t.Errorf("re-ask %d repeats re-ask %d byte for byte:\n%s", i+1, j+1, fb)
				}
				seen[fb] = i
				if !strings.Contains(fb, fmt.Sprintf("attempt %d of 4", i+2)) || !strings.Contains(fb, `"3 March 2024"`) {
					t.Errorf("re-ask %d does not name the attempt or quote the answer:\n%s", i+1, fb)
				}
				if i > 0 && !strings.Contains(fb, []string{"", "second", "third"}[i]+` time /issued was "3 March 2024"`) {
					t.Errorf("re-ask %d does not say the mistake repeats:\n%s", i+1, fb)
				}
			}
			want := []float64{0, 0, 0.2, 0.4}
			for i, r := range reqs {
				if d := r.Temperature - want[i]; d > 1e-9 || d < -1e-9 {
					t.Errorf("call %d temperature %v, want %v", i+1, r.Temperature, want[i])
				}
			}
		})
	}
	t.Run("temperature fixed when the step is 0", func(t *testing.T) {
		t.Parallel()
		cfg := DefaultConfig()
		cfg.RepeatTemperatureStep = 0
		p := extractqtest.New(nil, extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply { return extractqtest.Text("no idea") }))
		_, _ = Run(t.Context(), p, "x", s, cfg)
		for i, r := range p.Requests() {
			if r.Temperature != 0 {
				t.Errorf("call %d temperature %v", i+1, r.Temperature)
			}
		}
	})
}

func TestNumberFeedbackSaysTheForm(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.MaxReasks, c.Repair = 1, "syntax"
	p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(`{"vendor":"ACME","total":"1.234,50","items":[]}`), extractqtest.Text(`{"vendor":"ACME","total":1234.5,"items":[]}`)})
	if _, err := Run(t.Context(), p, document, mustSchema(t, invoiceSchema), c); err != nil {
		t.Fatal(err)
	}
	msgs := p.Requests()[1].Messages
	fb := msgs[len(msgs)-1].Content
	for _, want := range []string{"/total", "plain JSON number", `"." as the decimal mark`, "thousands separators", "1234.50"} {
		if !strings.Contains(fb, want) {
			t.Errorf("feedback lacks %q:\n%s", want, fb)
		}
	}
}

// TestAutoAvoidsUnfaithfulForms: the simulator's adapter speaks OpenAI's
// strict form, which would close a free-form object; auto extracts in JSON
// mode with the schema in the prompt instead, and every attempt says so.
func TestAutoAvoidsUnfaithfulForms(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, `{"type":"object","properties":{"title":{"type":"string"},"meta":{"type":"object"}},"required":["title","meta"]}`)
	p, err := providers.New("sim:clean")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(t.Context(), p, "Title: Annual report. Meta: pages 12, draft.", s, DefaultConfig())
	if err != nil {
		t.Fatalf("%v: %+v", err, res)
	}
	if res.Mode != llm.ModeJSON {
		t.Errorf("mode %s, want json", res.Mode)
	}
	for _, a := range res.Attempts {
		if a.Mode != llm.ModeJSON || !strings.Contains(a.ModeNote, "/properties/meta") {
			t.Errorf("attempt %d: mode %s, note %q", a.N, a.Mode, a.ModeNote)
		}
	}
	t.Run("an explicit strict mode is refused, not narrowed", func(t *testing.T) {
		t.Parallel()
		cfg := DefaultConfig()
		cfg.Mode = llm.ModeStrict
		if _, err := Run(t.Context(), p, "x", s, cfg); !errors.Is(err, llm.ErrFatal) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a faithful schema keeps strict mode", func(t *testing.T) {
		t.Parallel()
		res, err := Run(t.Context(), p, "x", mustSchema(t, invoiceSchema), DefaultConfig())
		if err != nil || res.Mode != llm.ModeStrict || res.Attempts[0].ModeNote != "" {
			t.Fatalf("got %v, mode %s, note %q", err, res.Mode, res.Attempts[0].ModeNote)
		}
	})
}

// TestScalarRoots: tidyprompt-style schemas whose root is a scalar succeed
// in every mode: a bare scalar or one in prose in text and JSON modes, the
// wire-wrapped object of a strict or tools call (unwrapped by the engine
// when the adapter passes it on), and the simulator's clean model.
func TestScalarRoots(t *testing.T) {
	t.Parallel()
	schemas := map[string]string{
		"integer": `{"type":"integer"}`,
		"boolean": `{"type":"boolean"}`,
		"enum":    `{"type":"string","enum":["positive","negative","neutral"]}`,
		"anyOf":   `{"anyOf":[{"type":"integer"},{"type":"string","enum":["unknown"]}]}`,
	}
	tests := []struct {
		schema string
		mode   llm.Mode
		answer string
		want   string
	}{
		{"integer", llm.ModeText, "The invoice lists 42 items in total.", `42`},
		{"integer", llm.ModeText, "```\n42\n```", `42`},
		{"integer", llm.ModeJSON, `42`, `42`},
		{"integer", llm.ModeStrict, `{"value": 42}`, `42`},
		{"integer", llm.ModeTools, `{"value":42}`, `42`},
		{"boolean", llm.ModeText, "**Yes.** The contract was signed by both parties.", `true`},
		{"boolean", llm.ModeText, "Answer: false", `false`},
		{"boolean", llm.ModeJSON, `true`, `true`},
		{"boolean", llm.ModeStrict, `{"value": false}`, `false`},
		{"boolean", llm.ModeTools, `{"value": true}`, `true`},
		{"enum", llm.ModeText, `"negative"`, `"negative"`},
		{"enum", llm.ModeText, "Sentiment: neutral", `"neutral"`},
		{"enum", llm.ModeJSON, `"positive"`, `"positive"`},
		{"enum", llm.ModeStrict, `{"value": "negative"}`, `"negative"`},
		{"enum", llm.ModeTools, `{"value":"neutral"}`, `"neutral"`},
		{"anyOf", llm.ModeText, "Result: 7", `7`},
		{"anyOf", llm.ModeJSON, `"unknown"`, `"unknown"`},
		{"anyOf", llm.ModeStrict, `{"value": 7}`, `7`},
		{"anyOf", llm.ModeTools, `{"value": "unknown"}`, `"unknown"`},
	}
	for _, tt := range tests {
		t.Run(tt.schema+"/"+string(tt.mode)+"/"+tt.answer, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Mode, cfg.MaxReasks = tt.mode, 0
			p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(tt.answer)}, extractqtest.WithModes(llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools))
			res, err := Run(t.Context(), p, "a document", mustSchema(t, schemas[tt.schema]), cfg)
			if err != nil || string(res.Value) != tt.want {
				t.Fatalf("got %v %s, want %s", err, res.Value, tt.want)
			}
		})
	}
	t.Run("sim:clean", func(t *testing.T) {
		t.Parallel()
		p, err := providers.New("sim:clean")
		if err != nil {
			t.Fatal(err)
		}
		for name, src := range schemas {
			for _, mode := range []llm.Mode{llm.ModeAuto, llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools} {
				cfg := DefaultConfig()
				cfg.Mode = mode
				s := mustSchema(t, src)
				res, err := Run(t.Context(), p, "Count: 42. Sentiment: positive. Signed: yes.", s, cfg)
				if err != nil {
					t.Errorf("%s in mode %s: %v", name, mode, err)
					continue
				}
				assertValid(t, s, res)
			}
		}
	})
}

func TestLossyNeverAcceptedWhileReasksRemain(t *testing.T) {
	t.Parallel()
	s := mustSchema(t, invoiceSchema)
	const lossy = `{"vendor": "ACME Industrial, "total": 12.5, "items": [{"name": "bolt", "price": 12.5}]}`
	t.Run("re-asked with what was guessed, then the clean answer", func(t *testing.T) {
		t.Parallel()
		p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(lossy), extractqtest.Text(validAnswer)})
		res, err := Run(t.Context(), p, document, s, DefaultConfig())
		if err != nil || string(res.Value) != validAnswer || res.Attempts[0].Class != llm.ClassLossy {
			t.Fatalf("got %v %s, attempts %+v", err, res.Value, res.Attempts)
		}
		msgs := p.Requests()[1].Messages
		fb := msgs[len(msgs)-1].Content
		for _, want := range []string{"without guessing", "missing quote", "near `" + `…endor": "ACME Industrial, "total"`} {
			if !strings.Contains(fb, want) {
				t.Errorf("feedback lacks %q:\n%s", want, fb)
			}
		}
	})
	for _, accept := range []bool{false, true} {
		t.Run(fmt.Sprintf("the model keeps guessing, AcceptLossy %v", accept), func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.MaxReasks, cfg.AcceptLossy = 2, accept
			p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(lossy), extractqtest.Text(lossy), extractqtest.Text(lossy)})
			res, err := Run(t.Context(), p, document, s, cfg)
			if p.Calls() != 3 {
				t.Fatalf("%d calls: a lossy value was accepted while re-asks remained", p.Calls())
			}
			if !accept {
				if !errors.Is(err, llm.ErrExhausted) || res.Value != nil || !strings.Contains(res.Reason, "repairs that guess (missing_quote") {
					t.Fatalf("got %v %s: %s", err, res.Value, res.Reason)
				}
				return
			}
			var got struct{ Vendor string }
			if err != nil || res.Outcome != llm.OutcomeLossy || res.Decode(&got) != nil || got.Vendor != "ACME Industrial" || !strings.Contains(res.Reason, "missing_quote") {
				t.Fatalf("got %v %s %s: %s", err, res.Outcome, res.Value, res.Reason)
			}
			assertValid(t, s, res)
		})
	}
	t.Run("the token budget running out returns the lossy value only when allowed", func(t *testing.T) {
		t.Parallel()
		cfg := DefaultConfig()
		cfg.AcceptLossy, cfg.TokenBudget, cfg.MaxTokens = true, 500, 100
		p := extractqtest.New([]extractqtest.Reply{extractqtest.Text(lossy)})
		res, err := Run(t.Context(), p, document, s, cfg)
		if err != nil || res.Outcome != llm.OutcomeLossy || res.Attempts[len(res.Attempts)-1].Class != llm.ClassBudget {
			t.Fatalf("got %v %s: %+v", err, res.Outcome, res.Attempts)
		}
	})
}
