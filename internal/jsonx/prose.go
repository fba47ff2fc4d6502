package jsonx

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode"

	"github.com/extractq/extractq/llm"
	"golang.org/x/text/unicode/norm"
)

// KindEnumInProse is the repair that reads an enum or const value named in
// prose ("The answer is One", "**high** is the priority"); never lossy.
const KindEnumInProse = "enum_in_prose"

// proseNegations are the words that, just before a value, say it is not
// the answer ("not approved", "isn't high").
var proseNegations = map[string]bool{"not": true, "no": true, "never": true, "t": true, "neither": true, "nor": true, "non": true}

// EnumInProse reads which of the allowed values (JSON texts, as in a
// schema.Violation's Want; only strings count) a prose answer names, for a
// root that is an enum or a const. A value, or one of its aliases, counts
// where it stands as a whole word or phrase, ignoring case, accents,
// Markdown emphasis and the difference between ' ', '-' and '_'
// ("In Progress" names "in_progress"). Reasoning blocks do not count.
//
// It returns the value (compact JSON) and a repair when exactly one
// allowed value is named; otherwise named lists the different values
// found (two or more: the answer is ambiguous, never settled by counting)
// and value is nil. A value preceded by a negation ("not approved") makes
// the answer unreadable: nothing is returned.
func EnumInProse(text string, allowed []string, aliases map[string][]string) (value []byte, repair llm.Repair, named []string) {
	type phrase struct {
		value string // JSON
		words []string
	}
	var phrases []phrase
	for _, a := range allowed {
		var s string
		if json.Unmarshal([]byte(a), &s) != nil {
			continue
		}
		for _, p := range append([]string{s}, aliases[s]...) {
			if w := proseWords(p); len(w) > 0 {
				phrases = append(phrases, phrase{a, w})
			}
		}
	}
	if len(phrases) == 0 {
		return nil, llm.Repair{}, nil
	}
	type match struct {
		value   string
		lo, hi  int // word indexes
		at, end int // byte offsets
	}
	var matches []match
	for _, s := range splitReasoning(text) {
		if s.reasoning {
			continue
		}
		words, offs := proseWordsAt(text[s.lo:s.hi])
		for i := range words {
			for _, p := range phrases {
				if i+len(p.words) > len(words) || !equalWords(words[i:i+len(p.words)], p.words) {
					continue
				}
				for k := max(0, i-3); k < i; k++ {
					if proseNegations[words[k]] {
						return nil, llm.Repair{}, nil
					}
				}
				last := i + len(p.words) - 1
				matches = append(matches, match{p.value, i, last + 1, s.lo + offs[i][0], s.lo + offs[last][1]})
			}
		}
	}
	// A phrase inside a longer one of another value is part of it: "in
	// progress" is not also "progress".
	var kept []match
	for _, m := range matches {
		inner := false
		for _, o := range matches {
			if o.value != m.value && o.at <= m.at && m.end <= o.end && o.end-o.at > m.end-m.at {
				inner = true
			}
		}
		if !inner {
			kept = append(kept, m)
		}
	}
	for _, m := range kept {
		if !slices.Contains(named, m.value) {
			named = append(named, m.value)
		}
	}
	if len(named) != 1 {
		return nil, llm.Repair{}, named
	}
	m := kept[0]
	return []byte(m.value), llm.Repair{Kind: KindEnumInProse, Where: "@" + strconv.Itoa(m.at),
		Detail: "read " + strconv.Quote(clip(text[m.at:m.end])) + " in the prose as " + m.value}, named
}

// proseWords splits s into lower-case words without accents.
func proseWords(s string) []string {
	w, _ := proseWordsAt(s)
	return w
}

// proseWordsAt splits s into words (runs of letters and digits; every
// other character separates), folded as foldKey folds, with the byte
// range of each.
func proseWordsAt(s string) ([]string, [][2]int) {
	var words []string
	var offs [][2]int
	start := -1
	for i, r := range s + " " {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			words = append(words, foldKey(norm.NFC.String(s[start:i])))
			offs = append(offs, [2]int{start, i})
			start = -1
		}
	}
	return words, offs
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
