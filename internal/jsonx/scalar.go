package jsonx

import (
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/extractq/extractq/llm"
)

// ScalarKinds is a set of scalar JSON types a schema's root accepts.
type ScalarKinds uint8

// Scalar kinds; combine them with |.
const (
	ScalarString  ScalarKinds = 1 << iota
	ScalarNumber              // numbers and integers
	ScalarBoolean             // also "yes" and "no" in prose
	ScalarNull
	// AnyScalar accepts every scalar.
	AnyScalar = ScalarString | ScalarNumber | ScalarBoolean | ScalarNull
)

// ScalarKindsOf returns the scalar kinds among JSON Schema type names
// ("string", "integer", "number", "boolean", "null"); others are ignored.
func ScalarKindsOf(types []string) ScalarKinds {
	var k ScalarKinds
	for _, t := range types {
		switch t {
		case "string":
			k |= ScalarString
		case "number", "integer":
			k |= ScalarNumber
		case "boolean":
			k |= ScalarBoolean
		case "null":
			k |= ScalarNull
		}
	}
	return k
}

// ScalarFrom says how a scalar candidate was found. The constants are in
// order of confidence; Find returns scalars in this order.
type ScalarFrom uint8

const (
	// NotScalar marks an object or array candidate.
	NotScalar ScalarFrom = iota
	// ScalarWhole: the whole answer (outside reasoning blocks), or the whole
	// content of a fence, is this one scalar: `42`, `true`, `"Paris"`,
	// `'x'`, `"""text"""`, `**Yes.**`, `$1,234.50` (offered as a string for
	// Coerce to read). Ranked with objects and arrays.
	ScalarWhole
	// ScalarLabeled: the value of a "Label: value" line in prose
	// ("Answer: yes", "**Total:** 42"), or a line of prose that holds only
	// a scalar written as JSON, a yes/no or a number ("42" before an
	// explanation). When a label names the answer (answer, result, output,
	// final, and the same in French, Spanish, German, Italian,
	// Portuguese), only such lines count. The lines that count must all
	// give the same value; otherwise none is offered.
	ScalarLabeled
	// ScalarSole: the only scalar of the wanted kind in the prose: the
	// only number ("The answer is 42."), the only yes/no/true/false word.
	// Any other digit in the prose (a date, "v2") makes numbers ambiguous,
	// and nothing is offered.
	ScalarSole
	// ScalarText: the whole answer taken as a string, offered only when a
	// string is wanted and nothing else at all was found.
	ScalarText
)

// scalars adds scalar candidates of the wanted kinds.
func (f *finder) scalars(spans []span, kinds ScalarKinds) {
	structures := len(f.found)
	// Whole answer and whole fences.
	var answer []span // non-reasoning spans that hold text
	for _, s := range spans {
		if s.reasoning || strings.TrimSpace(f.text[s.lo:s.hi]) == "" {
			continue
		}
		answer = append(answer, s)
	}
	if len(answer) == 1 && !strings.HasPrefix(strings.TrimSpace(f.text[answer[0].lo:answer[0].hi]), "```") {
		f.addWhole(answer[0].lo, answer[0].hi, kinds, false) // a fence is read below
	}
	for _, fc := range f.fences {
		f.addWhole(fc[0], fc[1], kinds, true)
	}
	if len(f.found) > structures || f.strict {
		return // a whole scalar is the answer; PolicyOff takes nothing from prose
	}
	prose := f.proseIntervals(answer)
	f.addLabeled(prose, kinds)
	if kinds&ScalarString == 0 {
		// Where a string is allowed, a number or yes/no inside a sentence
		// is not the whole value: "1 cup unsalted butter" stays the text.
		f.addSole(prose, kinds)
	}
	if kinds&ScalarString != 0 && len(f.found) == 0 && len(answer) > 0 && !f.strict {
		a := answer[len(answer)-1]
		lo, hi := unwrapEmphasis(f.text, a.lo, a.hi) // "**2 large eggs**"
		for _, fc := range f.fences {
			if fc[0] >= lo && fc[1] <= hi && strings.HasPrefix(f.text[lo:hi], "```") &&
				strings.TrimRight(f.text[fc[1]:hi], "` \t\r\n") == "" {
				lo, hi = trimSpan(f.text, fc[0], fc[1]) // the answer is one fence
				break
			}
		}
		if lo < hi {
			f.found = append(f.found, Candidate{
				JSON:    appendQuoted(nil, f.text[lo:hi]),
				Repairs: []llm.Repair{{Kind: KindUnquotedString, Where: "@" + strconv.Itoa(lo), Detail: "took the whole answer as a string"}},
				Start:   lo, End: hi, Scalar: ScalarText,
			})
		}
	}
}

