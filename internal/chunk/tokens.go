// Package chunk extracts from documents longer than a model's context
// window: it counts tokens, splits the document at structure with overlap,
// extracts each part with a relaxed schema through the caller's extractor,
// merges the answers into one value valid against the original schema, and
// grounds every extracted string and number in the document text.
//
// The root package's Extractor calls Run when chunking applies; the
// extraction of each chunk is the ordinary validate-and-reask loop.
package chunk

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens estimates how many tokens text costs a model of the given provider
// family. It is an estimate, not a tokenizer: the Go BPE tokenizer with
// embedded vocabularies (github.com/tiktoken-go/tokenizer) adds about 10 MB
// to every binary that links the library (2.4 MB → 12.3 MB for a program
// using o200k and cl100k), too much for the engine to pay for a size
// check. The estimate is calibrated against cl100k and o200k (the OpenAI
// families') and errs on the high side: runs of ASCII letters cost one
// token per 4 letters (per 3 beyond 12 letters, per 2 when the case
// changes inside the run, as in base64 or ids), digits one per 3, every
// other ASCII symbol and line end one, spaces nothing; Hangul costs 1.5,
// Han and kana 1.25, any other non-ASCII character 1. Against cl100k on
// English prose, Markdown, Go code, JSON, invoices, German/French,
// Russian, Chinese, Japanese, Korean, CSV numbers, rare long words and
// hex/base64 ids, estimate/actual ranged from 0.94 (ids) to 2.0
// (Russian), 1.02 for numbers; times Margin every sample was covered.
// Families whose tokenizers are coarser (Gemini's SentencePiece, Claude's)
// get the same figure: over-counting only makes chunks smaller.
func Tokens(family, text string) int {
	_ = family // one estimate serves every family; see the doc comment
	n, letters, digits, quarters := 0, 0, 0, 0
	mixed := 0 // case changes inside the current letter run
	upper := false
	flush := func() {
		switch {
		case mixed >= 2: // random-looking text (base64, ids): short pieces
			n += (letters + 1) / 2
		case letters > 12: // long rare words split into short pieces
			n += (letters + 2) / 3
		default:
			n += (letters + 3) / 4
		}
		n += (digits + 2) / 3
		letters, digits, mixed = 0, 0, 0
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				if digits > 0 {
					flush()
				}
				up := c <= 'Z'
				if letters > 0 && up != upper {
					mixed++
				}
				upper = up
				letters++
			case c >= '0' && c <= '9':
				if letters > 0 {
					flush()
				}
				digits++
			case c == ' ' || c == '\t':
				flush()
			case c == '\n' || c == '\r':
				flush()
				n++
			default:
				flush()
				n++
			}
			i++
			continue
		}
		flush()
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
		case unicode.Is(unicode.Hangul, r):
			quarters += 6
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			quarters += 5
		default:
			quarters += 4
		}
		i += size
	}
	flush()
	return n + (quarters+3)/4
}

// Margin is the safety factor applied to Tokens when deciding whether a
// text fits a window: the estimate over-counts ordinary text, and the
// margin covers what it under-counts by up to 9% (random ids, base64).
const Margin = 1.1

// family is the provider family of a provider name ("openai:gpt-4o" →
// "openai").
func family(provider string) string {
	f, _, _ := strings.Cut(provider, ":")
	return f
}
