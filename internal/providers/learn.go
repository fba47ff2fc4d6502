package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/extractq/extractq/llm"
)

// This file holds what the adapters learn about a model from the requests
// its server refuses. A capability table goes stale the week a provider
// ships a model; a 400 that names the refused part (a parameter, a value,
// the system role, a schema keyword) says exactly what to change. The
// adapter changes it, sends the call again at once (no validation re-ask is
// spent), and remembers the change for the provider's life and in the
// fleet's CapabilityStore.

// storeRefresh is how often a provider reloads what other processes
// learned: a worker that has not met a refusal yet picks up the fleet's
// facts within this time.
const storeRefresh = 30 * time.Second

// storeTimeout bounds each store read or write: a store that cannot be
// reached (NATS down) must not hold up the provider call it serves.
const storeTimeout = 2 * time.Second

// maxLearnPerCall bounds the refusals one call learns from: each names a
// different part, so a model that refuses several parts costs one extra
// call per part, never a loop.
const maxLearnPerCall = 4

// adjustments is a set of llm.Adjustment; the zero value is empty.
type adjustments map[llm.Adjustment]bool

func (a adjustments) has(x llm.Adjustment) bool { return a[x] }

// droppedKeywords lists the schema keywords to leave out of the sent form.
func (a adjustments) droppedKeywords() []string {
	var out []string
	for x := range a {
		if kw, ok := x.DroppedKeyword(); ok {
			out = append(out, kw)
		}
	}
	return out
}

// learner holds what one provider learned, shared by its calls.
type learner struct {
	key   string // the provider name, the store's key
	store llm.CapabilityStore
	log   *slog.Logger

	mu     sync.Mutex
	facts  adjustments
	synced time.Time
}

// current returns the learned adjustments, reloading the store's first
// when storeRefresh has passed. A store that cannot be read leaves what is
// known: learning again costs one call, failing the request would cost the
// document.
func (l *learner) current(ctx context.Context) adjustments {
	if l == nil {
		return adjustments{}
	}
	l.mu.Lock()
	load := l.store != nil && time.Since(l.synced) >= storeRefresh
	if load {
		l.synced = time.Now()
	}
	l.mu.Unlock()
	if load {
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		got, err := l.store.Load(sctx, l.key)
		cancel()
		if err != nil {
			l.log.LogAttrs(ctx, slog.LevelWarn, "capability store unreadable; using what this process learned",
				slog.String("provider", l.key), slog.String("error", err.Error()))
		}
		l.mu.Lock()
		for _, a := range got {
			if a.Known() {
				l.add(a)
			}
		}
		l.mu.Unlock()
	}
	return l.snapshot()
}

