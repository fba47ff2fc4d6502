package chunk

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	para := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)
	tests := []struct {
		name          string
		doc           string
		size, overlap int
		wantOne       bool
	}{
		{"fits whole", "short text here", 100, 10, true},
		{"paragraphs", strings.Repeat("# Heading\n\n"+para+"\n\n", 10), 200, 20, false},
		{"one long line", strings.Repeat("wordy ", 2000), 150, 15, false},
		{"unicode", strings.Repeat("Größe naïve café 東京 ", 300), 120, 12, false},
		{"no overlap", strings.Repeat(para+"\n", 5), 100, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := Split("openai", tt.doc, tt.size, tt.overlap)
			if tt.wantOne != (len(cs) == 1) {
				t.Fatalf("got %d chunks, want one: %v", len(cs), tt.wantOne)
			}
			if cs[0].ByteStart != 0 || cs[len(cs)-1].ByteEnd != len(tt.doc) {
				t.Fatalf("chunks do not cover the document: %d..%d of %d", cs[0].ByteStart, cs[len(cs)-1].ByteEnd, len(tt.doc))
			}
			runes := []rune(tt.doc)
			for i, c := range cs {
				if got := string(runes[c.Start:c.End]); got != c.Text {
					t.Fatalf("chunk %d: character offsets [%d,%d) do not give its text", i, c.Start, c.End)
				}
				if tt.doc[c.ByteStart:c.ByteEnd] != c.Text {
					t.Fatalf("chunk %d: byte offsets wrong", i)
				}
				if n := Tokens("openai", c.Text); n > tt.size+5 {
					t.Errorf("chunk %d has %d tokens, target %d", i, n, tt.size)
				}
				// Never inside a word: a cut sits next to a space (or the ends).
				if c.ByteEnd < len(tt.doc) && !isSpaceAt(tt.doc, c.ByteEnd-1) && !isSpaceAt(tt.doc, c.ByteEnd) {
					t.Errorf("chunk %d ends inside a word: %q|%q", i, tt.doc[max(0, c.ByteEnd-8):c.ByteEnd], tt.doc[c.ByteEnd:min(len(tt.doc), c.ByteEnd+8)])
				}
				if c.ByteStart > 0 && !isSpaceAt(tt.doc, c.ByteStart-1) && !isSpaceAt(tt.doc, c.ByteStart) {
					t.Errorf("chunk %d starts inside a word", i)
				}
				if !utf8.ValidString(c.Text) {
					t.Errorf("chunk %d is not valid UTF-8", i)
				}
				if i > 0 {
					prev := cs[i-1]
					if c.ByteStart > prev.ByteEnd {
						t.Errorf("gap between chunks %d and %d", i-1, i)
					}
					if tt.overlap > 0 && c.ByteStart >= prev.ByteEnd {
						t.Errorf("chunks %d and %d do not overlap", i-1, i)
					}
					if tt.overlap == 0 && c.ByteStart != prev.ByteEnd {
						t.Errorf("chunks %d and %d overlap without overlap asked", i-1, i)
					}
				}
			}
		})
	}
}

func TestSplitPrefersParagraphs(t *testing.T) {
	t.Parallel()
	doc := strings.Repeat("Alpha beta gamma delta epsilon. ", 30) + "\n\n" + strings.Repeat("Zeta eta theta iota kappa. ", 30)
	cs := Split("openai", doc, Tokens("openai", doc)*3/4, 0)
	if len(cs) < 2 || !strings.HasSuffix(cs[0].Text, "\n\n") {
		t.Fatalf("first chunk should end at the blank line, got %d chunks ending %q", len(cs), cs[0].Text[max(0, len(cs[0].Text)-10):])
	}
}

