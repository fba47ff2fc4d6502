package chunk

import (
	"strings"
	"testing"

	"github.com/extractq/extractq/llm"
)

// wholeCases are texts of every class Tokens prices differently: letters
// in runs short and long, mixed case, digits, symbols, line ends, spaces,
// Hangul, Han, kana, other non-ASCII and invalid UTF-8.
var wholeCases = []string{
	"", "a", "a1", "A1b2C3", "1", "12345678901", "!", "\n\r\n", "   \t ", "hello world",
	"Invoice INV-2024-001: total 1,234.56 EUR\n", strings.Repeat("x", 13), "aBcDeFgHiJ",
	"dGhpcyBpcyBiYXNlNjQ=", "한국어 텍스트", "日本語のテキスト", "カタカナ", "Привет, мир",
	"\xff\xfe\xfd", "a\xffb", "é", "{\"a\":[1,2,3],\"b\":null}", strings.Repeat("Ab1;", 100),
}

// TestTokensAtMostBytes checks what Whole relies on: the estimate never
// exceeds the text's length in bytes.
func TestTokensAtMostBytes(t *testing.T) {
	t.Parallel()
	for _, s := range wholeCases {
		if n := Tokens("openai", s); n > len(s) {
			t.Errorf("Tokens(%q) = %d > %d bytes", s, n, len(s))
		}
	}
}

func FuzzTokensAtMostBytes(f *testing.F) {
	for _, s := range wholeCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := Tokens("openai", s); n > len(s) {
			t.Fatalf("Tokens(%q) = %d > %d bytes", s, n, len(s))
		}
	})
}

// TestWholeAgreesWithPlan checks the fast path against Plan: whenever
// Whole says a document goes whole, Plan with any overhead up to the
// bound says so too; and Whole does say so for small documents, or the
// fast path would be dead.
func TestWholeAgreesWithPlan(t *testing.T) {
	t.Parallel()
	capsList := []llm.Capabilities{
		{}, {ContextWindow: 1000}, {ContextWindow: 1000, MaxOutput: 100}, {ContextWindow: 128000, MaxOutput: 16384},
		{ContextWindow: 500, MaxOutput: 1000},
	}
	cfgs := []Config{{}, {Size: 10}, {Size: 200}, {Size: 5000}}
	docs := append(slicesRepeat(wholeCases), strings.Repeat("word ", 300), strings.Repeat("한", 700))
	fastHits := 0
	for _, caps := range capsList {
		for _, cfg := range cfgs {
			for _, doc := range docs {
				for _, maxOver := range []int{0, 100, 400, 900} {
					if !Whole(caps, len(doc), maxOver, cfg) {
						continue
					}
					fastHits++
					for _, over := range []int{0, maxOver / 2, maxOver} {
						if got := Plan(caps, "openai:gpt-4o", doc, over, cfg); got != 0 {
							t.Errorf("Whole(%+v, %d bytes, %d, %+v) but Plan with overhead %d = %d", caps, len(doc), maxOver, cfg, over, got)
						}
					}
				}
			}
		}
	}
	if fastHits == 0 {
		t.Fatal("Whole never took the fast path")
	}
	if Whole(llm.Capabilities{ContextWindow: 1000}, 5000, 0, Config{}) {
		t.Error("Whole says 5000 bytes fit a window of 1000 tokens")
	}
}

func FuzzWholeAgreesWithPlan(f *testing.F) {
	for _, s := range wholeCases {
		f.Add(s, 1000, 100, 0, 400)
	}
	f.Fuzz(func(t *testing.T, doc string, window, maxOut, size, over int) {
		if over < 0 || over > 1<<20 || window > 1<<24 || size > 1<<24 {
			return
		}
		caps, cfg := llm.Capabilities{ContextWindow: window, MaxOutput: maxOut}, Config{Size: size}
		if Whole(caps, len(doc), over, cfg) && Plan(caps, "openai", doc, over, cfg) != 0 {
			t.Fatalf("Whole but Plan = %d", Plan(caps, "openai", doc, over, cfg))
		}
	})
}

// slicesRepeat returns cases and each case ten times over.
func slicesRepeat(cases []string) []string {
	out := append([]string(nil), cases...)
	for _, s := range cases {
		out = append(out, strings.Repeat(s, 10))
	}
	return out
}
