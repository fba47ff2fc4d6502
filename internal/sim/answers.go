package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/extractq/extractq/document"
	"github.com/extractq/extractq/eval"
)

// AnswerKey holds the values the simulator answers for documents it knows:
// a labelled document gets its label as the model's answer, and the
// profile's faults (fences, prose, broken syntax, schema slips, refusals)
// still apply on top, so a run shows repairs and re-asks on the way to
// correct values. A document the key does not hold is answered as without
// a key: values drawn from the text's words, not read from it.
//
// Documents are known by their text (white space at either end ignored) or
// by their bytes (an image or a PDF sent natively).
type AnswerKey struct {
	byText  map[uint64]json.RawMessage
	byBytes map[uint64]json.RawMessage
}

// NewAnswerKey returns an empty key.
func NewAnswerKey() *AnswerKey {
	return &AnswerKey{byText: map[uint64]json.RawMessage{}, byBytes: map[uint64]json.RawMessage{}}
}

// Add answers value for a document with this text.
func (k *AnswerKey) Add(text string, value json.RawMessage) {
	k.byText[fnv64a(strings.TrimSpace(text))] = value
}

// AddBytes answers value for a document sent as these bytes (an image, a
// PDF).
func (k *AnswerKey) AddBytes(data []byte, value json.RawMessage) {
	k.byBytes[fnv64a(string(data))] = value
}

// Len counts the documents the key answers.
func (k *AnswerKey) Len() int { return len(k.byText) }

// lookup returns the decoded answer for a document's text, or for the
// first picture or file in it that the key knows by its bytes (see
// mediaStandIn).
func (k *AnswerKey) lookup(text string) (any, bool) {
	if k == nil {
		return nil, false
	}
	if raw, ok := k.byText[fnv64a(strings.TrimSpace(text))]; ok {
		return decodeAnswer(raw)
	}
	for rest := text; ; {
		_, after, ok := strings.Cut(rest, standInPrefix)
		if !ok {
			return nil, false
		}
		hex, tail, _ := strings.Cut(after, "]")
		if h, err := strconv.ParseUint(hex, 16, 64); err == nil {
			if raw, ok := k.byBytes[h]; ok {
				return decodeAnswer(raw)
			}
		}
		rest = tail
	}
}

// standInPrefix opens the text a picture or file known by its bytes reads
// as: the simulator reads no pixels, so a labelled scan sent natively
// stands in the prompt as this mark, and lookup finds its label by it.
const standInPrefix = "[sim: labelled file "

// mediaStandIn returns the stand-in text of data when the key knows it by
// its bytes.
func (k *AnswerKey) mediaStandIn(data []byte) (string, bool) {
	if k == nil {
		return "", false
	}
	h := fnv64a(string(data))
	if _, ok := k.byBytes[h]; !ok {
		return "", false
	}
	return standInPrefix + strconv.FormatUint(h, 16) + "]", true
}

func decodeAnswer(raw json.RawMessage) (any, bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // as the simulator's own values are
	if dec.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

// LoadAnswerKey reads labels (a folder with NAME.expected.json beside each
// document, or a JSONL of {"id", "text"|"path", "expected"}: the labels
// `extractq eval` reads) into a key. A labelled file is known both by its
// text, as the document readers give it (a PDF's or an e-mail's text, as
// extract and submit send it), and by its bytes (as sent natively).
func LoadAnswerKey(path string) (*AnswerKey, error) {
	k := NewAnswerKey()
	set, err := eval.Load(path, nil, eval.LoadOptions{ReadDocument: func(p string) (string, error) {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		// Without OCR the readers wait on nothing: no context to pass on.
		d, err := document.ReadBytes(context.Background(), b, document.Options{Name: p})
		if err != nil {
			return "", err
		}
		return d.Text, nil
	}})
	if err != nil {
		return nil, fmt.Errorf("simulator answer key: %w", err)
	}
	for _, l := range set.Labels {
		// A picture has no text: known by its bytes only, or every
		// empty document would get its label.
		if strings.TrimSpace(l.Text) != "" {
			k.Add(l.Text, l.Expected)
		}
		if l.Path != "" { // read a second time: eval.Load keeps only the text
			b, err := os.ReadFile(l.Path)
			if err != nil {
				return nil, fmt.Errorf("simulator answer key: %w", err)
			}
			k.AddBytes(b, l.Expected)
		}
	}
	return k, nil
}

var (
	keysMu sync.Mutex
	keys   = map[string]*AnswerKey{}
)

// CachedAnswerKey loads the key at path once per process: every provider
// of a pool shares it.
func CachedAnswerKey(path string) (*AnswerKey, error) {
	keysMu.Lock()
	defer keysMu.Unlock()
	if k, ok := keys[path]; ok {
		return k, nil
	}
	k, err := LoadAnswerKey(path)
	if err != nil {
		return nil, err
	}
	keys[path] = k
	return k, nil
}

// WithAnswers makes the simulator answer known documents from k.
func WithAnswers(k *AnswerKey) Option { return func(s *Server) { s.answers = k } }

// fitAnswer shapes a label to the request's schema: a scalar or array root
// wrapped in the one property of an object root (as strict and tool forms
// wrap it), and every required property the label leaves out sent as null
// where the schema allows null (as strict forms mark optional fields).
func fitAnswer(v any, sh *shape) any {
	if sh == nil || sh.schema == nil {
		return v
	}
	var root map[string]any
	if json.Unmarshal(sh.schema.JSON(), &root) != nil {
		return v
	}
	if props, ok := root["properties"].(map[string]any); ok && len(props) == 1 {
		if _, isObj := v.(map[string]any); !isObj {
			for k := range props {
				return map[string]any{k: v}
			}
		}
	}
	fillNulls(v, root)
	return v
}

func fillNulls(v any, node map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		props, _ := node["properties"].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(props)) {
			child, _ := props[k].(map[string]any)
			if _, ok := x[k]; !ok && allowsNull(child) && slices.Contains(stringList(node["required"]), k) {
				x[k] = nil
			}
			if c, ok := x[k]; ok {
				fillNulls(c, child)
			}
		}
	case []any:
		items, _ := node["items"].(map[string]any)
		for _, e := range x {
			fillNulls(e, items)
		}
	}
}

func allowsNull(n map[string]any) bool {
	switch t := n["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return slices.Contains(t, any("null"))
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, _ := n[k].([]any)
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && allowsNull(m) {
				return true
			}
		}
	}
	return false
}