func dec(t *testing.T, s string) any {
	t.Helper()
	v, err := decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMerge(t *testing.T) {
	t.Parallel()
	root := map[string]any{}
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"total":{"type":"number"},"items":{"type":"array","items":{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}}},"tags":{"type":"array","items":{"type":"string"}}}}`), &root)
	tests := []struct {
		name      string
		parts     []string
		keys      map[string]string
		want      string
		conflicts []string
	}{
		{"concat and overlap dedupe", []string{`{"items":[{"sku":"A","qty":1},{"sku":"B","qty":2}]}`, `{"items":[{"sku":"b ","qty":2.0},{"sku":"C","qty":3}]}`},
			nil, `{"items":[{"qty":1,"sku":"A"},{"qty":2,"sku":"B"},{"qty":3,"sku":"C"}]}`, nil},
		{"agreeing scalars", []string{`{"total":12.5}`, `{"total":12.50}`, `{}`}, nil, `{"total":12.5}`, nil},
		{"conflicting scalars", []string{`{"total":12.5}`, `{"total":13}`}, nil, `{"total":12.5}`, []string{"/total"}},
		{"merge key unifies items", []string{`{"items":[{"sku":"A","qty":1}]}`, `{"items":[{"sku":"a"}]}`}, map[string]string{"/items": "sku"},
			`{"items":[{"qty":1,"sku":"A"}]}`, nil},
		{"merge key conflict inside item", []string{`{"items":[{"sku":"A","qty":1}]}`, `{"items":[{"sku":"A","qty":4}]}`}, map[string]string{"/items": "sku"},
			`{"items":[{"qty":1,"sku":"A"}]}`, []string{"/items/0/qty"}},
		{"scalar arrays union", []string{`{"tags":["x","Y"]}`, `{"tags":["y","z"]}`}, nil, `{"tags":["x","Y","z"]}`, nil},
		{"nulls are absent", []string{`{"total":null}`, `{"total":3}`}, nil, `{"total":3}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var parts []Part
			for i, p := range tt.parts {
				parts = append(parts, Part{Chunk: i, Value: dec(t, p)})
			}
			m := Merge(root, parts, tt.keys)
			got, _ := json.Marshal(m.Value)
			if norm(dec(t, string(got))) != norm(dec(t, tt.want)) || string(got) != mustCanon(t, tt.want) {
				t.Errorf("merged %s, want %s", got, tt.want)
			}
			var ptrs []string
			for _, c := range m.Conflicts {
				ptrs = append(ptrs, c.Pointer)
				if len(c.Candidates) < 2 {
					t.Errorf("conflict %s with %d candidates", c.Pointer, len(c.Candidates))
				}
			}
			if strings.Join(ptrs, ",") != strings.Join(tt.conflicts, ",") {
				t.Errorf("conflicts %v, want %v", ptrs, tt.conflicts)
			}
		})
	}
}

