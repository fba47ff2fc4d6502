package prefill

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/llm"
)

// Answer caps per call, in tokens: a scalar needs a few, a decision one or
// two; strings and whole values take Config.MaxTokens or these defaults.
const (
	scalarTokens      = 16
	decisionTokens    = 3
	presenceTokens    = 6
	defaultTextTokens = 256
	defaultWholeToks  = 1024
	// maxContinuations bounds the calls one string may take when the model
	// writes escaped quotes (each ends a call early).
	maxContinuations = 4
)

// value appends n's value to g.out.
func (g *gen) value(ctx context.Context, n *node, ptr string) error {
	switch n.kind {
	case kindConst:
		g.out += n.literals[0] // the only valid value costs no call
		return nil
	case kindLiteral:
		return g.scalar(ctx, n, ptr, stepValue)
	case kindNumber, kindInteger:
		return g.scalar(ctx, n, ptr, stepValue)
	case kindString:
		return g.str(ctx, n, ptr)
	case kindObject:
		return g.object(ctx, n, ptr)
	case kindArray:
		return g.array(ctx, n, ptr)
	case kindChoice:
		return g.choice(ctx, n, ptr)
	}
	return g.whole(ctx, n, ptr)
}

// literalTokens is the answer cap for a choice among literals.
func literalTokens(literals []string) int {
	longest := 0
	for _, l := range literals {
		longest = max(longest, len(l))
	}
	return longest/2 + 6
}

// scalar generates a number, integer, boolean, null or enum value: the
// model continues after the key and is stopped at the next separator (a
// number at stops that leave its own commas alone).
func (g *gen) scalar(ctx context.Context, n *node, ptr, name string) error {
	toks, stop := scalarTokens, stopScalar
	switch n.kind {
	case kindLiteral:
		toks = literalTokens(n.literals)
	case kindNumber, kindInteger:
		stop = numberStops(g.inList())
	}
	text, cut, a, err := g.ask(ctx, step{ptr: ptr, name: name, stop: stop, maxTokens: toks}, "")
	if err != nil {
		return err
	}
	return g.judge(ctx, n, ptr, text, cut, a)
}

// inList reports whether the value being generated is an array's element,
// where a comma is JSON's separator; otherwise it is an object's member or
// the root.
func (g *gen) inList() bool {
	t := strings.TrimRight(g.out, " \t\r\n")
	return strings.HasSuffix(t, "[") || strings.HasSuffix(t, ",")
}

// judge checks a scalar's text, writes it on success, and records the
// attempt either way.
func (g *gen) judge(ctx context.Context, n *node, ptr, text string, cut bool, a llm.Attempt) error {
	r, fe := g.scalarValue(n, ptr, text, cut, a.FinishReason)
	if fe == nil {
		if vs := g.check(n, ptr, r.value); len(vs) > 0 {
			fe = &fieldError{class: llm.ClassSchema, msg: describe(vs), violations: vs}
		}
	}
	if fe != nil {
		if r.value != "" {
			a.Value = json.RawMessage(r.value)
		}
		a.Class, a.Violations = fe.class, fe.violations
		if len(fe.violations) == 0 {
			a.Error = fe.msg
		}
		g.record(ctx, a)
		return fe
	}
	g.accept(ctx, ptr, n, r, a)
	return nil
}

// accept records a's valid scalar and writes it: a number written for
// people is recorded as a repair, and the decimal mark it shows settles
// later ambiguous numbers, as in jsonx.Coerce.
func (g *gen) accept(ctx context.Context, ptr string, n *node, r scalarRead, a llm.Attempt) {
	a.Value = json.RawMessage(r.value)
	if r.note != "" {
		kind := jsonx.KindCoerceStringToNumber
		if n.kind == kindInteger {
			kind = jsonx.KindCoerceStringToInteger
		}
		a.Repairs = append(a.Repairs, llm.Repair{Kind: kind, Where: ptr, Detail: strconv.Quote(r.from) + " -> " + r.value + r.note})
	}
	switch r.mark {
	case '.':
		g.dot = true
	case ',':
		g.comma = true
	}
	g.record(ctx, a)
	g.out += r.value
}

