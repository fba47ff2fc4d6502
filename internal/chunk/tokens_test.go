package chunk

import (
	"math"
	"testing"
)

// The estimate times Margin must cover what the real BPE tokenizers count.
// The reference counts were measured with github.com/tiktoken-go/tokenizer
// v0.10.0 (cl100k_base and o200k_base); the larger calibration set is
// described at Tokens.
func TestTokensCoverBPE(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text          string
		cl100k, o200k int
	}{
		{"The supplier agrees to deliver the goods according to the schedule and terms of this agreement.", 17, 17},
		{"func (m *merger) mergeArrays(node map[string]any, ptr, shape string, parts []Part) any {", 26, 26},
		{"2026-03-14,48213377,-1234.56,\"981,223.10\",TX448812", 25, 25},
		{"本协议由供应商与采购方于二零二六年签订。供应商同意按照约定的交货时间表交付货物。", 45, 34},
		{"本契約は、売主と買主との間で二〇二六年に締結された。", 34, 23},
		{"본 계약은 공급자와 구매자 간에 2026년에 체결되었다.", 32, 19},
		{"Поставщик обязуется поставить товар в соответствии с согласованным графиком.", 33, 16},
		{"9f1c2e4a-77b3-4d0e-a1f2-3c5b6d7e8f90 kq8ZxQmFzZTY0IGlkIGhlcmU= sha=3fa9c01b2e", 62, 62},
		{"pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism", 23, 21},
		{"Die Zahlung erfolgt innerhalb von dreißig Tagen nach Erhalt der Rechnung.", 21, 15},
	}
	for _, tt := range tests {
		got := int(math.Ceil(float64(Tokens("openai", tt.text)) * Margin))
		if got < tt.cl100k || got < tt.o200k {
			t.Errorf("%q: estimate with margin %d, cl100k %d, o200k %d", tt.text, got, tt.cl100k, tt.o200k)
		}
		// Not wildly high either: chunks would be needlessly small.
		if got > 3*tt.cl100k {
			t.Errorf("%q: estimate with margin %d is over 3× cl100k's %d", tt.text, got, tt.cl100k)
		}
	}
}
