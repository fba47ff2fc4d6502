package schema

import (
	"strings"
	"testing"
)

func TestRelaxed(t *testing.T) {
	t.Parallel()
	src := `{"type":"object","required":["total","items"],"properties":{
	"total":{"type":"number","minimum":0},
	"required":{"type":"string"},
	"items":{"type":"array","minItems":1,"items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string","pattern":"^[A-Z]"},
		"dims":{"type":"object","required":["w"],"properties":{"w":{"type":"number"}}}}}}}}`
	s, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Relaxed()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value         string
		orig, relaxed bool
	}{
		{`{"total":null,"items":null}`, false, true}, // a part states each required field, null if it lacks it
		{`{"total":null,"items":[]}`, false, true},   // an array may be empty in a part
		{`{}`, false, false},                         // a dropped required array is re-asked, not read as "not here"
		{`{"items":null}`, false, true},              // a nullable field left out is null (servers drop null keys)
		{`{"items":[{"sku":"A"}]}`, false, true},
		{`{"total":3}`, false, false},
		{`{"total":null,"items":[{}]}`, false, false}, // an item keeps its required fields
		{`{"total":null,"items":[{"sku":"A"}]}`, false, true},
		{`{"total":null,"items":[{"sku":"A","dims":{}}]}`, false, false}, // and so do objects inside items
		{`{"total":null,"items":[{"sku":"A","dims":{"w":1}}]}`, false, true},
		{`{"total":3,"items":[{"sku":"A"}]}`, true, true},
		{`{"total":-1,"items":null}`, false, false},                 // bounds on values stay
		{`{"total":null,"items":[{"sku":"lower"}]}`, false, false},  // patterns stay
		{`{"total":null,"items":null,"required":"x"}`, false, true}, // a property named required stays
		{`{"total":null,"items":null,"required":3}`, false, false},
	}
	for _, tt := range tests {
		vo, _ := s.ValidateJSON([]byte(tt.value))
		vr, _ := r.ValidateJSON([]byte(tt.value))
		if (len(vo) == 0) != tt.orig || (len(vr) == 0) != tt.relaxed {
			t.Errorf("%s: valid against original %v (want %v), relaxed %v (want %v)", tt.value, len(vo) == 0, tt.orig, len(vr) == 0, tt.relaxed)
		}
	}
	if !strings.Contains(string(r.JSON()), `"properties":{"total"`) {
		t.Errorf("relaxed schema lost the field order: %s", r.JSON())
	}
}

// An item schema reached through $ref keeps its required fields even when
// the document level reaches the same definition; a definition used only
// at the document level is relaxed.
func TestRelaxedKeepsReferencedItems(t *testing.T) {
	t.Parallel()
	src := `{"type":"object","required":["party","lines"],"$defs":{
	"line":{"type":"object","required":["sku","qty"],"properties":{"sku":{"type":"string"},"qty":{"type":"integer"}}},
	"party":{"type":"object","required":["name","vat"],"properties":{"name":{"type":"string"},"vat":{"type":"string"}}}},
	"properties":{"party":{"$ref":"#/$defs/party"},"lines":{"type":"array","minItems":2,"items":{"$ref":"#/$defs/line"}}}}`
	s, err := Compile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Relaxed()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		value string
		valid bool
	}{
		{`{"party":null,"lines":null}`, true},
		{`{}`, false},
		{`{"party":{"name":"Acme","vat":null},"lines":[]}`, true},
		{`{"party":{"name":"Acme"},"lines":[]}`, true}, // vat left out: null, as servers drop null keys
		{`{"party":null,"lines":[{"sku":"A","qty":1}]}`, true},
		{`{"party":null,"lines":[{"sku":"A"}]}`, false},
		{`{"party":null,"lines":[{"qty":1}]}`, false},
	}
	for _, tt := range tests {
		vs, err := r.ValidateJSON([]byte(tt.value))
		if err != nil {
			t.Fatal(err)
		}
		if (len(vs) == 0) != tt.valid {
			t.Errorf("%s: valid against relaxed %v, want %v (%v)", tt.value, len(vs) == 0, tt.valid, vs)
		}
	}
}