// trimSpan narrows text[lo:hi] to its non-blank part.
func trimSpan(text string, lo, hi int) (int, int) {
	for lo < hi && isBlank(text[lo]) {
		lo++
	}
	for hi > lo && isBlank(text[hi-1]) {
		hi--
	}
	return lo, hi
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// addWhole offers text[lo:hi] as a scalar candidate if it is exactly one.
func (f *finder) addWhole(lo, hi int, kinds ScalarKinds, fenced bool) {
	lo, hi = trimSpan(f.text, lo, hi)
	if lo >= hi || f.full() {
		return
	}
	if c, ok := f.scalarAt(lo, hi, kinds, false); ok {
		c.Fenced, c.Scalar = fenced, ScalarWhole
		f.found = append(f.found, c)
	}
}

// scalarAt reads text[lo:hi] (trimmed) as one scalar. Markdown emphasis
// around it and a final '.' or '!' are not part of it. bare allows any
// other text as a string (for a labelled value).
func (f *finder) scalarAt(lo, hi int, kinds ScalarKinds, bare bool) (Candidate, bool) {
	var rs []llm.Repair
	lo, hi = unwrapEmphasis(f.text, lo, hi)
	lo, hi = trimSpan(f.text, lo, hi)
	if lo >= hi || f.text[lo] == '{' || f.text[lo] == '[' || strings.Trim(f.text[lo:hi], "`") == "" {
		return Candidate{}, false // a fence's own line is no value
	}
	if hi-lo > 1 && strings.IndexByte(".!", f.text[hi-1]) >= 0 && !isDigit(f.text[hi-2]) {
		hi-- // "Yes." and "'Paris'." end a sentence
		lo, hi = unwrapEmphasis(f.text, lo, hi)
	}
	cand := func(json []byte) (Candidate, bool) {
		return Candidate{JSON: json, Repairs: rs, Start: lo, End: hi}, true
	}
	w := f.text[lo:hi]
	if kinds&ScalarBoolean != 0 {
		if b, ok := yesNo(w); ok {
			rs = append(rs, llm.Repair{Kind: KindScalarInProse, Where: "@" + strconv.Itoa(lo), Detail: strconv.Quote(w) + " -> " + b})
			if f.strict {
				return Candidate{}, false
			}
			return cand([]byte(b))
		}
	}
	p := parser{src: f.text, pos: lo, end: hi, ticks: f.ticks}
	ok := p.value(ctxTop)
	f.ticks = p.ticks
	if ok {
		p.skipSpace()
		f.budget -= p.scanned + p.pos - lo
		if p.pos >= hi && !p.tooDeep && len(p.out) > 0 && p.out[0] != '{' && p.out[0] != '[' &&
			!hasKind(p.repairs, KindUnquotedString) && (!f.strict || len(p.repairs) == 0) {
			rs = p.result()
			return cand(p.out)
		}
	}
	if f.strict {
		return Candidate{}, false
	}
	if kinds&ScalarNumber != 0 && kinds&ScalarString == 0 {
		if d, ok := fraction(w); ok {
			rs = append(rs, llm.Repair{Kind: KindScalarInProse, Where: "@" + strconv.Itoa(lo), Detail: "read the fraction " + strconv.Quote(w) + " as " + d})
			return cand([]byte(d))
		}
	}
	if kinds&ScalarNumber != 0 {
		if _, ok := readHumanNumber(w); ok {
			// "$1,234.50": offered as text for Coerce to read, where the
			// schema and the other numbers of the answer can settle it.
			rs = append(rs, llm.Repair{Kind: KindUnquotedString, Where: "@" + strconv.Itoa(lo), Detail: "quoted " + strconv.Quote(clip(w))})
			return cand(appendQuoted(nil, w))
		}
	}
	if bare && kinds&ScalarString != 0 && !strings.ContainsAny(w, "\n{[") {
		rs = append(rs, llm.Repair{Kind: KindUnquotedString, Where: "@" + strconv.Itoa(lo), Detail: "quoted " + strconv.Quote(clip(w))})
		return cand(appendQuoted(nil, w))
	}
	return Candidate{}, false
}

// unwrapEmphasis removes matching Markdown emphasis (**x**, __x__, *x*,
// _x_) around text[lo:hi].
func unwrapEmphasis(text string, lo, hi int) (int, int) {
	lo, hi = trimSpan(text, lo, hi)
	for _, m := range [...]string{"**", "__", "*", "_"} {
		if hi-lo > 2*len(m) && strings.HasPrefix(text[lo:hi], m) && strings.HasSuffix(text[lo:hi], m) {
			return trimSpan(text, lo+len(m), hi-len(m))
		}
	}
	return lo, hi
}

// yesNo reads a yes/no answer as a boolean.
func yesNo(w string) (string, bool) {
	switch strings.ToLower(w) {
	case "yes":
		return "true", true
	case "no":
		return "false", true
	}
	return "", false
}

// proseIntervals returns the parts of the answer spans outside fences and
// outside the candidates found so far, in order.
func (f *finder) proseIntervals(answer []span) [][2]int {
	cuts := append([][2]int(nil), f.fences...)
	for _, c := range f.found {
		if !c.Reasoning {
			cuts = append(cuts, [2]int{c.Start, c.End})
		}
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i][0] < cuts[j][0] })
	var out [][2]int
	k := 0
	for _, a := range answer {
		lo := a.lo
		for k < len(cuts) && cuts[k][1] <= lo {
			k++
		}
		for j := k; j < len(cuts) && cuts[j][0] < a.hi; j++ {
			if cuts[j][0] > lo {
				out = append(out, [2]int{lo, cuts[j][0]})
			}
			lo = max(lo, cuts[j][1])
		}
		if lo < a.hi {
			out = append(out, [2]int{lo, a.hi})
		}
	}
	return out
}

