package chunk

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200)
	tests := []struct {
		name, doc, value string
		want             string
	}{
		{"a short line whole", "Invoice\nTotal due: 12.50 EUR\nThanks", "12.50", "Total due: 12.50 EUR"},
		{"context cut at words", "We thank you for your order of the goods listed below. Total due: 12.50 EUR payable within thirty days of the date of this invoice, by bank transfer.",
			"12.50", "…listed below. Total due: 12.50 EUR payable within thirty…"},
		{"white space runs become one space", "Total\t\tdue:    12.50\r\nnext", "12.50", "Total due: 12.50"},
		{"a long value keeps its ends", "v: " + long + "y", long + "y", "v: " + strings.Repeat("x", 40) + " … " + strings.Repeat("x", 39) + "y"},
		{"multi-byte characters", "Prix: 12,50 € TTC — payé", "12,50 €", "Prix: 12,50 € TTC — payé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			i := strings.Index(tt.doc, tt.value)
			if got := Snippet(tt.doc, i, i+len(tt.value)); got != tt.want {
				t.Errorf("Snippet = %q, want %q", got, tt.want)
			}
		})
	}
	if got := Snippet("abc def", 9, 5); got != "abc def" {
		t.Errorf("a range outside the text: %q, want the text's end with its context", got)
	}
}
