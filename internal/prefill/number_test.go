package prefill

import (
	"slices"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/llm"
)

func TestNumberText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text   string
		inList bool
		num    string
		parts  []string // the list reading when it differs from num
		ended  bool
	}{
		{" 12,500.00", false, "12,500.00", nil, false},
		{" 12,500.00,", false, "12,500.00", nil, true},
		{"12,500.00, 'c': 1", false, "12,500.00", nil, true},
		{"12 500", false, "12 500", nil, false},
		{"1.234,56,", false, "1.234,56", nil, true},
		{`"12,500.00", "c"`, false, `"12,500.00"`, nil, true},
		{"12", false, "12", nil, false},
		{"1,2,3", true, "1", nil, true},
		{"1,5", true, "1", nil, true},
		{"2019,2020", true, "2019", nil, true},
		{"12,500.00", true, "12,500.00", []string{"12", "500.00"}, false},
		{"12,500.00,13,000.00", true, "12,500.00", []string{"12", "500.00"}, false},
		{"100,200,300", true, "100,200,300", []string{"100", "200", "300"}, false},
		{"1,234", true, "1,234", []string{"1", "234"}, false},
		{"1.234,56", true, "1.234,56", []string{"1.234", "56"}, false},
		{"12 500", true, "12 500", nil, false},
		{`"1,234"`, true, `"1,234"`, nil, true},
	}
	for _, tc := range cases {
		num, parts, ended := numberText(tc.text, tc.inList)
		if num != tc.num || !slices.Equal(parts, tc.parts) || ended != tc.ended {
			t.Errorf("numberText(%q, list %v) = %q %q %v, want %q %q %v", tc.text, tc.inList, num, parts, ended, tc.num, tc.parts, tc.ended)
		}
	}
}

func TestNumberValue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text     string
		integer  bool
		mark     byte
		conflict bool
		want     string // the JSON number; "" when it is an error
		why      string // a fragment of the error, or of the note
	}{
		{"12,500.00", false, 0, false, "12500.00", "thousands separator"},
		{"12 500", false, 0, false, "12500", "thousands separator"},
		{"1.234,56", false, 0, false, "1234.56", `"," read as the decimal mark`},
		{"$12,500.00", false, 0, false, "12500.00", "currency"},
		{"12,5", false, 0, false, "12.5", "decimal mark"},
		{"1,234,567", true, 0, false, "1234567", ""},
		{"12,500.00", true, 0, false, "12500", ""},
		{"12,500.50", true, 0, false, "", "whole number"},
		{"1,234", false, 0, false, "", "1.234"},
		{"1,234", true, 0, false, "1234", "thousands separator"},
		{"1,234", false, '.', false, "1234", "thousands separator"},
		{"2,500", false, ',', false, "2.500", "decimal mark"},
		{"1,000", true, ',', false, "", "1000"},
		{"12,500.00", false, 0, true, "", "12500.00"},
		{"12,500.00", false, ',', false, "", "12500.00"},
		{"1.234", false, 0, false, "1.234", ""},
		{`"1.234"`, false, 0, false, "", "1234"},
		{`"42"`, true, 0, false, "42", ""},
		{"+5", false, 0, false, "5", ""},
		{".5", false, 0, false, "0.5", ""},
		{"2024.0", true, 0, false, "2024", ""},
		{"forty-two", false, 0, false, "", "digits only"},
		{"12 kg", false, 0, false, "", "digits only"},
		{"", false, 0, false, "", "empty"},
	}
	for _, tc := range cases {
		r, why, ok := numberValue(tc.text, tc.integer, tc.mark, tc.conflict)
		if ok != (tc.want != "") || r.value != tc.want {
			t.Errorf("numberValue(%q, int %v, mark %q, conflict %v) = %q ok %v (%s), want %q", tc.text, tc.integer, tc.mark, tc.conflict, r.value, ok, why, tc.want)
			continue
		}
		if got := why + r.note; !strings.Contains(got, tc.why) {
			t.Errorf("numberValue(%q) says %q, want it to mention %q", tc.text, got, tc.why)
		}
	}
}