// scalarValue parses a literal or number answer.
func (g *gen) scalarValue(n *node, ptr, text string, cut bool, finish llm.FinishReason) (scalarRead, *fieldError) {
	t := strings.TrimSpace(text)
	got := strconv.Quote(t)
	switch n.kind {
	case kindLiteral, kindConst:
		if i := matchLiteral(t, n.literals, cut); i >= 0 {
			return scalarRead{value: n.literals[i]}, nil
		}
		msg := fmt.Sprintf("%s is not one of the allowed values; write exactly one of: %s", got, listLiterals(n.literals))
		return scalarRead{}, &fieldError{class: llm.ClassSchema, msg: msg, violations: []llm.Violation{{Pointer: ptr, Keyword: "enum", Message: "must be one of: " + listLiterals(n.literals), Value: got}}}
	case kindNumber, kindInteger:
		want := "number"
		if n.kind == kindInteger {
			want = "integer"
		}
		num, parts, ended := numberText(t, g.inList())
		got = strconv.Quote(num)
		if !cut && !ended && finish == llm.FinishLength {
			return scalarRead{}, &fieldError{class: llm.ClassTruncated, msg: fmt.Sprintf("%s was cut off; write only the number, then a comma", strconv.Quote(t))}
		}
		if parts != nil {
			why := fmt.Sprintf("in a list, %s is either one number or the numbers %s; write each number in digits without thousands separators and put \", \" between numbers (%s)",
				got, strings.Join(parts, ", "), jsonx.NumberHint(num))
			return scalarRead{}, &fieldError{class: llm.ClassSchema, msg: why,
				violations: []llm.Violation{{Pointer: ptr, Keyword: "type", Message: why, Value: got, Want: []string{want}}}}
		}
		mark, conflict := g.convention()
		r, why, ok := numberValue(num, n.kind == kindInteger, mark, conflict)
		if !ok {
			return scalarRead{}, &fieldError{class: llm.ClassSchema, msg: fmt.Sprintf("%s is not a %s: %s", got, want, why),
				violations: []llm.Violation{{Pointer: ptr, Keyword: "type", Message: why, Value: got, Want: []string{want}}}}
		}
		return r, nil
	}
	return scalarRead{}, &fieldError{class: llm.ClassSchema, msg: "not a scalar"}
}

// convention is the decimal mark the numbers written for people so far
// showed ('.' or ','), and whether they showed both.
func (g *gen) convention() (mark byte, conflict bool) {
	switch {
	case g.dot && g.comma:
		return 0, true
	case g.dot:
		return '.', false
	case g.comma:
		return ',', false
	}
	return 0, false
}

// str generates a string: the program writes the opening quote, the model
// writes the content and is stopped at an unescaped quote, and the program
// escapes what it wrote.
func (g *gen) str(ctx context.Context, n *node, ptr string) error {
	toks := g.cfg.MaxTokens
	if toks == 0 {
		toks = defaultTextTokens
		if ml := intOf(n.s.vals["maxLength"], 0); ml > 0 {
			toks = min(toks, ml/2+16)
		}
	}
	content := ""
	for i := 0; ; i++ {
		text, cut, a, err := g.ask(ctx, step{ptr: ptr, name: stepValue, stop: stopString, maxTokens: toks, inString: true}, `"`+content)
		if err != nil {
			return err
		}
		if !cut {
			a.Class, a.Error = llm.ClassTruncated, "the text did not end within the token limit"
			g.record(ctx, a)
			return &fieldError{class: llm.ClassTruncated, msg: fmt.Sprintf("the text was cut off after %d tokens; write it shorter and end it with a quote", toks)}
		}
		if escaped(text) && i < maxContinuations {
			// The server stopped at a quote the model escaped: it is
			// content, and the model goes on.
			content += text + `"`
			g.record(ctx, a)
			continue
		}
		content += text
		value := stringValue(content)
		a.Value = json.RawMessage(value)
		if vs := g.check(n, ptr, value); len(vs) > 0 {
			a.Class, a.Violations = llm.ClassSchema, vs
			g.record(ctx, a)
			return &fieldError{class: llm.ClassSchema, msg: describe(vs), violations: vs}
		}
		g.record(ctx, a)
		g.out += value
		return nil
	}
}

// object writes the object's keys in schema order; an optional key is
// offered and the model decides whether it is there.
func (g *gen) object(ctx context.Context, n *node, ptr string) error {
	g.out += "{"
	first := true
	for _, p := range n.props {
		mark := len(g.out)
		if !first {
			g.out += ","
		}
		key, _ := json.Marshal(p.name)
		g.out += string(key) + ":"
		cptr := ptr + "/" + escapePointer(p.name)
		if !p.req {
			present, done, err := g.presence(ctx, p.n, cptr)
			if err != nil {
				return err
			}
			if !present {
				g.out = g.out[:mark]
				continue
			}
			if done {
				first = false
				continue
			}
		}
		if err := g.field(ctx, p.n, cptr); err != nil {
			return err
		}
		first = false
	}
	g.out += "}"
	return nil
}

// presence asks whether an optional field is there: the model continues
// after its key with null (absent: the key is left out) or the start of a
// value. A complete
// scalar answer is kept (done); otherwise the value is generated as usual.
func (g *gen) presence(ctx context.Context, n *node, ptr string) (present, done bool, err error) {
	if n.kind == kindConst {
		return true, false, nil // costs no call either way; the value is fixed
	}
	stop := stopScalar
	if n.kind == kindNumber || n.kind == kindInteger {
		stop = stopNumberMember
	}
	text, cut, a, err := g.ask(ctx, step{ptr: ptr, name: stepPresence, stop: stop, maxTokens: presenceTokens}, "")
	if err != nil {
		return false, false, err
	}
	t := strings.TrimSpace(text)
	if t == "" || t == "}" || strings.HasPrefix(t, "null") || t == "None" {
		// Absent, even where null is allowed: null and a missing key both
		// say "not given", and omitting it invents nothing.
		g.record(ctx, a)
		return false, false, nil
	}
	if cut && (n.kind == kindNumber || n.kind == kindInteger || n.kind == kindLiteral) {
		if r, fe := g.scalarValue(n, ptr, t, cut, a.FinishReason); fe == nil && len(g.check(n, ptr, r.value)) == 0 {
			g.accept(ctx, ptr, n, r, a)
			return true, true, nil
		}
	}
	g.record(ctx, a)
	return true, false, nil
}