// answerLabels are the labels that name the answer itself.
var answerLabels = [...]string{"answer", "result", "output", "final", "réponse", "respuesta", "antwort", "risposta", "resposta", "ergebnis", "résultat", "resultado", "risultato"}

// addLabeled offers the value of "Label: value" lines and of lines that
// are only a scalar (see ScalarLabeled).
func (f *finder) addLabeled(prose [][2]int, kinds ScalarKinds) {
	type labeled struct {
		c      Candidate
		answer bool
	}
	var all []labeled
	for _, iv := range prose {
		for lo := iv[0]; lo < iv[1] && len(all) <= MaxCandidates; {
			hi := lo + strings.IndexByte(f.text[lo:iv[1]], '\n')
			if hi < lo {
				hi = iv[1]
			}
			if label, vlo, ok := labelLine(f.text, lo, hi); ok {
				if c, ok := f.scalarAt(vlo, hi, kinds, true); ok {
					low := strings.ToLower(label)
					isAnswer := false
					for _, a := range answerLabels {
						if strings.Contains(low, a) {
							isAnswer = true
						}
					}
					all = append(all, labeled{c, isAnswer})
				}
			} else if c, ok := f.scalarAt(lo, hi, kinds, false); ok {
				all = append(all, labeled{c, false}) // a line that is only a scalar
			}
			lo = hi + 1
		}
	}
	anyAnswer := false
	for _, l := range all {
		anyAnswer = anyAnswer || l.answer
	}
	var pick *Candidate
	for i, l := range all {
		if anyAnswer && !l.answer {
			continue
		}
		if pick != nil && string(pick.JSON) != string(l.c.JSON) {
			return // the lines disagree: no guess
		}
		pick = &all[i].c
	}
	if pick != nil && !f.full() {
		c := *pick
		c.Scalar = ScalarLabeled
		c.Repairs = append(c.Repairs, llm.Repair{Kind: KindScalarInProse, Where: "@" + strconv.Itoa(c.Start), Detail: "took " + clip(string(c.JSON)) + " from a labelled line"})
		f.found = append(f.found, c)
	}
}