// snapshot returns what is known now, without asking the store (the batch
// paths, which have no context to wait with).
func (l *learner) snapshot() adjustments {
	if l == nil {
		return adjustments{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.facts) == 0 {
		return nil // read only, as every snapshot is: nothing to allocate
	}
	out := make(adjustments, len(l.facts))
	for a := range l.facts {
		out[a] = true
	}
	return out
}

// add records a under l.mu and reports whether it is new.
func (l *learner) add(a llm.Adjustment) bool {
	if l.facts[a] {
		return false
	}
	if l.facts == nil {
		l.facts = adjustments{}
	}
	l.facts[a] = true
	return true
}

// learn records a fact and shares it through the store.
func (l *learner) learn(ctx context.Context, a llm.Adjustment) {
	if l == nil {
		return
	}
	l.mu.Lock()
	fresh := l.add(a)
	l.mu.Unlock()
	if !fresh || l.store == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := l.store.Add(sctx, l.key, a); err != nil {
		l.log.LogAttrs(ctx, slog.LevelWarn, "capability store unwritable; the fact stays in this process",
			slog.String("provider", l.key), slog.String("adjustment", string(a)), slog.String("error", err.Error()))
	}
}

// sendLearning calls send with the adjustments in force; when the server
// refuses a part of the request with a 400 that names it, it learns the
// adjustment and calls send again with it applied. The adjustments
// learned are set on the response, or on the error when the call still
// failed.
func (b *base) sendLearning(ctx context.Context, send func(adjustments) (*llm.Response, error)) (*llm.Response, error) {
	var learned []llm.Adjustment
	for {
		adj := b.learn.current(ctx)
		resp, err := send(adj)
		if err == nil {
			resp.Adjustments = learned
			return resp, nil
		}
		var pe *llm.Error
		if !errors.As(err, &pe) {
			return nil, err
		}
		fix, ok := refusedPart(pe)
		if !ok || adj.has(fix) || len(learned) == maxLearnPerCall {
			pe.Adjustments = learned
			return nil, err
		}
		b.learn.learn(ctx, fix)
		learned = append(learned, fix)
		b.log.LogAttrs(ctx, slog.LevelInfo, "the server refused part of the request; sending it again without it",
			slog.String("provider", b.name), slog.String("adjustment", string(fix)), slog.String("refusal", pe.Message))
	}
}

// learnFromLine learns from a batch line's refusal: that line's request
// has failed (it cannot be sent again inside the batch), but the next
// batch is built with the part changed. The adjustment is set on e, so the
// attempt records it.
func (b *base) learnFromLine(e *llm.Error) *llm.Error {
	if fix, ok := refusedPart(e); ok && !b.learn.snapshot().has(fix) {
		// The result lines are read without a caller's context; the store
		// call is bounded by storeTimeout.
		b.learn.learn(context.Background(), fix)
		e.Adjustments = []llm.Adjustment{fix}
	}
	return e
}

// Patterns of refusals that name a schema keyword.
var (
	// OpenAI: "Invalid schema for response_format 'x': In context=('properties',
	// 'name'), 'minLength' is not permitted."
	notPermittedKeyword = regexp.MustCompile(`'([$A-Za-z][\w$]*)' is not permitted`)
	// Gemini: `Invalid JSON payload received. Unknown name "patternProperties"
	// at 'generation_config.response_json_schema.properties[0].value': Cannot
	// find field.`
	unknownNameAt = regexp.MustCompile(`Unknown name "([$A-Za-z][\w$]*)" at '([^']*)'`)
	// Anthropic and others: "output_config.format.schema: keyword 'pattern' is
	// not supported", "property 'x' is not supported".
	keywordNotSupported = regexp.MustCompile(`(?i)keyword '?"?([$A-Za-z][\w$]*)'?"? is not supported`)
)

// unsupportedMarkers say a server refuses a parameter or value as such (not
// that the request is malformed).
var unsupportedMarkers = []string{
	"not supported", "does not support", "unsupported", "is deprecated", "not permitted",
	"unknown name", "unrecognized", "not enabled", "not allowed",
}

// refusedPart reads a 400 (422 for some OpenAI-compatible servers) that
// names a request part the model does not take, and returns the adjustment
// that leaves it out or changes it.
func refusedPart(e *llm.Error) (llm.Adjustment, bool) {
	if e.Status != http.StatusBadRequest && e.Status != http.StatusUnprocessableEntity {
		return "", false
	}
	msg := e.Message
	m := strings.ToLower(msg)
	param := strings.ToLower(errorParam(e.Raw))
	about := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(m, w) || strings.Contains(param, w) {
				return true
			}
		}
		return false
	}
	if !containsAny(m, unsupportedMarkers) {
		return "", false
	}
	// Gemini names an unknown field with the path it was found at.
	if sm := unknownNameAt.FindStringSubmatch(msg); sm != nil {
		name, at := sm[1], strings.ToLower(sm[2])
		switch {
		case name == "responseJsonSchema" || name == "response_json_schema":
			return llm.AdjustNoNativeSchema, true
		case strings.Contains(at, "schema"):
			return dropKeyword(name)
		case name == "systemInstruction" || name == "system_instruction":
			return llm.AdjustNoSystemRole, true
		case name == "temperature":
			return llm.AdjustNoTemperature, true
		}
		return "", false
	}
	if strings.Contains(m, "schema") {
		for _, re := range []*regexp.Regexp{notPermittedKeyword, keywordNotSupported} {
			if sm := re.FindStringSubmatch(msg); sm != nil && sm[1] != "strict" {
				return dropKeyword(sm[1])
			}
		}
	}
	switch {
	case about("response_format") && about("json_schema"),
		about("output_config", "output_format", "responsejsonschema", "response_json_schema"):
		return llm.AdjustNoNativeSchema, true
	case about("max_tokens") && about("max_completion_tokens"):
		return llm.AdjustMaxCompletionTokens, true
	case about("strict"):
		return llm.AdjustNoStrictTool, true
	case about("tool_choice", "forced tool", "tool use is forced"):
		return llm.AdjustToolAuto, true
	case about("temperature"):
		return llm.AdjustNoTemperature, true
	case about("'system'", "system role", "role 'system'", "developer instruction", "system_instruction", "systeminstruction"):
		return llm.AdjustNoSystemRole, true
	}
	return "", false
}