// array writes "[", then elements; after minItems the model decides
// whether another follows (it continues with "," or "]"), up to maxItems.
func (g *gen) array(ctx context.Context, n *node, ptr string) error {
	g.out += "["
	for i := 0; i < n.maxItems; i++ {
		if i >= n.minItems {
			more, err := g.more(ctx, ptr, i)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
		if i > 0 {
			g.out += ","
		}
		if err := g.field(ctx, n.items, ptr+"/"+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	g.out += "]"
	return nil
}

// more asks whether the array at ptr, holding i elements, goes on.
func (g *gen) more(ctx context.Context, ptr string, i int) (bool, error) {
	text, _, a, err := g.ask(ctx, step{ptr: ptr, name: stepMore, maxTokens: decisionTokens}, "")
	if err != nil {
		return false, err
	}
	g.record(ctx, a)
	t := strings.TrimSpace(text)
	if t == "" {
		return false, nil
	}
	switch t[0] {
	case ']', '}':
		return false, nil
	case ',':
		return true, nil
	}
	// An element starts at once: the first one, or a model that forgot the
	// comma; either way it means another element.
	return true, nil
}

// choice picks a simple anyOf/oneOf branch by the first token the model
// writes, then finishes the value as that branch.
func (g *gen) choice(ctx context.Context, n *node, ptr string) error {
	stop, numeric := stopScalar, false
	for _, b := range n.branches {
		if b.kind == kindNumber || b.kind == kindInteger {
			stop, numeric = numberStops(g.inList()), true // a number keeps its commas
		}
	}
	text, cut, a, err := g.ask(ctx, step{ptr: ptr, name: stepChoice, stop: stop, maxTokens: scalarTokens}, "")
	if err != nil {
		return err
	}
	t := strings.TrimSpace(text)
	var lead byte
	if t != "" {
		switch c := t[0]; {
		case c == '"':
			lead = '"'
		case c == '-' || (c >= '0' && c <= '9'):
			lead = '0'
		case c == 't' || c == 'f' || c == 'T' || c == 'F':
			lead = 't'
		case c == 'n' || c == 'N':
			lead = 'n'
		}
	}
	for _, b := range n.branches {
		if l, _ := leadOf(b); l != lead || lead == 0 {
			continue
		}
		if b.kind == kindString {
			g.record(ctx, a) // the choice is made; the string is generated as such
			return g.str(ctx, b, ptr)
		}
		if numeric && b.kind != kindNumber && b.kind != kindInteger {
			// A literal read under a number's stops ends at any comma.
			if lt, lcut := cutAtStop(t, stopScalar, false); lcut {
				t, cut = strings.TrimSpace(lt), true
			}
		}
		return g.judge(ctx, b, ptr, t, cut, a)
	}
	var kinds []string
	for _, b := range n.branches {
		kinds = append(kinds, branchName(b))
	}
	msg := fmt.Sprintf("%s fits none of the allowed kinds; write one of: %s", strconv.Quote(t), strings.Join(kinds, ", "))
	a.Class, a.Error = llm.ClassSchema, msg
	g.record(ctx, a)
	return &fieldError{class: llm.ClassSchema, msg: msg}
}

func branchName(b *node) string {
	switch b.kind {
	case kindString:
		return "a string in quotes"
	case kindNumber:
		return "a number"
	case kindInteger:
		return "an integer"
	}
	return listLiterals(b.literals)
}

// whole asks for the entire value at once (free-form objects, tuples,
// allOf, anyOf of complex branches, recursion past maxDepth) and keeps the
// first JSON value of the answer.
func (g *gen) whole(ctx context.Context, n *node, ptr string) error {
	toks := g.cfg.MaxTokens
	if toks == 0 {
		toks = defaultWholeToks
	}
	text, _, a, err := g.ask(ctx, step{ptr: ptr, name: stepWhole, maxTokens: toks}, "")
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		msg := "write one complete JSON value"
		if a.FinishReason == llm.FinishLength {
			a.Class, msg = llm.ClassTruncated, "the value was cut off at the token limit; write it shorter"
		} else {
			a.Class = llm.ClassNoJSON
		}
		a.Error = msg
		g.record(ctx, a)
		return &fieldError{class: a.Class, msg: msg}
	}
	b, _ := json.Marshal(v)
	value := string(b)
	a.Value = json.RawMessage(value)
	if vs := g.check(n, ptr, value); len(vs) > 0 {
		a.Class, a.Violations = llm.ClassSchema, vs
		g.record(ctx, a)
		return &fieldError{class: llm.ClassSchema, msg: describe(vs), violations: vs}
	}
	g.record(ctx, a)
	g.out += value
	return nil
}