func mustCanon(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(dec(t, s))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGround(t *testing.T) {
	t.Parallel()
	doc := "Invoice  NUMBER INV-7\nItem: sku=AB-12; description=Hex  Bolts; qty=4; price=1,234.50\nItem: sku=CD-9; qty=4; price=7\nTotal: €1,241.50 — café"
	tests := []struct {
		name  string
		value string
		want  map[string]string // pointer → text at the source offsets ("" = ungrounded)
		match map[string]string
	}{
		{"exact string", `{"s":"INV-7"}`, map[string]string{"/s": "INV-7"}, map[string]string{"/s": MatchExact}},
		{"case and whitespace", `{"s":"invoice number"}`, map[string]string{"/s": "Invoice  NUMBER"}, map[string]string{"/s": MatchNormalized}},
		{"number format", `{"n":1234.5}`, map[string]string{"/n": "1,234.50"}, map[string]string{"/n": MatchNormalized}},
		{"number not inside a code", `{"n":12}`, map[string]string{"/n": ""}, nil},
		{"quantity on its item's line", `{"items":[{"sku":"AB-12","qty":4},{"sku":"CD-9","qty":4}]}`,
			map[string]string{"/items/0/sku": "AB-12", "/items/1/sku": "CD-9", "/items/0/qty": "4", "/items/1/qty": "4"}, nil},
		{"non-ASCII offsets are characters", `{"s":"café"}`, map[string]string{"/s": "café"}, nil},
		{"invented value", `{"s":"Globex"}`, map[string]string{"/s": ""}, nil},
	}
	runes := []rune(doc)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := Ground(doc, dec(t, tt.value), nil, nil)
			for ptr, want := range tt.want {
				src, ok := g.Sources[ptr]
				if want == "" {
					if ok {
						t.Errorf("%s grounded at %v, want ungrounded", ptr, src)
					}
					continue
				}
				if !ok {
					t.Fatalf("%s not grounded; ungrounded %v", ptr, g.Ungrounded)
				}
				if got := string(runes[src.Start:src.End]); got != want {
					t.Errorf("%s points at %q, want %q", ptr, got, want)
				}
				if m := tt.match[ptr]; m != "" && src.Match != m {
					t.Errorf("%s match %s, want %s", ptr, src.Match, m)
				}
			}
		})
	}
	// The second item's quantity must be on the second item's line.
	g := Ground(doc, dec(t, `{"items":[{"sku":"AB-12","qty":4},{"sku":"CD-9","qty":4}]}`), nil, nil)
	if a, b := g.Sources["/items/0/qty"], g.Sources["/items/1/qty"]; a.Start == b.Start {
		t.Errorf("both quantities point at the same text %v", a)
	}
	// Two items share a description: each is grounded on its own line,
	// found through the fields the line also states.
	doc2 := "Item: sku=A-1; description=hex bolts kit; quantity=3\nfiller\nItem: sku=B-2; description=hex bolts kit; quantity=7\n"
	g = Ground(doc2, dec(t, `{"items":[{"description":"hex bolts kit","sku":"B-2","quantity":7}]}`), nil, nil)
	line2 := strings.Index(doc2, "Item: sku=B-2")
	for _, p := range []string{"/items/0/description", "/items/0/sku", "/items/0/quantity"} {
		if src := g.Sources[p]; src.Start < line2 {
			t.Errorf("%s grounded at %v, before its item's line at %d", p, src, line2)
		}
	}
}

func TestResolutionPromptIsReadable(t *testing.T) {
	t.Parallel()
	doc := "Net amount: 120.00 for the goods.\n\nLater the net amount is stated as 130.00 instead.\n"
	chunks := []Chunk{
		{Index: 0, Start: 0, End: 35, ByteStart: 0, ByteEnd: 35, Text: doc[:35]},
		{Index: 1, Start: 35, End: len(doc), ByteStart: 35, ByteEnd: len(doc), Text: doc[35:]},
	}
	root := map[string]any{"type": "object", "properties": map[string]any{
		"Totals": map[string]any{"type": "object", "properties": map[string]any{"net amount": map[string]any{"type": "number"}}},
	}}
	m := &Merged{Conflicts: []Conflict{{Pointer: "/Totals/net amount", Candidates: []Candidate{
		{Value: json.Number("120.00"), Chunks: []int{0}},
		{Value: json.Number("130.00"), Chunks: []int{1}},
	}}}}
	prompt, rs, names := resolution(doc, chunks, m, root)
	if len(names) != 1 || names[0] != "totals_net_amount" {
		t.Fatalf("field names %v, want [totals_net_amount]", names)
	}
	for _, want := range []string{
		"totals_net_amount: 120.00\n", "totals_net_amount: 130.00\n",
		"/Totals/net amount", "Net amount: 120.00", "stated as 130.00",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if rs == nil {
		t.Fatal("no resolution schema")
	}
	if vs, _ := rs.ValidateJSON([]byte(`{"totals_net_amount":"x"}`)); len(vs) == 0 {
		t.Error("the resolution field does not keep the original field's type")
	}
}

func TestFieldName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/total": "total", "/Totals/net amount": "totals_net_amount", "/items/3/unit_price": "items_3_unit_price",
		"/a~1b": "a_b", "": "value", "/3": "value_3", "/—/x": "x",
	} {
		if got := fieldName(in); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", in, got, want)
		}
	}
}
