package retry

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"

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
}

// unextractableKey marks the answer a model gives when the document lacks
// the data (the prompt convention shared with the simulator).
const unextractableKey = "_unextractable"

// maxCoerceRounds bounds schema-guided coercion: one round can reveal the
// next violation (a lone value wrapped into an array whose item then needs
// converting).
const maxCoerceRounds = 3

// evaluate is the engine's own work on one answer: find the JSON, repair it,
// validate it, coerce it if allowed, pick the best candidate and describe
// what is wrong. It does no I/O.
func evaluate(resp *llm.Response, s *schema.Schema, cfg *Config) evaluation {
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

	cands := jsonx.Find(resp.Text, cfg.Repair)
	var (
		best      evaluation
		haveBest  bool
		marker    string
		hasMarker bool
		decoded   = make([]candidate, 0, len(cands))
	)
	for _, c := range cands {
		doc := c.JSON // compact and valid JSON, as Find promises
		v, err := decode(doc)
		if err != nil {
			continue // not JSON after all: nothing to validate
		}
		if r, ok := unextractable(v); ok {
			if !hasMarker {
				marker, hasMarker = r, true
			}
			continue
		}
		vs := s.Validate(v)
		ev := evaluation{class: llm.ClassSchema, value: doc, repairs: c.Repairs, violations: vs}
		if len(vs) == 0 {
			ev.class = llm.ClassNone
			return ev
		}
		decoded = append(decoded, candidate{doc: doc, repairs: c.Repairs, vs: vs})
		if !haveBest || len(vs) < len(best.violations) {
			best, haveBest = ev, true
		}
	}
	if cfg.Repair == jsonx.PolicyCoerce {
		for _, c := range decoded {
			if ev, ok := coerce(c, s); ok {
				return ev
			} else if len(ev.violations) < len(best.violations) {
				best = ev
			}
		}
	}
	switch {
	case hasMarker:
		return refusal(marker)
	case haveBest:
		best.problem = problemSchema(best.violations, cfg.FeedbackMaxChars)
		return best
	case refusalOpening.MatchString(resp.Text):
		return refusal(firstLine(resp.Text, "the model refused"))
	}
	return evaluation{class: llm.ClassNoJSON, problem: problemNoJSON}
}

type candidate struct {
	doc     []byte
	repairs []llm.Repair
	vs      []schema.Violation
}

// coerce applies schema-guided coercions until the candidate validates or
// nothing changes. It returns the candidate as far as it got.
func coerce(c candidate, s *schema.Schema) (evaluation, bool) {
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
		repairs = append(append([]llm.Repair(nil), repairs...), rs...)
		if len(vs) == 0 {
			return evaluation{class: llm.ClassNone, value: doc, repairs: repairs}, true
		}
	}
	return evaluation{class: llm.ClassSchema, value: doc, repairs: repairs, violations: vs}, false
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
// schema.Validate expects; trailing data is an error.
func decode(doc []byte) (any, error) {
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