// structural keywords hold the schema together: without them what is sent
// no longer describes the answer, so a refusal naming one is not learned.
var structural = map[string]bool{
	"type": true, "properties": true, "items": true, "$ref": true, "$defs": true, "definitions": true,
}

// dropKeyword is the adjustment leaving kw out, unless kw is structural.
func dropKeyword(kw string) (llm.Adjustment, bool) {
	if structural[kw] {
		return "", false
	}
	return llm.AdjustDropKeyword(kw), true
}

// errorParam is OpenAI's error.param ("temperature", "messages[0].role"),
// "" when the body has none.
func errorParam(raw []byte) string {
	var doc struct {
		Error struct {
			Param string `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return ""
	}
	return doc.Error.Param
}

// systemAsUser returns msgs with every system message sent as a user turn,
// for models that refuse the system role (the instructions still come
// first).
func systemAsUser(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		if m.Role == llm.RoleSystem {
			m.Role = llm.RoleUser
		}
		out[i] = m
	}
	return out
}

// schemaMaps are the keywords whose value maps names to subschemas: a key
// under them is a property or definition name, never a keyword.
var schemaMaps = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
}

// dropKeywords removes the keywords kws from every subschema of doc; a
// property or definition of that name stays, and the order of what stays
// is kept (models answer in the order properties are listed). doc is
// returned unchanged when it names none of kws or is not JSON.
func dropKeywords(doc json.RawMessage, kws []string) json.RawMessage {
	drop := make(map[string]bool, len(kws))
	for _, k := range kws {
		if bytes.Contains(doc, []byte(`"`+k+`"`)) {
			drop[k] = true
		}
	}
	if len(drop) == 0 {
		return doc
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var out bytes.Buffer
	if err := copyDropping(dec, &out, drop, false); err != nil {
		return doc
	}
	return out.Bytes()
}

// copyDropping copies one JSON value from dec to out, leaving out the
// members named in drop of every object that is a schema; names says the
// value is an object of names (properties, $defs), whose members stay.
func copyDropping(dec *json.Decoder, out *bytes.Buffer, drop map[string]bool, names bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		b, err := marshal(tok)
		out.Write(b)
		return err
	}
	first := true
	switch d {
	case '{':
		out.WriteByte('{')
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if !names && drop[k] {
				if err := copyDropping(dec, &bytes.Buffer{}, drop, false); err != nil {
					return err
				}
				continue
			}
			if !first {
				out.WriteByte(',')
			}
			first = false
			kb, _ := marshal(k)
			out.Write(kb)
			out.WriteByte(':')
			if err := copyDropping(dec, out, drop, !names && schemaMaps[k]); err != nil {
				return err
			}
		}
		out.WriteByte('}')
	case '[':
		out.WriteByte('[')
		for dec.More() {
			if !first {
				out.WriteByte(',')
			}
			first = false
			if err := copyDropping(dec, out, drop, false); err != nil {
				return err
			}
		}
		out.WriteByte(']')
	}
	_, err = dec.Token() // the closing delimiter
	return err
}
