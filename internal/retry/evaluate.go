package retry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"weak"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/schema"
)

// evaluation is what became of one answer: a valid value (class none) or
// why not, with the text that tells the model.
type evaluation struct {
	class      llm.AttemptClass
	value      json.RawMessage // the chosen candidate after repairs, valid or not
	repairs    []llm.Repair
	violations []schema.Violation
	reason     string // the model's reason, class refusal
	problem    string // what was wrong, for the feedback (.Errors)
	// lossy lists the lossy repairs behind value (class lossy).
	lossy []llm.Repair
}

// unextractableKey marks the answer a model gives when the document lacks
// the data (the prompt convention shared with the simulator).
const unextractableKey = "_unextractable"

// maxCoerceRounds bounds schema-guided coercion: one round can reveal the
// next violation (a lone value wrapped into an array whose item then needs
// converting).
const maxCoerceRounds = 3

// judge holds what evaluating an answer needs besides the answer; it is
// fixed for one Run.
type judge struct {
	s   *schema.Schema
	cfg *Config
	// example is the canonical JSON of the example the prompt showed; nil
	// when it showed none, when the document is that example (its value is
	// then a legitimate answer), or when the example is not distinctive:
	// made only of numbers, booleans, nulls and the schema's enum and const
	// values, a real answer may well equal it ({"paid": true}).
	example []byte
	// placeholders are the example's distinctive strings the document does
	// not contain, by pointer: an answer holding one at the same place
	// copied it from the example ({"name": "example"}) instead of
	// extracting.
	placeholders []exampleLeaf
	// scalars are the kinds of scalar the schema's root accepts: the
	// finder then also offers bare scalars ("42", "true", a quoted string,
	// a labelled value in prose).
	scalars jsonx.ScalarKinds
	// wire is the property a strict or tools wire form wraps the root in
	// ({"value": 42}); "" when the root travels as it is.
	wire string
	// strictForm is set in strict and tools modes, whose wire forms make
	// optional fields required and nullable: a null for such a field
	// means "absent" (undoStrictNulls).
	strictForm bool
	// document is the text the answer is extracted from: a string that
	// looks like a placeholder ("....." in a table of contents) but stands
	// in it is a value.
	document string
	// member is the only property of an object root whose value may be a
	// scalar: a bare scalar answer (1214 for {"foo": number}) is offered
	// wrapped in it. "" otherwise. A root array of scalars needs no name:
	// coercion wraps a lone value in an array.
	member string
	// down is set when scalars are those one level down (member, or an
	// array's items): the whole answer is then never taken as a string,
	// since any prose would read as one ("I could not find it.").
	down bool
}

// newJudge prepares the evaluation of answers to document under the
// prompt data (the example shown, the mode).
// f is s's facts (factsCache).
func newJudge(s *schema.Schema, f *schemaFacts, cfg *Config, document string, d *llm.PromptData) *judge {
	j := &judge{s: s, cfg: cfg, scalars: f.scalars, document: document}
	if j.scalars == 0 && cfg.Repair == jsonx.PolicyCoerce {
		// Shapes one level off: a scalar answer where the root is a
		// one-property object or an array of scalars.
		j.member, j.scalars = f.down.member, f.down.kinds
		j.down = j.scalars != 0
	}
	if d.SchemaIn == string(SchemaInExample) && d.Example != "" {
		if v, err := decode([]byte(d.Example)); err == nil {
			pinned := pinnedCache.get(s)
			if distinctive(v, pinned) {
				j.example = canonical(v)
				if dv, err := decode([]byte(strings.TrimSpace(document))); err == nil && bytes.Equal(canonical(dv), j.example) {
					j.example = nil // the document is the example: repeating it is extracting it
				}
			}
			if j.example != nil {
				collectLeaves(v, "", func(ptr, s string) {
					if !pinned[s] && !strings.Contains(document, s) {
						var path []string
						if ptr != "" {
							for _, tok := range strings.Split(ptr[1:], "/") {
								path = append(path, unescapeToken.Replace(tok))
							}
						}
						j.placeholders = append(j.placeholders, exampleLeaf{ptr, s, path})
					}
				})
			}
		}
	}
	if d.Mode == llm.ModeStrict || d.Mode == llm.ModeTools {
		j.wire, j.strictForm = f.wire, true
	}
	return j
}

// exampleLeaf is a string of the example and where it is (the pointer,
// and its tokens unescaped).
type exampleLeaf struct {
	ptr, s string
	path   []string
}

// collectLeaves calls fn with the pointer and value of every string in v.
func collectLeaves(v any, ptr string, fn func(ptr, s string)) {
	switch t := v.(type) {
	case string:
		fn(ptr, t)
	case map[string]any:
		for k, x := range t {
			collectLeaves(x, ptr+"/"+escapeToken.Replace(k), fn)
		}
	case []any:
		for i, x := range t {
			collectLeaves(x, ptr+"/"+strconv.Itoa(i), fn)
		}
	}
}

// copied returns the pointers at which c holds a placeholder of the
// example, with its value.
func (c *cand) copied(leaves []exampleLeaf) []string {
	var at []string
	for _, l := range leaves {
		if s, ok := lookup(c.v, l.path).(string); ok && s == l.s {
			at = append(at, fmt.Sprintf("%s (%q)", pointerName(l.ptr), s))
		}
	}
	return at
}

