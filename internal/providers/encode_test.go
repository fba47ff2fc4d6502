package providers

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/extractq/extractq/llm"
)

// oddStrings are texts whose JSON escaping differs between encoders:
// control characters, quotes and backslashes, HTML characters (left as
// they are), invalid UTF-8, U+2028/U+2029, surrogate code points encoded
// in UTF-8 (invalid), non-characters, astral runes and a BOM.
var oddStrings = []string{
	"",
	"plain",
	"quote \" backslash \\ slash /",
	"<document-00112233>a & b</document-00112233>",
	"\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f",
	"line\u2028sep\u2029para",
	"bad \xff\xfe utf8 \xc3",
	"\xed\xa0\x80 surrogate half",
	"\uFFFD replacement \uFFFE \uFFFF non-characters",
	"emoji 😀 astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
	"\ufeffBOM",
	"ünïcödé — “quotes” ‘single’ …",
	"tab\tin\tthe\tmiddle and trailing \\",
	"\u0085 NEL and \u00a0 nbsp",
}

// TestAppendJSONMatchesMarshal checks that the chat completions body
// written by appendJSON is byte for byte what marshal (encoding/json)
// writes, for every field combination buildRequest makes and for odd
// strings in every string field.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	temp := func(f float64) *float64 { return &f }
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","description":"ü \u003c"}},"required":["a"],"additionalProperties":false}`)
	spaced := json.RawMessage("{ \"type\" : \"object\",\n \"properties\": {} }")
	choice := &oaiToolChoice{Type: "function"}
	choice.Function.Name = "invoice"
	var reqs []*oaiRequest
	for _, s := range oddStrings {
		reqs = append(reqs,
			&oaiRequest{Model: s, Messages: []wireMessage{{Role: llm.RoleSystem, Content: s}, {Role: llm.RoleUser, Content: "doc: " + s}}},
			&oaiRequest{Model: "m", Messages: []wireMessage{{Role: llm.Role(s), Content: s}}, Stop: []string{s, "\n\n"}, Temperature: temp(0),
				ResponseFormat: &oaiResponseFormat{Type: "json_schema", JSONSchema: &oaiJSONSchema{Name: s, Schema: schema, Strict: true}}},
			&oaiRequest{Model: "m", Messages: []wireMessage{{Role: llm.RoleUser, Content: s}}, MaxCompletionTokens: 100,
				Tools: []oaiTool{{Type: "function", Function: oaiFunction{Name: s, Parameters: schema, Strict: true}}}, ToolChoice: choice},
		)
	}
	for _, f := range []float64{0, 0.2, 1, 1.5, 2, -0.7, 1e-7, 1e21, 123456789.125, math.SmallestNonzeroFloat64, math.MaxFloat64, math.Copysign(0, -1)} {
		reqs = append(reqs, &oaiRequest{Model: "m", Messages: []wireMessage{}, Temperature: temp(f), MaxTokens: 4096})
	}
	reqs = append(reqs,
		&oaiRequest{},
		&oaiRequest{Model: "m", ResponseFormat: &oaiResponseFormat{Type: "json_object"}, Stream: true},
		&oaiRequest{Model: "m", Tools: []oaiTool{{Type: "function", Function: oaiFunction{Name: "f", Parameters: spaced}}}, ToolChoice: "auto"},
		&oaiRequest{Model: "m", Tools: []oaiTool{{Type: "function", Function: oaiFunction{Name: "f"}}}, ToolChoice: ""},
		&oaiRequest{Model: "m", ResponseFormat: &oaiResponseFormat{Type: "json_schema", JSONSchema: &oaiJSONSchema{Name: "n", Schema: spaced}}},
		&oaiRequest{Model: "m", Stop: []string{}, MaxTokens: -1, MaxCompletionTokens: math.MaxInt},
	)
	for i, r := range reqs {
		want, err := marshal(r)
		if err != nil {
			t.Fatalf("%d: marshal: %v", i, err)
		}
		for round := 0; round < 2; round++ { // the second round copies the known-compact schema
			got, ok := r.appendJSON(nil)
			if !ok {
				t.Fatalf("%d: appendJSON refused %s", i, want)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d, round %d:\n got %s\nwant %s", i, round, got, want)
			}
		}
	}
}

