package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/extractq/extractq/internal/jsonx"
)

// draws are one request's random decisions, all made up front in a fixed
// order so that what one fault consumes never shifts another.
type draws struct {
	transport faultID // numFaults when none
	output    [numFaults]bool
	// fixed is a re-ask the model got right this time.
	fixed bool
}

func (s *Server) draw(r *rng, reask bool) draws {
	d := draws{transport: numFaults}
	u := r.unit()
	for f := fStatus500; f <= fDrop; f++ {
		if u < s.rates[f] {
			d.transport = f
			break
		}
		u -= s.rates[f]
	}
	fix := r.unit()
	for f := fCodeFence; f <= fRefusal; f++ { // completion faults are drawn by continueJSON
		d.output[f] = r.unit() < s.rates[f]
	}
	if reask && fix < s.prof.FixProbability {
		d.output, d.fixed = [numFaults]bool{}, true
	}
	return d
}

// faultRates lays a profile's rates out by faultID.
func faultRates(p Profile) [numFaults]float64 {
	var r [numFaults]float64
	r[fStatus500], r[fStatus503], r[fStatus529] = p.Errors.Status500, p.Errors.Status503, p.Errors.Status529
	r[fTimeout], r[fDrop] = p.Errors.Timeout, p.Errors.Drop
	f := p.Faults
	r[fCodeFence], r[fProse], r[fTrailingComma], r[fSingleQuotes] = f.CodeFence, f.Prose, f.TrailingComma, f.SingleQuotes
	r[fMissingRequired], r[fWrongType], r[fEnumOutside], r[fExtraField] = f.MissingRequired, f.WrongType, f.EnumOutside, f.ExtraField
	r[fTruncation], r[fRefusal] = f.Truncation, f.Refusal
	r[fOverrunStop], r[fNumberWords] = p.Completion.OverrunStop, p.Completion.NumberWords
	return r
}

// allowed reports whether an output fault can hit an answer in this mode:
// under "realistic" fault modes each mode keeps its promise; under "all"
// only what the wire format makes impossible is left out.
func allowed(f faultID, a api, req *chatRequest, all bool) bool {
	objectInput := req.tool != "" && a != apiOpenAI // a tool input object, not text
	switch f {
	case fMissingRequired, fWrongType, fEnumOutside, fExtraField:
		return all || req.mode <= modeJSON
	case fTrailingComma, fSingleQuotes:
		return !objectInput && (all || req.mode == modeText)
	case fCodeFence, fProse:
		return req.tool == "" && (all || req.mode == modeText)
	}
	return true // truncation and refusal happen in every mode
}

// answer is the model's reply before it is put in an API's shape.
type answer struct {
	text string // content, or the tool call's arguments
	// refusal is set instead of text where the API has a refusal field.
	refusal   string
	truncated bool
	applied   [numFaults]bool
	// quoted, unless empty, is quotedText quoted as the inside of a JSON
	// string (by the answer's skeleton): the reply writes it for text
	// while text is still quotedText, instead of quoting text again.
	quoted, quotedText string
}

// appendText appends text as jsonx.AppendString quotes it.
func (a *answer) appendText(b []byte) []byte {
	if a.quoted != "" && a.text == a.quotedText {
		b = append(b, '"')
		b = append(b, a.quoted...)
		return append(b, '"')
	}
	return jsonx.AppendString(b, a.text, false)
}

const (
	emptyDocument   = `{"_unextractable":"the document is empty"}`
	unextractable   = `{"_unextractable":"the document does not contain the requested information"}`
	refusalText     = "I'm sorry, but I can't help with extracting that information from this document."
	openAIRefusal   = "I'm sorry, but I can't assist with that request."
	extraFieldName  = "confidence"
	extraFieldValue = json.Number("0.87")
)

