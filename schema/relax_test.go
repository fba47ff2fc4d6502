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
	"items":{"type":"array","minItems":1,"items":{"type":"object","required":["sku"],"properties":{"sku":{"type":"string","pattern":"^[A-Z]"}}}}}}`
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
		{`{}`, false, true},
		{`{"items":[]}`, false, true},
		{`{"items":[{}]}`, false, true},
		{`{"total":3,"items":[{"sku":"A"}]}`, true, true},
		{`{"total":-1}`, false, false},                // bounds on values stay
		{`{"items":[{"sku":"lower"}]}`, false, false}, // patterns stay
		{`{"required":"x"}`, false, true},             // a property named required stays
		{`{"required":3}`, false, false},
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
