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
// family. No Go tokenizer with embedded vocabularies is used (the engine
// stays free of multi-megabyte tables), so this is an estimate calibrated
// against the cl100k/o200k BPE vocabularies (see EstimateCalibration) that
// errs on the high side: runs of ASCII letters cost one token per 4
// letters (rounded up), digits one per 3, every other ASCII symbol one,
// whitespace nothing beyond what it joins, and a non-ASCII character one
// (CJK is close to that; accented Latin costs less). Families whose
// tokenizers are coarser (Gemini's SentencePiece, Claude's) get the same
// figure: over-counting only makes chunks smaller.
func Tokens(family, text string) int {
	_ = family // one estimate serves every family; see the doc comment
	n, letters, digits := 0, 0, 0
	flush := func() {
		n += (letters + 3) / 4
		n += (digits + 2) / 3
		letters, digits = 0, 0
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
				if digits > 0 {
					flush()
				}
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
		if !unicode.IsSpace(r) {
			n++
		}
		i += size
	}
	flush()
	return n
}

// Margin is the safety factor applied to Tokens when deciding whether a
// text fits a window: the estimate is calibrated to over-count ordinary
// prose, and the margin covers text it under-counts (long rare words).
const Margin = 1.1

// family is the provider family of a provider name ("openai:gpt-4o" →
// "openai").
func family(provider string) string {
	f, _, _ := strings.Cut(provider, ":")
	return f
}