// compose builds the reply: the clean value, then the drawn faults the mode
// allows, each recorded in applied.
func (s *Server) compose(a api, req *chatRequest, pr *prompt, sh *shape, d *draws, r *rng) (answer, *apiError) {
	var ans answer
	if strings.TrimSpace(pr.document) == "" && req.mode != modeStrict {
		ans.text = emptyDocument
		return ans, nil
	}
	all := s.prof.FaultModes == FaultModesAll
	on := func(f faultID) bool { return d.output[f] && allowed(f, a, req, all) }
	if on(fRefusal) {
		ans.applied[fRefusal] = true
		switch {
		case a == apiOpenAI:
			ans.refusal = openAIRefusal
		case req.tool != "" || r.intn(2) == 0:
			ans.text = unextractable
		default:
			ans.text = refusalText
		}
		return ans, nil
	}
	text, quoted, aerr := s.cleanText(pr, sh, &ans, r, on)
	if aerr != nil {
		return ans, aerr
	}
	ans.quoted, ans.quotedText = quoted, text
	if on(fTrailingComma) {
		if i := strings.LastIndexAny(text, "}]"); i > 0 {
			text = text[:i] + "," + text[i:]
			ans.applied[fTrailingComma] = true
		}
	}
	if on(fSingleQuotes) && strings.Contains(text, `"`) {
		text = singleQuoted(text)
		ans.applied[fSingleQuotes] = true
	}
	if on(fCodeFence) {
		text = "```json\n" + text + "\n```"
		ans.applied[fCodeFence] = true
	}
	if on(fProse) {
		intro := [...]string{"Here is the extracted data:\n\n", "Sure! Based on the document, here is the JSON:\n", "The document yields the following.\n\n"}
		text = intro[r.intn(len(intro))] + text + "\n\nLet me know if you need anything else."
		ans.applied[fProse] = true
	}
	if on(fTruncation) {
		cut := len(text) * (30 + r.intn(50)) / 100
		text = cutText(text, max(1, cut))
		ans.truncated, ans.applied[fTruncation] = true, true
	}
	ans.text = text
	return ans, nil
}

// semanticFaults are the faults that change the value, not its text.
var semanticFaults = [...]struct {
	f     faultID
	apply func(any, *shape, *rng) bool
}{
	{fMissingRequired, dropRequired},
	{fWrongType, wrongType},
	{fEnumOutside, enumOutside},
	{fExtraField, extraField},
}

// cleanText is the answer's JSON text with the semantic faults on applied
// (recorded in ans.applied): the document's labelled
// answer, or the shape's value. A schema's answer without a semantic fault
// is written from its template's skeleton (skeleton.go), the same bytes.
func (s *Server) cleanText(pr *prompt, sh *shape, ans *answer, r *rng, on func(faultID) bool) (text, quoted string, aerr *apiError) {
	v, known := s.answers.lookup(pr.document)
	if known {
		v = fitAnswer(v, sh)
	} else {
		semantic := false
		for _, x := range semanticFaults {
			semantic = semantic || on(x.f)
		}
		if !semantic && sh.schema != nil && useSkeletons {
			text, quoted, ok, err := sh.text(s.seed, pr.docHash, pr.document)
			if err != nil {
				return "", "", invalid("%v", err)
			}
			if ok {
				return text, quoted, nil
			}
		}
		var err error
		if v, err = sh.value(s.seed, pr.docHash, pr.document); err != nil {
			return "", "", invalid("%v", err)
		}
	}
	for _, x := range semanticFaults {
		if on(x.f) {
			ans.applied[x.f] = x.apply(v, sh, r)
		}
	}
	text, err := encodeJSON(v)
	if err != nil {
		return "", "", invalid("simulator cannot encode its answer: %v", err)
	}
	return text, "", nil
}

// useSkeletons is false only in tests that compare answers both ways.
var useSkeletons = true

// cutText cuts s to at most n bytes without splitting a UTF-8 sequence.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// topObject is the object faults aim at: the answer, or the first element
// of an array answer.
func topObject(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case []any:
		if len(x) > 0 {
			m, _ := x[0].(map[string]any)
			return m
		}
	}
	return nil
}