// labelLine reads text[lo:hi] as "Label: value": a label of one to four
// words (Markdown list markers, headings and emphasis around it allowed)
// and a value after the colon. It returns the label and where the value
// starts.
func labelLine(text string, lo, hi int) (string, int, bool) {
	i := lo
	for i < hi && strings.IndexByte(" \t-*>#+", text[i]) >= 0 {
		i++
	}
	colon := strings.IndexByte(text[i:hi], ':')
	if colon < 0 {
		return "", 0, false
	}
	label := strings.Trim(text[i:i+colon], " \t*_")
	v := i + colon + 1
	for v < hi && (text[v] == '*' || text[v] == '_') {
		v++ // "**Answer:** 42"
	}
	if label == "" || len(label) > 40 || len(strings.Fields(label)) > 4 || strings.TrimSpace(text[v:hi]) == "" {
		return "", 0, false
	}
	for _, r := range label {
		if !unicode.IsLetter(r) && r != ' ' && r != '-' && r != '_' && r != '\'' {
			return "", 0, false
		}
	}
	if v < hi && text[v] == '/' {
		return "", 0, false // a URL: "https://…"
	}
	return label, v, true
}

// addSole offers the only number, or the only yes/no word, in the prose
// (see ScalarSole).
func (f *finder) addSole(prose [][2]int, kinds ScalarKinds) {
	if kinds&ScalarNumber != 0 {
		n, lo, hi, ok := 0, 0, 0, false
		for _, iv := range prose {
			for i := iv[0]; i < iv[1] && n < 2; {
				if !isDigit(f.text[i]) {
					i++
					continue
				}
				n++
				var next int
				lo, hi, next, ok = numberToken(f.text, iv[0], iv[1], i)
				i = next
			}
		}
		if n == 1 && ok && !f.full() && !f.offered(lo, hi) {
			if c, ok := f.scalarAt(lo, hi, ScalarNumber, false); ok {
				c.Scalar = ScalarSole
				c.Repairs = append(c.Repairs, llm.Repair{Kind: KindScalarInProse, Where: "@" + strconv.Itoa(lo), Detail: "took the only number " + clip(f.text[lo:hi])})
				f.found = append(f.found, c)
			}
		}
	}
	if kinds&ScalarBoolean != 0 && !f.full() {
		if c, ok := f.soleBoolean(prose); ok && !f.offered(c.Start, c.End) {
			f.found = append(f.found, c)
		}
	}
}

// offered reports whether a scalar candidate already covers text[lo:hi].
func (f *finder) offered(lo, hi int) bool {
	for _, c := range f.found {
		if c.Scalar != NotScalar && c.Start <= lo && c.End >= hi {
			return true
		}
	}
	return false
}

// soleBoolean reads a yes/no answer from prose: "Yes" or "No" as the first
// word of the answer (followed by punctuation or the end of the line), and
// every "true" or "false" word. All must agree; a "not" before true or
// false makes the answer unreadable.
func (f *finder) soleBoolean(prose [][2]int) (Candidate, bool) {
	reading, lo, hi := "", 0, 0
	first := true
	for _, iv := range prose {
		for i := iv[0]; i < iv[1]; {
			j := i
			for j < iv[1] && isLetter(f.text[j]) {
				j++
			}
			if j == i {
				r, size := utf8.DecodeRuneInString(f.text[i:iv[1]])
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					first = false
				}
				i += size
				continue
			}
			before, _ := utf8.DecodeLastRuneInString(f.text[:i])
			after, _ := utf8.DecodeRuneInString(f.text[j:])
			if unicode.IsLetter(before) || unicode.IsLetter(after) || unicode.IsDigit(after) {
				first = false
				i = j
				for i < iv[1] && f.text[i] >= utf8.RuneSelf {
					_, size := utf8.DecodeRuneInString(f.text[i:iv[1]])
					i += size
				}
				continue
			}
			w := strings.ToLower(f.text[i:j])
			var b string
			switch {
			case first && (w == "yes" || w == "no") && (j == iv[1] || strings.IndexByte(",.!;:\n\r*", f.text[j]) >= 0):
				b, _ = yesNo(w)
			case w == "true" || w == "false":
				if k := strings.TrimRight(strings.ToLower(f.text[max(iv[0], i-5):i]), " *_`\"'"); strings.HasSuffix(k, "not") || strings.HasSuffix(k, "n't") {
					return Candidate{}, false
				}
				b = w
			}
			first = false
			if b != "" {
				if reading != "" && reading != b {
					return Candidate{}, false
				}
				reading, lo, hi = b, i, j
			}
			i = j
		}
	}
	if reading == "" {
		return Candidate{}, false
	}
	return Candidate{
		JSON:    []byte(reading),
		Repairs: []llm.Repair{{Kind: KindScalarInProse, Where: "@" + strconv.Itoa(lo), Detail: "read " + strconv.Quote(f.text[lo:hi]) + " as " + reading}},
		Start:   lo, End: hi, Scalar: ScalarSole,
	}, true
}

