package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReadHumanNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in         string
		ok         bool
		dec, group string // readings with an ambiguous separator as decimal mark / as grouping
		convention byte
	}{
		{"42", true, "42", "42", 0},
		{"-3.5", true, "-3.5", "-3.5", '.'},
		{"$1,234.50", true, "1234.50", "1234.50", '.'},
		{"1.234,50 €", true, "1234.50", "1234.50", ','},
		{"1 234,50", true, "1234.50", "1234.50", ','},
		{"EUR 12", true, "12", "12", 0},
		{"12EUR", true, "12", "12", 0},
		{"1'000", true, "1000", "1000", 0},
		{"1,234,567", true, "1234567", "1234567", '.'},
		{"1.234.567", true, "1234567", "1234567", ','},
		{"1,23,456", true, "123456", "123456", '.'},
		{"1,234", true, "1.234", "1234", 0},
		{"0,123", true, "0.123", "0.123", ','},
		{"12.5%", true, "12.5", "12.5", '.'},
		{"+7", true, "7", "7", 0},
		{"", false, "", "", 0},
		{"12 kg", false, "", "", 0},
		{"1,2,3", false, "", "", 0},
		{"1.234,567.8", false, "", "", 0},
		{"1,,2", false, "", "", 0},
		{"007", false, "", "", 0},
		{"2024-01-05", false, "", "", 0},
		{"1,2345", true, "1.2345", "1.2345", ','},
		{"12,345,67", false, "", "", 0},
		{"$12%", false, "", "", 0},
		{"$12 EUR", false, "", "", 0},
		{".5", false, "", "", 0},
	}
	for _, tt := range tests {
		h, ok := readHumanNumber(tt.in)
		if ok != tt.ok {
			t.Errorf("readHumanNumber(%q) ok = %v, want %v (%+v)", tt.in, ok, tt.ok, h)
			continue
		}
		if !ok {
			continue
		}
		if got := h.reading(true); got != tt.dec {
			t.Errorf("readHumanNumber(%q) decimal reading %s, want %s", tt.in, got, tt.dec)
		}
		if got := h.reading(false); got != tt.group {
			t.Errorf("readHumanNumber(%q) grouping reading %s, want %s", tt.in, got, tt.group)
		}
		if got := h.convention(); got != tt.convention {
			t.Errorf("readHumanNumber(%q) convention %q, want %q", tt.in, got, tt.convention)
		}
		if !json.Valid([]byte(h.reading(true))) {
			t.Errorf("readHumanNumber(%q) reads as invalid JSON %s", tt.in, h.reading(true))
		}
	}
}

func TestNumberHint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want []string // fragments the hint must contain
	}{
		{`"1,234.50"`, []string{`"1,234.50"`, "1234.50", "plain JSON number", `"." as the decimal mark`, "thousands separators", "currency"}},
		{`"1.234,56 €"`, []string{"1234.56", "plain JSON number"}},
		{`"1,234"`, []string{"1234", "1.234", "plain JSON number"}},
		{`"12.5%"`, []string{"percent", "12.5"}},
		{`"about twelve"`, []string{`"about twelve"`, "plain JSON number", "no quotes"}},
		{"12,50", []string{"12.50"}},
	}
	for _, tt := range tests {
		got := NumberHint(tt.raw)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("NumberHint(%s) = %q, missing %q", tt.raw, got, w)
			}
		}
		if len(got) > 240 {
			t.Errorf("NumberHint(%s) is %d bytes: too long for feedback", tt.raw, len(got))
		}
	}
}

func TestReadNumberExported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in         string
		integer    bool
		convention byte
		conflict   bool
		want       string // "" when it is not read
	}{
		{"12,500.00", false, 0, false, "12500.00"},
		{"1.234,56", false, 0, false, "1234.56"},
		{"12 500", true, 0, false, "12500"},
		{"1,234", false, 0, false, ""},
		{"1,234", true, 0, false, "1234"},
		{"1,234", false, '.', false, "1234"},
		{"1,234", false, ',', false, "1.234"},
		{"12,500.00", false, 0, true, ""},
		{"42", true, 0, true, "42"},
		{"twelve", false, 0, false, ""},
	}
	for _, tt := range tests {
		got, _, ok := ReadNumber(tt.in, tt.integer, tt.convention, tt.conflict)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("ReadNumber(%q, %v, %q, %v) = %q %v, want %q", tt.in, tt.integer, tt.convention, tt.conflict, got, ok, tt.want)
		}
	}
	if f, ok := ReadNumberForm("1.234,56"); !ok || f.Mark != ',' || f.Group != '.' || f.Convention != ',' || f.Ambiguous != 0 {
		t.Errorf("ReadNumberForm(1.234,56) = %+v %v", f, ok)
	}
	if f, ok := ReadNumberForm("1,234"); !ok || f.Ambiguous != ',' || f.Convention != 0 {
		t.Errorf("ReadNumberForm(1,234) = %+v %v", f, ok)
	}
}