func dropRequired(v any, sh *shape, r *rng) bool {
	obj := topObject(v)
	var present []string
	for _, k := range sh.required {
		if _, ok := obj[k]; ok {
			present = append(present, k)
		}
	}
	if len(present) == 0 {
		return false
	}
	delete(obj, present[r.intn(len(present))])
	return true
}

func wrongType(v any, _ *shape, r *rng) bool {
	obj := topObject(v)
	keys := slices.Sorted(maps.Keys(obj))
	if len(keys) == 0 {
		return false
	}
	start := r.intn(len(keys))
	for i := range keys {
		k := keys[(start+i)%len(keys)]
		var nv any
		switch x := obj[k].(type) {
		case string:
			nv = json.Number(strconv.Itoa(len(x)))
		case json.Number:
			nv = string(x) // "42" for 42, the commonest slip
		case bool:
			nv = strconv.FormatBool(x)
		case []any:
			if len(x) == 0 {
				nv = "none"
			} else {
				nv = x[0] // a lone value for a list
			}
		case map[string]any:
			nv = "see document"
		default:
			continue // null: nothing to mistype
		}
		obj[k] = nv
		return true
	}
	return false
}

func enumOutside(v any, sh *shape, r *rng) bool {
	n := len(sh.enums)
	if n == 0 {
		return false
	}
	start := r.intn(n)
	for i := range n {
		e := sh.enums[(start+i)%n]
		_, changed := updateOK(v, e.path, func(old any) (any, bool) {
			s, ok := old.(string)
			if !ok {
				return old, false
			}
			for _, c := range []string{strings.ToUpper(s), "other", "not_" + s} {
				if !slices.Contains(e.values, c) {
					return c, true
				}
			}
			return old, false
		})
		if changed {
			return true
		}
	}
	return false
}

func extraField(v any, _ *shape, _ *rng) bool {
	obj := topObject(v)
	if obj == nil {
		return false
	}
	name := extraFieldName
	for _, taken := obj[name]; taken; _, taken = obj[name] {
		name = "_" + name
	}
	obj[name] = extraFieldValue
	return true
}

// singleQuoted rewrites every JSON string with single quotes, as models
// trained on Python literals do.
func singleQuoted(js string) string {
	var b strings.Builder
	b.Grow(len(js) + 8)
	for i := 0; i < len(js); i++ {
		c := js[i]
		if c != '"' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('\'')
		for i++; i < len(js) && js[i] != '"'; i++ {
			switch c := js[i]; {
			case c == '\\' && i+1 < len(js) && js[i+1] == '"':
				b.WriteByte('"')
				i++
			case c == '\\' && i+1 < len(js):
				b.WriteByte(c)
				i++
				b.WriteByte(js[i])
			case c == '\'':
				b.WriteString(`\'`)
			default:
				b.WriteByte(c)
			}
		}
		b.WriteByte('\'')
	}
	return b.String()
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeJSON writes a decoded JSON value compactly, keys sorted, without
// HTML escaping, as models write it. It is the hot path of every answer,
// hence not encoding/json's reflection.
func encodeJSON(v any) (string, error) {
	b, err := appendJSON(make([]byte, 0, 512), v)
	return string(b), err
}

func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case json.Number:
		return append(b, x...), nil
	case string:
		return appendString(b, x), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		var buf [32]string // most objects fit: no allocation for the keys
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			var err error
			if b, err = appendJSON(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("simulator cannot encode a %T", v)
}

// appendString quotes s as a JSON string, as the simulated model writes
// it. Not jsonx.AppendString: that one is encoding/json's quoting, which
// replaces invalid UTF-8 and escapes U+2028/2029, \b and \f; the model's
// answer keeps them as they are, so that replies and token counts stay
// what they have always been.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	return append(append(b, s[start:]...), '"')
}
