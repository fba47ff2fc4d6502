package termsafe

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, str, text string
	}{
		{"plain", "invoices/2024-117.pdf", "invoices/2024-117.pdf", "invoices/2024-117.pdf"},
		{"unicode kept", "größe – 日本語 ✓", "größe – 日本語 ✓", "größe – 日本語 ✓"},
		{"clear screen", "doc\x1b[2J\x1b[Hx", `doc\x1b[2J\x1b[Hx`, `doc\x1b[2J\x1b[Hx`},
		{"window title (OSC)", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"carriage return overwrite", "ok\rFAILED", `ok\rFAILED`, `ok\rFAILED`},
		{"lines and tabs", "a\n\tb", `a\n\tb`, "a\n\tb"},
		{"NUL, BS, DEL", "a\x00b\x08c\x7f", `a\x00b\x08c\u007f`, `a\x00b\x08c\u007f`},
		{"C1 CSI", "a\u009b31mred", `a\u009b31mred`, `a\u009b31mred`},
		{"bidi override", "invoice\u202efdp.exe", `invoice\u202efdp.exe`, `invoice\u202efdp.exe`},
		{"invalid UTF-8", "bad\xff\xfe", `bad\xff\xfe`, `bad\xff\xfe`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := String(tt.in); got != tt.str {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.str)
			}
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
			for _, out := range []string{String(tt.in), Text(tt.in)} {
				if strings.ContainsAny(out, "\x1b\r\x00\x07\x08\x7f\u009b\u202e") {
					t.Errorf("%q still holds a control character", out)
				}
			}
		})
	}
}

func BenchmarkStringClean(b *testing.B) {
	s := strings.Repeat("INVOICE INV-000117 total 1,234.00 EUR ", 20)
	for b.Loop() {
		_ = String(s)
	}
}