// numberToken returns the extent [start, end) of the number whose first
// digit is at text[i], within [lo, hi): digits joined by single ',', '.'
// or an apostrophe, or by a no-break or thin space before three digits, with a sign,
// a currency sign or code and a percent sign around it. next is where the
// digits end; ok is false for a number glued to letters ("v2", "10am").
func numberToken(text string, lo, hi, i int) (start, end, next int, ok bool) {
	j := i
	for j < hi {
		c := text[j]
		if isDigit(c) {
			j++
			continue
		}
		if (c == ',' || c == '.' || c == '\'') && j+1 < hi && isDigit(text[j+1]) {
			j++
			continue
		}
		if r, n := utf8.DecodeRuneInString(text[j:hi]); r != ' ' && isNumSpace(r) && j+n+3 <= hi &&
			isDigit(text[j+n]) && isDigit(text[j+n+1]) && isDigit(text[j+n+2]) && (j+n+3 == hi || !isDigit(text[j+n+3])) {
			j += n
			continue
		}
		break
	}
	start = i
	if start > lo && (text[start-1] == '-' || text[start-1] == '+') && (start-1 == lo || !isIdent(text[start-2])) {
		start--
	}
	if start > lo {
		// a currency sign or code just before: "$12", "€ 12", "USD 12"
		k := start
		for k > lo && (text[k-1] == ' ') && start-k < 1 {
			k--
		}
		for _, sym := range currencySymbols {
			if strings.HasSuffix(text[lo:k], sym) {
				start = k - len(sym)
				break
			}
		}
		if start == i && k-3 >= lo && currencyCodes[text[k-3:k]] {
			start = k - 3
		}
	}
	end = j
	k := end
	for k < hi && text[k] == ' ' && k-end < 1 {
		k++
	}
	if k < hi && text[k] == '%' {
		end = k + 1
	} else {
		for _, sym := range currencySymbols {
			if strings.HasPrefix(text[k:hi], sym) {
				end = k + len(sym)
				break
			}
		}
		if end == j && k+3 <= hi && currencyCodes[text[k:k+3]] && (k+3 == hi || !isLetter(text[k+3])) {
			end = k + 3
		}
	}
	// A number glued to letters ("v2", "10am", "3rd") is not a value.
	if start > lo && isLetter(text[start-1]) || end < hi && isLetter(text[end]) {
		return i, j, j, false
	}
	return start, end, j, true
}

// fraction reads "1/5" or "-3 / 8" as the decimal it is exactly ("0.2",
// "-0.375"). A fraction with no finite decimal form (1/3) is not read: its
// rounding would be a guess. Leading zeros make it no fraction.
func fraction(w string) (string, bool) {
	num, den, ok := strings.Cut(w, "/")
	num, den = strings.TrimSpace(num), strings.TrimSpace(den)
	if !ok || len(num) == 0 || len(den) == 0 || len(num) > 12 || len(den) > 12 {
		return "", false
	}
	neg := num[0] == '-'
	if neg || num[0] == '+' {
		num = num[1:]
	}
	for _, part := range []string{num, den} {
		if part == "" || len(part) > 1 && part[0] == '0' {
			return "", false // "2024/05" is a month, not a fraction
		}
		for i := 0; i < len(part); i++ {
			if !isDigit(part[i]) {
				return "", false
			}
		}
	}
	r, ok := new(big.Rat).SetString(num + "/" + den)
	if !ok || den == "0" || strings.Trim(den, "0") == "" {
		return "", false
	}
	if neg {
		r.Neg(r)
	}
	// A finite decimal needs a denominator of only 2s and 5s.
	d := new(big.Int).Set(r.Denom())
	digits := 0
	for _, p := range []int64{2, 5} {
		for m := new(big.Int); ; digits++ {
			q, rem := new(big.Int).QuoRem(d, big.NewInt(p), m)
			if rem.Sign() != 0 {
				break
			}
			d = q
		}
	}
	if d.Cmp(big.NewInt(1)) != 0 {
		return "", false
	}
	out := strings.TrimRight(strings.TrimRight(r.FloatString(digits), "0"), ".")
	if out == "-0" || out == "" {
		out = "0"
	}
	return out, true
}