// lookup resolves the unescaped tokens of a JSON pointer in a decoded
// value; nil when absent.
func lookup(v any, path []string) any {
	for _, tok := range path {
		switch t := v.(type) {
		case map[string]any:
			v = t[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// shapeOnly reports whether v is an object or array whose every string is
// a placeholder ("...", "…", "<name>", "[email]"), with no other value: a
// model showing the shape it will fill, not an answer. A string that holds
// JSON ("[\"bar\"]") or stands in the document ("....." of a table of
// contents) is a value, not a placeholder.
func shapeOnly(v any, document string) bool {
	strs := 0
	var walk func(any) bool
	walk = func(n any) bool {
		switch t := n.(type) {
		case string:
			strs++
			return mayPlaceholder(t) && placeholder.MatchString(t) && !json.Valid([]byte(t)) && !strings.Contains(document, t)
		case map[string]any:
			for _, x := range t {
				if !walk(x) {
					return false
				}
			}
			return true
		case []any:
			for _, x := range t {
				if !walk(x) {
					return false
				}
			}
			return true
		}
		return false
	}
	switch v.(type) {
	case map[string]any, []any:
		return walk(v) && strs > 0
	}
	return false
}

// placeholder matches a string that stands for a value to be filled in.
var placeholder = regexp.MustCompile(`^\s*(\.{2,}|…|<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\})\s*$`)

// mayPlaceholder is placeholder's cheap first test: after the blanks \s
// matches, a placeholder starts with '.', '…', '<', '[' or '{'. Running
// the expression on the first string of every answer was a twentieth of
// evaluating a clean one.
func mayPlaceholder(s string) bool {
	s = strings.TrimLeft(s, " \t\n\f\r")
	return s != "" && strings.IndexByte(".<[{\xe2", s[0]) >= 0
}

// distinctive reports whether v holds a string no enum or const of the
// schema pins: a placeholder ("example"), a pattern's or format's sample.
// A document whose answer repeats all of it by chance is implausible.
func distinctive(v any, pinned map[string]bool) bool {
	switch t := v.(type) {
	case string:
		return !pinned[t]
	case map[string]any:
		for _, x := range t {
			if distinctive(x, pinned) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if distinctive(x, pinned) {
				return true
			}
		}
	}
	return false
}

// pinnedStrings collects the strings of every enum and const in s.
func pinnedStrings(s *schema.Schema) map[string]bool {
	var doc any
	_ = json.Unmarshal(s.JSON(), &doc)
	pinned := map[string]bool{}
	var walk func(any)
	walk = func(n any) {
		switch t := n.(type) {
		case map[string]any:
			for k, x := range t {
				switch k {
				case "enum":
					list, _ := x.([]any)
					for _, e := range list {
						if s, ok := e.(string); ok {
							pinned[s] = true
						}
					}
				case "const":
					if s, ok := x.(string); ok {
						pinned[s] = true
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(doc)
	return pinned
}

// cand is one candidate found in an answer and what became of it.
type cand struct {
	jsonx.Candidate
	v          any
	doc        []byte
	repairs    []llm.Repair
	vs         []schema.Violation
	vsFresh    bool // vs is v's validation as v stands (violations)
	valid      bool
	coerced    bool
	join       bool // the finder joined several objects into this array
	canon      []byte
	canonValid bool
}

func (c *cand) span() int { return c.End - c.Start }

// violations validates c's value once until it changes: a strict wire
// form's answer was validated by undoStrictNulls and again by choose,
// a tenth of a fleet worker's CPU per document.
func (c *cand) violations(s *schema.Schema) []schema.Violation {
	if !c.vsFresh {
		c.vs, c.vsFresh = s.Validate(c.v), true
	}
	return c.vs
}

// contains reports whether c's source strictly contains o's.
func (c *cand) contains(o *cand) bool {
	return c.Start <= o.Start && o.End <= c.End && c.span() > o.span()
}

func (c *cand) key() []byte {
	if !c.canonValid {
		c.canon, c.canonValid = canonical(c.v), true
	}
	return c.canon
}

// evaluate is the engine's own work on one answer: find the JSON, repair
// it, validate it, coerce it if allowed, choose the candidate that is the
// answer and describe what is wrong. It does no I/O.
//
// Which candidate is the answer:
//   - values in reasoning blocks count only when the visible answer holds
//     none, and values quoted in inline code only when nothing else does;
//   - a value inside a larger object or array is part of it, not an answer
//     (an array the finder joined from separate objects hides nothing);
//   - a value followed by a correction ("Actually, …", "Here is the
//     corrected JSON:") is superseded by what follows;
//   - a value a third the size of the largest one left, or smaller, is a
//     fragment quoted in prose; a template ({"name": "..."}) is no value;
//   - the prompt's example, whole or its placeholders in place, is never
//     an answer (judge.example).
//
// Of what remains, values that validate as they are win over values that
// validate only after coercion; if several differ and none is at least
// twice the size of each other one, the answer is ambiguous and re-asked.
// A value that needed a lossy repair is reported (class lossy), never
// accepted here.
func evaluate(resp *llm.Response, j *judge) evaluation {
	switch {
	case resp.Refusal != "":
		return refusal(resp.Refusal)
	case resp.FinishReason == llm.FinishRefusal:
		return refusal(firstLine(resp.Text, "the model refused"))
	case resp.FinishReason == llm.FinishContentFilter:
		return refusal("the provider's content filter stopped the answer")
	case resp.FinishReason == llm.FinishLength:
		// Never accepted even if a repaired prefix validates: a cut-off
		// answer may have silently lost fields or array items.
		return evaluation{class: llm.ClassTruncated, problem: problemTruncated}
	}

	found := find(resp.Text, j)
	var (
		all               = make([]*cand, 0, len(found))
		marker            string
		hasMarker, echoed bool
		copied            []string // where a candidate copied the example
		template          *cand    // the first value made only of placeholders
	)
	for _, f := range found {
		v, err := decodeText(f.JSON, candidateText(f, resp.Text)) // compact and valid JSON, as Find promises
		if err != nil {
			continue
		}
		if r, ok := unextractable(v); ok {
			if !hasMarker {
				marker, hasMarker = r, true
			}
			continue
		}
		if j.down && f.Scalar == jsonx.ScalarText {
			continue
		}
		c := &cand{Candidate: f, v: v, doc: f.JSON, repairs: markLossy(resp.Text, f), join: hasKind(f.Repairs, jsonx.KindJoinedValues)}
		if j.member != "" && f.Scalar != jsonx.NotScalar {
			c.wrapMember(j.member)
		}
		if j.wire != "" {
			c.unwrapWire(j)
		}
		if j.strictForm {
			c.undoStrictNulls(j.s)
		}
		if j.example != nil && c.equalsExample(j.example) {
			echoed = true
			continue
		}
		if at := c.copied(j.placeholders); len(at) > 0 {
			if copied == nil {
				copied = at
			}
			continue
		}
		if shapeOnly(c.v, j.document) {
			if template == nil {
				template = c
			}
			continue // {"name": "...", "email": "..."}: the shape, not an answer
		}
		all = append(all, c)
	}
	ps := principal(all, resp.Text)
	best := choose(ps, j, resp.Text)
	switch {
	case best.class == llm.ClassNone && len(best.lossy) > 0:
		best.class = llm.ClassLossy
		best.problem = problemLossy(best.lossy, resp.Text)
		return best
	case best.class == llm.ClassNone || best.class == llm.ClassAmbiguous:
		return best
	case hasMarker:
		return refusal(marker)
	case best.class == llm.ClassSchema:
		best.problem = problemSchema(best.violations, j.cfg.FeedbackMaxChars)
		return best
	case echoed:
		return evaluation{class: llm.ClassEcho, problem: problemEcho}
	case copied != nil:
		return evaluation{class: llm.ClassEcho, problem: problemCopied(copied)}
	case refusalOpening.MatchString(resp.Text):
		return refusal(firstLine(resp.Text, "the model refused"))
	case template != nil:
		return evaluation{class: llm.ClassTemplate, value: template.doc, problem: problemTemplate(template.doc)}
	}
	return evaluation{class: llm.ClassNoJSON, problem: problemNoJSON}
}

// principal keeps the candidates that may be the answer, in text order.
func principal(all []*cand, text string) []*cand {
	if len(all) == 0 {
		return nil
	}
	visible := slices.ContainsFunc(all, func(c *cand) bool { return !c.Reasoning })
	plain := slices.ContainsFunc(all, func(c *cand) bool { return !c.Reasoning && !inlineCode(text, c) })
	ps := make([]*cand, 0, len(all))
	for _, c := range all {
		if visible && c.Reasoning {
			continue // a draft in the model's reasoning
		}
		if plain && inlineCode(text, c) {
			continue // `{"city": null}` quoted in a sentence about the answer
		}
		inner := false
		for _, o := range all {
			if o != c && !o.join && o.Scalar == jsonx.NotScalar && o.contains(c) {
				inner = true // a part of a larger value, e.g. one item of an array
				break
			}
		}
		if !inner {
			ps = append(ps, c)
		}
	}
	slices.SortStableFunc(ps, func(a, b *cand) int { return a.Start - b.Start })
	// A correction supersedes everything before it; joins span their
	// members, so the text between two candidates is read from the end of
	// the earlier one that ends last.
	from, end := 0, -1
	for i, c := range ps {
		if i > 0 && end >= 0 && end <= c.Start && correction.MatchString(text[end:c.Start]) {
			from = i
		}
		end = max(end, c.End)
	}
	ps = ps[from:]
	widest := 0
	for _, c := range ps {
		widest = max(widest, c.span())
	}
	return slices.DeleteFunc(ps, func(c *cand) bool { return 3*c.span() <= widest })
}

// inlineCode reports whether c sits in an inline code span of the prose
// (`{"a": 1}`), where models quote values they talk about.
func inlineCode(text string, c *cand) bool {
	return !c.Fenced && c.Start > 0 && c.End < len(text) && text[c.Start-1] == '`' && text[c.End] == '`' &&
		(c.Start < 2 || text[c.Start-2] != '`')
}

// correction recognises the prose with which a model replaces a value it
// gave by the next one.
var correction = regexp.MustCompile(`(?i)\b(actually|correction|oops|wait|my (mistake|bad)|i made an? (mistake|error)|let me (fix|correct|redo|revise|re-?check|try (that )?again)|on second thought|(here is|here's|this is|below is) (the|my|a) (corrected|fixed|final|revised|updated|complete|correct)|(corrected|revised|updated|fixed|final) (answer|json|version|output|result|extraction|object)|final\s*:|instead)\b`)

// choose picks the answer among the principal candidates: valid as they
// are first, else valid after coercion; several different values are
// ambiguous unless one dwarfs the others. Without a valid one it returns
// the candidate with the fewest violations (class schema), or class none
// with no value when there is nothing at all.
func choose(ps []*cand, j *judge, text string) evaluation {
	if len(ps) == 0 {
		return evaluation{class: llm.ClassNoJSON}
	}
	var valid []*cand
	for _, c := range ps {
		if c.valid = len(c.violations(j.s)) == 0; c.valid {
			valid = append(valid, c)
		}
	}
	if len(valid) == 0 && j.cfg.Repair == jsonx.PolicyCoerce {
		for _, c := range ps {
			if c.memberOfJoinIn(ps) {
				continue // wrapping one of the joined objects would drop the others
			}
			if inner := c.unwrapEnvelope(j); inner != nil && (inner.valid || coerce(inner, j.s, text)) {
				valid = append(valid, inner)
			} else if coerce(c, j.s, text) {
				valid = append(valid, c)
			}
		}
	}
	if len(valid) > 0 {
		return pick(valid, j.document)
	}
	var best *cand
	for _, c := range ps {
		if best == nil || len(c.vs) < len(best.vs) || len(c.vs) == len(best.vs) && c.span() >= best.span() {
			best = c
		}
	}
	if j.cfg.Repair == jsonx.PolicyCoerce {
		if ev, ok := enumInProse(best.vs, j, text); ok {
			return ev
		}
	}
	return evaluation{class: llm.ClassSchema, value: best.doc, repairs: best.repairs, violations: best.vs}
}

// enumInProse reads the value of an enum or const root named in the
// answer's prose ("The answer is One") when the root's violation lists the
// allowed values: exactly one named is the answer (if it validates), two
// or more make the answer ambiguous.
func enumInProse(vs []schema.Violation, j *judge, text string) (evaluation, bool) {
	for _, v := range vs {
		if v.Pointer != "" || v.Keyword != "enum" && v.Keyword != "const" && !strings.HasSuffix(v.Keyword, "/enum") && !strings.HasSuffix(v.Keyword, "/const") {
			continue
		}
		value, r, named := jsonx.EnumInProse(text, v.Want, v.Aliases)
		if len(named) > 1 {
			return evaluation{class: llm.ClassAmbiguous, problem: problemNamed(named)}, true
		}
		if value == nil {
			return evaluation{}, false
		}
		doc, err := decode(value)
		if err != nil || len(j.s.Validate(doc)) > 0 {
			return evaluation{}, false
		}
		return evaluation{class: llm.ClassNone, value: value, repairs: []llm.Repair{r}}, true
	}
	return evaluation{}, false
}

// pick chooses among valid candidates in text order: the last of equal
// values, the one at least twice the size of every other, else none
// (ambiguous).
func pick(valid []*cand, document string) evaluation {
	widest := valid[0]
	for _, c := range valid[1:] {
		if c.span() > widest.span() {
			widest = c
		}
	}
	chosen := widest
	for _, c := range valid {
		switch {
		case c == widest:
		case bytes.Equal(c.key(), widest.key()):
			if c.Start > chosen.Start {
				chosen = c // the latest of equal values
			}
		case 2*c.span() > widest.span():
			return evaluation{class: llm.ClassAmbiguous, value: widest.doc, repairs: widest.repairs, problem: problemAmbiguous(valid)}
		}
	}
	ev := evaluation{class: llm.ClassNone, value: chosen.doc, repairs: chosen.repairs}
	if mayHoldElision(chosen.doc) {
		if marks := elisions(chosen.v, make([]string, 0, 16), nil, document); len(marks) > 0 {
			slices.SortFunc(marks, func(a, b llm.Repair) int { return strings.Compare(a.Where, b.Where) }) // maps have no order
			ev.repairs = append(slices.Clip(ev.repairs), marks...)
		}
	}
	for _, r := range ev.repairs {
		if r.Lossy {
			ev.lossy = append(ev.lossy, r)
		}
	}
	return ev
}

// kindElidedValue marks a value that stands for content the model left
// out: "..." where a value belongs, "etc." as the last item of a list.
const kindElidedValue = "elided_value"

// elision matches such a value.
var elision = regexp.MustCompile(`(?i)^\s*(\.{2,}|…|etc\.?|and (so on|more)\.?|\[?\.\.\.\]?)\s*$`)

// elisions appends a lossy repair for every string of v that stands for
// left-out content: the value is valid JSON, but not the whole answer.
// path holds the tokens to v; the pointer is built only for a match.
func elisions(v any, path []string, out []llm.Repair, document string) []llm.Repair {
	switch t := v.(type) {
	case string:
		if len(t) <= 16 && mayElide(t) && elision.MatchString(t) && !strings.Contains(document, t) {
			ptr := ""
			for _, tok := range path {
				ptr += "/" + escapeToken.Replace(tok)
			}
			out = append(out, llm.Repair{Kind: kindElidedValue, Where: pointerName(ptr), Detail: fmt.Sprintf("%q stands for content left out", t), Lossy: true})
		}
	case map[string]any:
		for k, x := range t {
			out = elisions(x, append(path, k), out, document)
		}
	case []any:
		for i, x := range t {
			out = elisions(x, append(path, strconv.Itoa(i)), out, document)
		}
	}
	return out
}

// mayHoldElision is elisions' cheap first test, on the value's JSON
// (doc, which holds every string of the value): a string elision matches
// holds "..", "…", "etc" or "and", in any case. JSON in ASCII without
// escapes shows its strings as they are, and ASCII letters fold only to
// ASCII ones; any other JSON may hold one. Walking every value's maps
// for it was a twentieth of evaluating a clean answer.
func mayHoldElision(doc []byte) bool {
	for i, c := range doc {
		if !elisionByte[c] {
			continue
		}
		if c == '\\' || c >= utf8.RuneSelf {
			return true
		}
		switch c | 0x20 {
		case '.':
			if i+1 < len(doc) && doc[i+1] == '.' {
				return true
			}
		case 'e':
			if i+2 < len(doc) && doc[i+1]|0x20 == 't' && doc[i+2]|0x20 == 'c' {
				return true
			}
		case 'a':
			if i+2 < len(doc) && doc[i+1]|0x20 == 'n' && doc[i+2]|0x20 == 'd' {
				return true
			}
		}
	}
	return false
}

// elisionByte marks the bytes mayHoldElision looks at.
var elisionByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= utf8.RuneSelf || strings.IndexByte(`\.eEaA`, byte(c)) >= 0
	}
	return t
}()

// mayElide is elision's cheap first test: how such a string can start.
func mayElide(s string) bool {
	s = strings.TrimLeft(s, " ")
	return s != "" && strings.IndexByte(".eEaA[\xe2", s[0]) >= 0
}

// JSON pointer token escaping (RFC 6901).
var (
	escapeToken   = strings.NewReplacer("~", "~0", "/", "~1")
	unescapeToken = strings.NewReplacer("~1", "/", "~0", "~")
)

// memberOfJoinIn reports whether c is one of the objects of a joined array
// among ps.
func (c *cand) memberOfJoinIn(ps []*cand) bool {
	for _, o := range ps {
		if o.join && o.contains(c) {
			return true
		}
	}
	return false
}

// coerce applies schema-guided coercions until the candidate validates or
// nothing changes, and reports whether it validates. The candidate keeps
// the last state either way.
func coerce(c *cand, s *schema.Schema, text string) bool {
	doc, repairs, vs := c.doc, c.repairs, c.vs
	for range maxCoerceRounds {
		out, rs, changed := jsonx.Coerce(doc, vs)
		if !changed {
			break
		}
		out = compact(out)
		v, err := decode(out)
		if err != nil {
			break
		}
		doc, vs = out, s.Validate(v)
		for i, r := range rs {
			if r.Kind == jsonx.KindCoerceToString && !writtenAsIs(text, r) {
				rs[i].Lossy = true
			}
		}
		repairs = append(append([]llm.Repair(nil), repairs...), rs...)
		c.v, c.doc, c.repairs, c.vs, c.vsFresh, c.coerced, c.canonValid = v, doc, repairs, vs, true, true, false
		if len(vs) == 0 {
			c.valid = true
			return true
		}
	}
	return false
}

// kindUnwrapEnvelope is the coercion that takes the value out of the
// envelope a model put around it.
const kindUnwrapEnvelope = "coerce_unwrap_envelope"

// unwrapEnvelope returns the value inside an envelope the schema does not
// describe, as a new candidate validated as it is: a tool call written as
// text ({"name": "extract", "arguments": {…}}, also "parameters") or a
// one-member wrapper ({"data": {…}}, {"result": …}). nil when c is no such
// envelope or the schema has the wrapper's key itself, and for a string
// inside when the root takes strings: {"hi": "hello"} for a string root
// may as well mean the text as written, so taking "hello" would be a guess.
func (c *cand) unwrapEnvelope(j *judge) *cand {
	s := j.s
	m, ok := c.v.(map[string]any)
	if !ok {
		return nil
	}
	var key string
	switch len(m) {
	case 1:
		for k := range m {
			key = k
		}
	case 2:
		if _, named := m["name"].(string); named {
			for _, k := range []string{"arguments", "parameters"} {
				if _, ok := m[k].(map[string]any); ok {
					key = k
				}
			}
		}
	}
	if key == "" {
		return nil
	}
	for _, v := range c.vs {
		if v.Pointer == "/"+key && v.Keyword != "additionalProperties" {
			return nil // the schema knows the key: not an envelope
		}
	}
	if !slices.ContainsFunc(c.vs, func(v schema.Violation) bool { return v.Pointer == "/"+key && v.Keyword == "additionalProperties" }) {
		return nil
	}
	inner := m[key]
	if _, text := inner.(string); text && j.scalars&jsonx.ScalarString != 0 {
		return nil
	}
	doc, err := marshalValue(inner)
	if err != nil {
		return nil
	}
	n := &cand{Candidate: c.Candidate, v: inner, doc: doc, coerced: true}
	n.repairs = append(slices.Clip(c.repairs), llm.Repair{Kind: kindUnwrapEnvelope, Where: "/" + key, Detail: fmt.Sprintf("took the value out of {%q: …}", key)})
	n.vs = s.Validate(inner)
	n.valid = len(n.vs) == 0
	return n
}

// writtenAsIs reports whether the number a coerce_to_string repair turned
// into text (Detail `4366412345678 -> "4366412345678"`) stands in the
// answer as it is. When it does not, the finder read it from another
// spelling (+4366412345678, a phone number) and the text lost its sign or
// format: the coercion is lossy.
func writtenAsIs(text string, r llm.Repair) bool {
	num, _, ok := strings.Cut(r.Detail, " -> ")
	if !ok || num == "" || num == "true" || num == "false" {
		return true
	}
	for i := 0; ; {
		k := strings.Index(text[i:], num)
		if k < 0 {
			return false
		}
		at, end := i+k, i+k+len(num)
		before, after := byte(' '), byte(' ')
		if at > 0 {
			before = text[at-1]
		}
		if end < len(text) {
			after = text[end]
		}
		if !strings.ContainsRune("+-.0123456789", rune(before)) && !strings.ContainsRune(".0123456789eE", rune(after)) {
			return true
		}
		i = at + 1
	}
}

// equalsExample reports whether c's value is the prompt's example.
func (c *cand) equalsExample(example []byte) bool {
	// The canonical form is at most a little longer or shorter than the
	// compact one (key order, number spelling): a quick size check spares
	// encoding answers that cannot be the example.
	if n := len(c.doc); n > 2*len(example)+16 || 2*n+16 < len(example) {
		return false
	}
	return bytes.Equal(c.key(), example)
}

// unwrapWire replaces {"<wire>": v} by v: the answer of a strict or tools
// call whose wire form wrapped the root, when the adapter could not unwrap
// it (it needed repair first). A value that validates as it is stays.
func (c *cand) unwrapWire(j *judge) {
	m, ok := c.v.(map[string]any)
	if !ok || len(m) != 1 {
		return
	}
	inner, ok := m[j.wire]
	if !ok || len(c.violations(j.s)) == 0 {
		return
	}
	doc, err := marshalValue(inner)
	if err != nil {
		return
	}
	// Not a repair: the wire form asked for the wrapper.
	c.v, c.doc, c.canonValid, c.vsFresh = inner, doc, false, false
}

// undoStrictNulls removes the nulls a strict wire form asked for: such a
// form makes every optional field required and nullable, so a model
// answers null for "absent". A null member goes where the original schema
// does not allow null there and removing it leaves fewer violations (a
// required field's null stays, for the feedback to name). Not a repair:
// it undoes the wire form, whatever the repair policy.
func (c *cand) undoStrictNulls(s *schema.Schema) {
	vs := c.violations(s)
	changed := false
	for _, v := range vs {
		if v.Keyword != "type" && !strings.HasSuffix(v.Keyword, "/type") || v.Value != "null" || v.Pointer == "" {
			continue
		}
		parent, key := v.Pointer[:strings.LastIndexByte(v.Pointer, '/')], unescapeToken.Replace(v.Pointer[strings.LastIndexByte(v.Pointer, '/')+1:])
		var path []string
		if parent != "" {
			for _, tok := range strings.Split(parent[1:], "/") {
				path = append(path, unescapeToken.Replace(tok))
			}
		}
		obj, ok := lookup(c.v, path).(map[string]any)
		if !ok {
			continue
		}
		if x, ok := obj[key]; !ok || x != nil {
			continue
		}
		delete(obj, key)
		if after := s.Validate(c.v); len(after) >= len(vs) {
			obj[key] = nil // required: the null is the model's to fix
			continue
		} else {
			vs = after
		}
		c.vs = vs // c.v's violations now
		changed = true
	}
	if !changed {
		return
	}
	if doc, err := marshalValue(c.v); err == nil {
		c.doc, c.canonValid = doc, false
	}
}

// find returns the candidates of an answer; a schema whose root is a
// scalar also lets the finder offer bare scalars.
func find(text string, j *judge) []jsonx.Candidate {
	return jsonx.FindWith(text, jsonx.FindOptions{Policy: j.cfg.Repair, Scalars: j.scalars})
}

// schemaFacts is what every Run reads of its schema, derived once per
// schema and kept in one cache entry: reading the root's scalar kinds
// decodes the whole schema (a tenth of a fleet worker's CPU when done per
// document), and four look-ups of separate caches plus the wire property's
// two of the schema's own form cache were a twentieth of a clean answer's
// instructions.
type schemaFacts struct {
	text    string            // the schema's JSON as a string, for the prompt data
	scalars jsonx.ScalarKinds // rootScalarKinds
	down    levelDown         // oneLevelDown
	wire    string            // wireProperty
}

// factsCache keeps schemaFacts of the schemas in use.
var factsCache = &schemaCache[*schemaFacts]{build: func(s *schema.Schema) *schemaFacts {
	m, k := oneLevelDown(s)
	return &schemaFacts{text: string(s.JSON()), scalars: rootScalarKinds(s), down: levelDown{m, k}, wire: wireProperty(s)}
}}

// levelDown is what oneLevelDown finds in a schema.
type levelDown struct {
	member string
	kinds  jsonx.ScalarKinds
}

// pinnedCache keeps pinnedStrings of the schemas in use; its maps are
// only read.
var pinnedCache = &schemaCache[map[string]bool]{build: pinnedStrings}

// maxCachedSchemas bounds a schemaCache: past it the cache starts again
// empty (a process rarely uses more schemas than that at once).
const maxCachedSchemas = 256

// schemaCache holds a value derived from each *schema.Schema, by identity;
// its weak keys keep no schema alive.
type schemaCache[T any] struct {
	build func(*schema.Schema) T
	mu    sync.Mutex
	m     map[weak.Pointer[schema.Schema]]T
}

func (c *schemaCache[T]) get(s *schema.Schema) T {
	k := weak.Make(s)
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = c.build(s)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedSchemas {
		c.m = make(map[weak.Pointer[schema.Schema]]T)
	}
	c.m[k] = v
	c.mu.Unlock()
	return v
}

// rootScalarKinds returns the scalar kinds the root of s accepts, read
// from its type, enum and const, through anyOf, oneOf, allOf and local
// references; every kind for a scalar root it cannot read, none for a root
// that takes only objects and arrays.
func rootScalarKinds(s *schema.Schema) jsonx.ScalarKinds {
	var root any
	_ = json.Unmarshal(s.JSON(), &root)
	k := scalarKinds(root, root, 0)
	if k == 0 && s.ScalarRoot() {
		return jsonx.AnyScalar
	}
	return k
}

// oneLevelDown returns, for a root that takes no scalar, the scalar kinds
// one level down: those of the only property of an object root (and its
// name), or of the items of an array root.
func oneLevelDown(s *schema.Schema) (member string, k jsonx.ScalarKinds) {
	var root map[string]any
	if json.Unmarshal(s.JSON(), &root) != nil {
		return "", 0
	}
	if props, ok := root["properties"].(map[string]any); ok && len(props) == 1 {
		for name, p := range props {
			if k = scalarKinds(root, p, 0); k != 0 {
				return name, k
			}
		}
	}
	if items, ok := root["items"].(map[string]any); ok {
		return "", scalarKinds(root, items, 0)
	}
	return "", 0
}

// kindWrapObject is the coercion that puts a bare scalar answer in the
// only property of an object root: 1214 -> {"foo": 1214}.
const kindWrapObject = "coerce_wrap_object"

// wrapMember replaces a scalar candidate's value v by {name: v}.
func (c *cand) wrapMember(name string) {
	v := map[string]any{name: c.v}
	doc, err := marshalValue(v)
	if err != nil {
		return
	}
	c.repairs = append(slices.Clip(c.repairs), llm.Repair{Kind: kindWrapObject, Detail: fmt.Sprintf("%s -> %s", clip(string(c.doc), 80), clip(string(doc), 80))})
	c.v, c.doc, c.coerced, c.canonValid, c.vsFresh = v, doc, true, false, false
}

func scalarKinds(doc, node any, depth int) jsonx.ScalarKinds {
	m, ok := node.(map[string]any)
	if !ok || depth > 8 {
		return 0
	}
	var k jsonx.ScalarKinds
	switch t := m["type"].(type) {
	case string:
		k |= jsonx.ScalarKindsOf([]string{t})
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				k |= jsonx.ScalarKindsOf([]string{s})
			}
		}
	}
	values, _ := m["enum"].([]any)
	if c, ok := m["const"]; ok {
		values = append(values, c)
	}
	for _, v := range values {
		switch v.(type) {
		case string:
			k |= jsonx.ScalarString
		case float64:
			k |= jsonx.ScalarNumber
		case bool:
			k |= jsonx.ScalarBoolean
		case nil:
			k |= jsonx.ScalarNull
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		list, _ := m[kw].([]any)
		for _, b := range list {
			k |= scalarKinds(doc, b, depth+1)
		}
	}
	if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
		target := doc
		for _, tok := range strings.Split(ref[2:], "/") {
			tm, _ := target.(map[string]any)
			target = tm[unescapeToken.Replace(tok)]
		}
		k |= scalarKinds(doc, target, depth+1)
	}
	return k
}

// wireProperty is the property a strict or tools wire form wraps the root
// of s in, or "" when the root travels as it is. The name depends on the
// root only ("value" for a scalar or mixed root, "items" for an array), so
// it is the same whichever form the adapter sends.
func wireProperty(s *schema.Schema) string {
	for _, f := range []schema.Form{schema.FormOpenAI, schema.FormGemini} {
		if p, ok := s.WireWrapped(f); ok {
			return p
		}
	}
	return ""
}

func refusal(reason string) evaluation {
	return evaluation{class: llm.ClassRefusal, reason: reason, problem: problemRefusal(reason)}
}

// refusalOpening recognises a plain-text refusal. It is consulted only when
// the answer holds no JSON at all.
var refusalOpening = regexp.MustCompile(`(?i)^\s*(i'?m sorry|i am sorry|sorry, |i apologi[sz]e|i can(?:'|no)t|i am unable|i'?m unable|i won'?t|i will not|as an ai)`)

// firstLine returns the first line of s, bounded, or def when s is blank.
func firstLine(s, def string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return def
	}
	return s
}

func compact(doc []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(doc))
	if json.Compact(&b, doc) != nil {
		return doc
	}
	return b.Bytes()
}

// decode parses one JSON value with numbers as json.Number, as
// schema.Validate expects; trailing data is an error. The usual value is
// read by decodeFast; what it does not take goes to encoding/json.
func decode(doc []byte) (any, error) { return decodeText(doc, string(doc)) }

// decodeText is decode of doc whose text s already is (s == string(doc)):
// its keys, strings and numbers are substrings of s, with no copy of doc.
func decodeText(doc []byte, s string) (any, error) {
	d := fastDecoder{Scanner: jsonx.Scanner{B: doc}, s: s}
	if v, ok := d.value(0); ok {
		if d.Ws(); d.I == len(doc) {
			return v, nil
		}
	}
	return decodeJSON(doc)
}

// candidateText returns f's JSON as a string: the answer's own text where
// the finder copied it unchanged (the usual, compact answer), else a copy.
// Copying it for the decode was one allocation per candidate.
func candidateText(f jsonx.Candidate, text string) string {
	if 0 <= f.Start && f.Start <= f.End && f.End <= len(text) && text[f.Start:f.End] == string(f.JSON) {
		return text[f.Start:f.End]
	}
	return string(f.JSON)
}

// decodeJSON is decode by encoding/json's Decoder.
func decodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailing
	}
	return v, nil
}

var errTrailing = errors.New("trailing data after the JSON value")

// maxFastDepth bounds decodeFast's recursion; deeper values go to
// encoding/json, which has its own limit.
const maxFastDepth = 64

// fastDecoder is decodeFast's state: the scanner over the text and the
// text as one string, of which keys, plain strings and numbers are
// substrings. One copy of the text instead of one per key, string and
// number was a third of decoding's allocations, on every candidate.
type fastDecoder struct {
	jsonx.Scanner
	s     string // string(B)
	boxes        // the strings' and numbers' interface values
}

// decodeFast reads one value of doc as a Decoder with UseNumber decodes
// it into an any (see fastDecoder.value).
func decodeFast(d *jsonx.Scanner, depth int) (any, bool) {
	f := fastDecoder{Scanner: *d, s: string(d.B)}
	v, ok := f.value(depth)
	d.I = f.I
	return v, ok
}

// value reads one value as a Decoder with UseNumber decodes it into an
// any (objects as map[string]any, a repeated key's last value kept,
// arrays as []any, numbers as json.Number of their literal), without the
// Decoder's copy of the text and its reflection: decoding each candidate
// was a seventh of the worker's allocations. It returns false for what it
// does not take (a key with escapes or non-ASCII bytes, invalid UTF-8, a
// lone surrogate, deep nesting, bad JSON), which decode then leaves to
// encoding/json. TestDecodeFastMatchesJSON and FuzzDecode check that
// whenever it returns true the value is what encoding/json makes.
func (d *fastDecoder) value(depth int) (any, bool) {
	d.Ws()
	if d.I >= len(d.B) || depth > maxFastDepth {
		return nil, false
	}
	switch c := d.B[d.I]; c {
	case '{':
		return d.object(depth)
	case '[':
		// Room for a few items up front: growing from empty took an
		// allocation per doubling.
		a := make([]any, 0, 4)
		ok := d.Array(func() bool {
			v, ok := d.value(depth + 1)
			a = append(a, v)
			return ok
		})
		return a, ok
	case '"':
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		return d.boxes.str(s), true
	case 't', 'f':
		v, ok := d.Bool()
		return v, ok
	case 'n':
		return nil, d.Null()
	}
	start := d.I
	if _, _, ok := d.Number(); !ok {
		return nil, false
	}
	return d.num(d.s[start:d.I]), true
}

// object reads {"key": value, …} as jsonx.Scanner.Object does, its keys
// substrings of the text.
func (d *fastDecoder) object(depth int) (any, bool) {
	m := map[string]any{}
	if !d.Next('{') {
		return m, false
	}
	if d.Next('}') {
		return m, true
	}
	for {
		d.Ws()
		at := d.I + 1
		key, ok := d.PlainKey()
		if !ok || !d.Next(':') {
			return m, false
		}
		d.Ws()
		v, ok := d.value(depth + 1)
		m[d.s[at:at+len(key)]] = v
		if !ok {
			return m, false
		}
		if d.Next(',') {
			continue
		}
		return m, d.Next('}')
	}
}

// str reads a string as jsonx.Scanner.Str does; one without escapes is a
// substring of the text.
func (d *fastDecoder) str() (string, bool) {
	j, high := jsonx.PlainSpan(d.B, d.I+1)
	if j >= len(d.B) || d.B[j] != '"' {
		if j < len(d.B) && d.B[j] == '\\' {
			return d.Str() // escapes are decoded
		}
		return "", false
	}
	if high && !utf8.Valid(d.B[d.I+1:j]) {
		return "", false
	}
	s := d.s[d.I+1 : j]
	d.I = j + 1
	return s, true
}

// marshalValue encodes a decoded value compactly, leaving <, > and & as
// they are.
func marshalValue(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// canonical encodes a decoded value so that equal values encode equally:
// keys sorted, numbers in their shortest form (1.50 and 1.5 are equal).
func canonical(v any) []byte {
	b, err := json.Marshal(normalizeNumbers(v))
	if err != nil {
		return nil
	}
	return b
}

func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if f, err := strconv.ParseFloat(string(t), 64); err == nil {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = normalizeNumbers(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalizeNumbers(x)
		}
		return out
	}
	return v
}

// unextractable reports whether v is the {"_unextractable": reason} answer.
func unextractable(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	r, ok := m[unextractableKey]
	if !ok {
		return "", false
	}
	s, _ := r.(string)
	if s == "" {
		s = "no reason given"
	}
	return s, true
}

func hasKind(rs []llm.Repair, kind string) bool {
	for _, r := range rs {
		if r.Kind == kind {
			return true
		}
	}
	return false
}

// markLossy marks as lossy, besides what the finder marked, repairs whose
// reading may differ from what the model meant: a removed comment that
// says content was left out ("// ... 14 more items"); an unquoted value
// holding quotes or backslashes, or written /like this/, a construct the
// parser could not read (new Date("…"), a JavaScript regex literal);
// and a whole answer taken as a string when it reads as a sentence about
// the value rather than the value ("The company is headquartered in
// Zurich."). c.Repairs is not modified.
func markLossy(text string, c jsonx.Candidate) []llm.Repair {
	rs := c.Repairs
	var out []llm.Repair
	for i, r := range rs {
		if r.Lossy || !elided(text, r) && !(c.Scalar == jsonx.ScalarText && r.Kind == jsonx.KindUnquotedString && sentence(text[c.Start:c.End])) {
			continue
		}
		if out == nil {
			out = slices.Clone(rs)
		}
		out[i].Lossy = true
	}
	if out == nil {
		return rs
	}
	return out
}

// elided reports a comment that stands for omitted content, or an
// unquoted value that swallowed quotes.
func elided(text string, r llm.Repair) bool {
	switch r.Kind {
	case jsonx.KindComment:
		at, err := strconv.Atoi(strings.TrimPrefix(r.Where, "@"))
		if err != nil || at < 0 || at >= len(text) {
			return false
		}
		c := text[at:]
		end := strings.IndexByte(c, '\n')
		if strings.HasPrefix(c, "/*") {
			end = strings.Index(c, "*/")
		}
		if end >= 0 {
			c = c[:end]
		}
		return omission.MatchString(c)
	case jsonx.KindUnquotedString:
		v, err := strconv.Unquote(strings.TrimPrefix(r.Detail, "quoted "))
		return err == nil && (strings.ContainsAny(v, `"\`) || len(v) > 2 && v[0] == '/' && strings.LastIndexByte(v, '/') > 0)
	}
	return false
}

// sentence reports whether text reads as prose rather than a bare value:
// several lines, more than four words, or a sentence's final punctuation.
// Many words alone are not prose: "1 cup unsalted butter, room
// temperature" is a value; "The company is in Zurich" says what it is.
func sentence(text string) bool {
	t := strings.TrimSpace(text)
	return strings.ContainsAny(t, "\n") || len(strings.Fields(t)) > 4 && aboutTheValue.MatchString(t) || strings.HasSuffix(t, ".") || strings.HasSuffix(t, "!") || strings.HasSuffix(t, "?")
}

// aboutTheValue matches the words with which prose talks about a value
// instead of being it.
var aboutTheValue = regexp.MustCompile(`(?i)\b(is|are|was|were|be|been|answer|value|result|seems?|appears?|i|we|it|this|that|there|here|based|according|document|text|mentioned|stated|says?|said|think|believe|likely|probably|found|extracted|cannot|can't|not)\b|:`)

// omission recognises a comment that says content was left out.
var omission = regexp.MustCompile(`(?i)(\.\.\.|…|\b(more|omitted|omit|truncated|remaining|rest|etc|and so on|similar|abbreviated|snip(ped)?)\b)`)

// near quotes the answer around byte offset at ("@123"), on one line, for
// a feedback that says where a guess was made.
func near(text, where string) string {
	at, err := strconv.Atoi(strings.TrimPrefix(where, "@"))
	if err != nil || !strings.HasPrefix(where, "@") || at < 0 || at > len(text) {
		return ""
	}
	lo, hi := max(0, at-24), min(len(text), at+24)
	for lo > 0 && !utf8.RuneStart(text[lo]) {
		lo--
	}
	for hi < len(text) && !utf8.RuneStart(text[hi]) {
		hi++
	}
	s := strings.Join(strings.Fields(text[lo:hi]), " ")
	if lo > 0 {
		s = "…" + s
	}
	if hi < len(text) {
		s += "…"
	}
	return s
}
