package schema

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"unicode"
)

// regexGen builds a string that a regular expression matches.
type regexGen struct {
	rng     *rand.Rand
	typical bool
	budget  int
}

func (r *regexGen) reps(min, max int) int {
	if max < 0 {
		max = min + 3
	}
	if max > min+8 {
		max = min + 8
	}
	if r.typical {
		if min == 0 && max > 0 {
			return 1
		}
		return min
	}
	return min + r.rng.IntN(max-min+1)
}

func (r *regexGen) gen(b *strings.Builder, re *syntax.Regexp) bool {
	r.budget--
	if r.budget < 0 {
		return false
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
		return true
	case syntax.OpCharClass:
		c, ok := r.pickRune(re.Rune)
		if ok {
			b.WriteRune(c)
		}
		return ok
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		if r.typical {
			b.WriteByte('x')
		} else {
			b.WriteByte(byte('a' + r.rng.IntN(26)))
		}
		return true
	case syntax.OpCapture:
		return r.gen(b, re.Sub[0])
	case syntax.OpStar:
		return r.repeat(b, re.Sub[0], 0, -1)
	case syntax.OpPlus:
		return r.repeat(b, re.Sub[0], 1, -1)
	case syntax.OpQuest:
		return r.repeat(b, re.Sub[0], 0, 1)
	case syntax.OpRepeat:
		return r.repeat(b, re.Sub[0], re.Min, re.Max)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !r.gen(b, s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		i := 0
		if !r.typical {
			i = r.rng.IntN(len(re.Sub))
		}
		return r.gen(b, re.Sub[i])
	}
	return false
}

func (r *regexGen) repeat(b *strings.Builder, sub *syntax.Regexp, min, max int) bool {
	n := r.reps(min, max)
	for range n {
		if !r.gen(b, sub) {
			return false
		}
	}
	return true
}

// pickRune picks a character from class ranges, preferring letters and
// digits a reader would expect over control or exotic characters.
func (r *regexGen) pickRune(ranges []rune) (rune, bool) {
	if len(ranges) == 0 {
		return 0, false
	}
	var nice []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for c := max(lo, 0x20); c <= hi && c <= 0x7e; c++ {
			if unicode.IsLetter(c) || unicode.IsDigit(c) || (c != ' ' && len(nice) == 0) {
				nice = append(nice, c)
			}
			if len(nice) > 200 {
				break
			}
		}
	}
	if len(nice) > 0 {
		if r.typical {
			return nice[0], true
		}
		return nice[r.rng.IntN(len(nice))], true
	}
	return ranges[0], true
}