// TestNumberSeparators runs numbers written with separators through Run
// against a server that cuts at the stop sequences it is sent, as vLLM,
// llama.cpp and OpenAI do: each turn is what the model writes, running on
// past the value. A number must come back whole and read by jsonx's rule,
// or be re-asked when it could be read two ways; "12,500.00" must never
// become 12.
func TestNumberSeparators(t *testing.T) {
	t.Parallel()
	const (
		number  = `{"type":"object","properties":{"v":{"type":"number"},"c":{"type":"string"}},"required":["v","c"]}`
		integer = `{"type":"object","properties":{"v":{"type":"integer"},"c":{"type":"string"}},"required":["v","c"]}`
		two     = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`
		list    = `{"type":"object","properties":{"xs":{"type":"array","items":{"type":"number"}}},"required":["xs"]}`
	)
	// member: the model's answer for v, then for the string c.
	member := func(vs ...string) []turn {
		var ts []turn
		for _, v := range vs {
			ts = append(ts, turn{want: `{"v":`, text: v + `, "c": "EUR"}`})
		}
		return append(ts, turn{want: `,"c":"`, text: `EUR", "note": 1}`})
	}
	cases := []struct {
		name   string
		schema string
		turns  []turn
		want   string
		feed   string // text a re-ask's instructions must hold
		repair string // a repair recorded on some attempt
	}{
		{"thousands comma, decimal point", number, member(" 12,500.00"), `{"v":12500.00,"c":"EUR"}`, "", `"12,500.00" -> 12500.00 (dropped the thousands separator ",")`},
		{"next key without a space", number, []turn{{text: ` 12,500.00,"c":"EUR"}`}, {text: `EUR"}`}}, `{"v":12500.00,"c":"EUR"}`, "", ""},
		{"line break after the comma", number, []turn{{text: " 12,500.00,\n  \"c\": \"EUR\"\n}"}, {text: `EUR"`}}, `{"v":12500.00,"c":"EUR"}`, "", ""},
		{"model runs past the stops", number, []turn{{text: ` 12,500.00, "c": "EUR"}`, overrun: true}, {text: `EUR"`}}, `{"v":12500.00,"c":"EUR"}`, "", ""},
		{"last member before the brace", `{"type":"object","properties":{"v":{"type":"number"}},"required":["v"]}`, []turn{{text: ` 12,500.00}`}}, `{"v":12500.00}`, "", ""},
		{"millions", number, member(" 1,234,567"), `{"v":1234567,"c":"EUR"}`, "", ""},
		{"spaces", number, member(" 12 500"), `{"v":12500,"c":"EUR"}`, "", ""},
		{"no-break spaces", number, member(" 12\u00a0500.50"), `{"v":12500.50,"c":"EUR"}`, "", ""},
		{"European", number, member(" 1.234,56"), `{"v":1234.56,"c":"EUR"}`, "", `"," read as the decimal mark`},
		{"decimal comma", number, member(" 12,5"), `{"v":12.5,"c":"EUR"}`, "", ""},
		{"currency sign", number, member(" $12,500.00"), `{"v":12500.00,"c":"EUR"}`, "", `dropped the currency "$"`},
		{"plain JSON with a point stays JSON", number, member(" 1.234"), `{"v":1.234,"c":"EUR"}`, "", ""},
		{"ambiguous re-asked with both readings", number, member(" 1,234", " 1234"), `{"v":1234,"c":"EUR"}`, `can be read as 1234 or as 1.234`, ""},
		{"quoted 1.234 is text, ambiguous", number, member(` "1.234"`, " 1.234"), `{"v":1.234,"c":"EUR"}`, `can be read as 1234 or as 1.234`, ""},
		{"ambiguous integer is grouping", integer, member(" 1,234"), `{"v":1234,"c":"EUR"}`, "", `"1,234" -> 1234 (`},
		{"integer with a zero fraction", integer, member(" 12,500.00"), `{"v":12500,"c":"EUR"}`, "", `"12,500.00" -> 12500 (`},
		{"integer with a fraction re-asked", integer, member(" 12,500.50", " 12500"), `{"v":12500,"c":"EUR"}`, "whole number", ""},
		{"words re-asked", number, member(" twelve thousand", " 12000"), `{"v":12000,"c":"EUR"}`, "digits only", ""},
		{"earlier number settles the convention", two, []turn{{text: ` 12,500.00, "b": 1}`}, {want: `12500.00,"b":`, text: ` 1,234}`}}, `{"a":12500.00,"b":1234}`, "", `"1,234" -> 1234 (`},
		{"European convention makes 2,500 two and a half", two, []turn{{text: ` 1.234,50, "b": 1}`}, {text: ` 2,500}`}}, `{"a":1234.50,"b":2.500}`, "", `"2,500" -> 2.500`},
		{"conflicting conventions re-asked", two, []turn{{text: ` 1.234,50, "b": 1}`}, {text: ` 12,500.00}`}, {text: ` 12500.00}`}}, `{"a":1234.50,"b":12500.00}`, `as 12500.00`, ""},
		{"optional number kept from the presence step", `{"type":"object","properties":{"tax":{"type":"number"},"c":{"type":"string"}},"required":["c"]}`,
			[]turn{{want: `{"tax":`, text: ` 1,234.50, "c": "EUR"}`}, {want: `{"tax":1234.50,"c":"`, text: `EUR"`}}, `{"tax":1234.50,"c":"EUR"}`, "", "1234.50"},
		{"number or null", `{"type":"object","properties":{"v":{"type":["number","null"]},"c":{"type":"string"}},"required":["v","c"]}`,
			member(" 12,500.00"), `{"v":12500.00,"c":"EUR"}`, "", ""},
		{"null under a number's stops", `{"type":"object","properties":{"v":{"type":["number","null"]},"c":{"type":"string"}},"required":["v","c"]}`,
			[]turn{{text: " null,\n"}, {text: `EUR"`}}, `{"v":null,"c":"EUR"}`, "", ""},
		{"list with spaces", list, []turn{{want: `{"xs":[`, text: `1`}, {want: `{"xs":[`, text: `1, 2]}`}, {want: `[1`, text: `, 2]}`}, {want: `[1,`, text: ` 2]}`}, {want: `[1,2`, text: `]}`}},
			`{"xs":[1,2]}`, "", ""},
		{"compact list of small numbers", list, []turn{{text: `1`}, {text: `1,5,7]}`}, {text: `,5,7]}`}, {want: `[1,`, text: `5,7]}`}, {text: `,7]}`}, {text: `7]}`}, {text: `]}`}},
			`{"xs":[1,5,7]}`, "", ""},
		{"list element with spaces for thousands", list, []turn{{text: `1`}, {text: `12 500, 3]`}, {text: `, 3]`}, {text: `3]`}, {text: `]`}},
			`{"xs":[12500,3]}`, "", ""},
		{"thousands in a list re-asked", list, []turn{{text: `1`}, {text: `12,500.00, 3]`}, {want: `{"xs":[`, text: `12500.00, 3]`}},
			`{"xs":[12500.00]}`, `either one number or the numbers 12, 500.00`, ""},
		{"compact three-digit list re-asked", list, []turn{{text: `1`}, {text: `100,200]`}, {text: `100, 200]`}, {text: `, 200]`}, {want: `[100,`, text: `200]`}, {text: `]`}},
			`{"xs":[100,200]}`, `either one number or the numbers 100, 200`, ""},
	}
	// The list re-ask case ends after the element: its last decision.
	cases[len(cases)-2].turns = append(cases[len(cases)-2].turns, turn{want: `[12500.00`, text: `]`})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newScripted(t, tc.turns...)
			p.stops = true
			res, err := Run(t.Context(), p, "the document", compile(t, tc.schema), testConfig())
			if err != nil {
				t.Fatalf("Run: %v (attempts %+v)", err, res.Attempts)
			}
			if string(res.Value) != tc.want {
				t.Errorf("value %s, want %s", res.Value, tc.want)
			}
			if len(p.reqs) != len(tc.turns) {
				t.Errorf("%d calls, want %d", len(p.reqs), len(tc.turns))
			}
			for i, r := range p.reqs {
				if len(r.Stop) > 4 {
					t.Errorf("call %d sends %d stop sequences; OpenAI's completion API takes at most 4", i+1, len(r.Stop))
				}
			}
			if tc.feed != "" && !slices.ContainsFunc(p.reqs, func(r llm.CompletionRequest) bool { return strings.Contains(r.Instructions, tc.feed) }) {
				t.Errorf("no re-ask says %q", tc.feed)
			}
			if tc.repair != "" {
				var all []string
				for _, a := range res.Attempts {
					for _, r := range a.Repairs {
						if r.Kind != jsonx.KindCoerceStringToNumber && r.Kind != jsonx.KindCoerceStringToInteger {
							t.Errorf("repair kind %q", r.Kind)
						}
						all = append(all, r.Detail)
					}
				}
				if !strings.Contains(strings.Join(all, "\n"), tc.repair) {
					t.Errorf("repairs %q lack %q", all, tc.repair)
				}
			}
		})
	}
}