// TestAppendJSONLeavesUnusualToMarshal checks that what appendJSON does not
// write (parts, a non-finite temperature, a schema encoding/json refuses
// or a tool choice of another type) goes to marshal, whose bytes or error
// stand.
func TestAppendJSONLeavesUnusualToMarshal(t *testing.T) {
	nan := math.NaN()
	text := "look"
	for i, r := range []*oaiRequest{
		{Model: "m", Messages: []wireMessage{{Role: llm.RoleUser, Content: []any{oaiPart{Type: "text", Text: &text}}}}},
		{Model: "m", Temperature: &nan},
		{Model: "m", ResponseFormat: &oaiResponseFormat{Type: "json_schema", JSONSchema: &oaiJSONSchema{Name: "n", Schema: json.RawMessage(`{"a":`)}}},
		{Model: "m", ResponseFormat: &oaiResponseFormat{Type: "json_schema", JSONSchema: &oaiJSONSchema{Name: "n", Schema: json.RawMessage{}}}},
		{Model: "m", ToolChoice: map[string]any{"type": "none"}},
		{Model: "m", ToolChoice: (*oaiToolChoice)(nil)},
	} {
		if got, ok := r.appendJSON(nil); ok {
			t.Errorf("%d: appendJSON wrote %s; it should leave this to marshal", i, got)
		}
		want, wantErr := marshal(r)
		got, err := encodeBody(r)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Errorf("%d: encodeBody = %s, %v; marshal = %s, %v", i, got, err, want, wantErr)
		}
	}
}

// FuzzAppendJSONFloat checks appendJSONFloat against encoding/json.
func FuzzAppendJSONFloat(f *testing.F) {
	for _, v := range []float64{0, 0.7, 1e-6, 1e-7, 1e20, 1e21, -3.25e-9} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		want, err := json.Marshal(v)
		got, ok := appendJSONFloat(nil, v)
		if (err == nil) != ok || (ok && !bytes.Equal(got, want)) {
			t.Fatalf("appendJSONFloat(%v) = %s, %v; encoding/json %s, %v", v, got, ok, want, err)
		}
	})
}

// BenchmarkEncodeRequest encodes a strict-mode chat completions body of
// the fleet's shape: by appendJSON (encodeBody) and by encoding/json.
func BenchmarkEncodeRequest(b *testing.B) {
	temp := 0.0
	schema := json.RawMessage(`{"type":"object","properties":{"invoice_number":{"type":"string"},"vendor":{"type":"string"},"total":{"type":"number"},"currency":{"type":"string","enum":["EUR","USD","GBP"]},"paid":{"type":"boolean"},"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"qty":{"type":"integer"}},"required":["name","qty"],"additionalProperties":false}}},"required":["invoice_number","vendor","total","currency","paid","items"],"additionalProperties":false}`)
	r := &oaiRequest{Model: "sim-fleet", Temperature: &temp, MaxTokens: 2048,
		Messages: []wireMessage{
			{Role: llm.RoleSystem, Content: "Extract the data described by the JSON Schema from the document. Answer with one JSON value only."},
			{Role: llm.RoleUser, Content: "<document-4f1c2a9e>INVOICE INV-000042\nFrom: Vendor 42 GmbH\nItems: 3 x widget, 0 x gadget\nTotal due: 52.42 EUR\nStatus: paid\n</document-4f1c2a9e>"},
		},
		ResponseFormat: &oaiResponseFormat{Type: "json_schema", JSONSchema: &oaiJSONSchema{Name: "invoice", Schema: schema, Strict: true}}}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeBody(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
