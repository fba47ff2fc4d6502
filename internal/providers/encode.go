package providers

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/extractq/extractq/internal/jsonx"
)

// jsonAppender is a request body that can write itself as marshal would,
// without reflection. appendJSON reports false for anything it does not
// write exactly as encoding/json does (post then uses marshal), so it
// decides nothing about the bytes sent.
type jsonAppender interface {
	appendJSON(dst []byte) ([]byte, bool)
}

// encodeBody is marshal(body), by body's own appendJSON when it has one:
// the chat completions body of every document was 4–5% of the worker's
// CPU through encoding/json's reflection and its compaction of the
// schema. TestAppendJSONMatchesMarshal and jsonx.FuzzAppendString check the
// two give the same bytes.
func encodeBody(body any) ([]byte, error) {
	return encodeBodyInto(nil, body)
}

// encodeBodyInto is encodeBody appending to dst[:0] when body has its own
// appendJSON (dst nil: a new buffer of 1 KiB).
func encodeBodyInto(dst []byte, body any) ([]byte, error) {
	if a, ok := body.(jsonAppender); ok {
		if dst == nil {
			dst = make([]byte, 0, 1024)
		}
		if b, ok := a.appendJSON(dst[:0]); ok {
			return b, nil
		}
	}
	return marshal(body)
}

// appendJSON writes the chat completions body as marshal does: fields in
// declaration order, omitempty honoured, strings escaped without HTML
// escaping. A message with parts (pictures, files), a temperature that is
// not finite and a schema it cannot vouch for are left to marshal.
func (r *oaiRequest) appendJSON(b []byte) ([]byte, bool) {
	b = append(b, `{"model":`...)
	b = jsonx.AppendString(b, r.Model, false)
	b = append(b, `,"messages":`...)
	if r.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range r.Messages {
			s, ok := m.Content.(string)
			if !ok {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = jsonx.AppendString(b, string(m.Role), false)
			b = append(b, `,"content":`...)
			b = jsonx.AppendString(b, s, false)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if r.Temperature != nil {
		var ok bool
		b = append(b, `,"temperature":`...)
		if b, ok = appendJSONFloat(b, *r.Temperature); !ok {
			return b, false
		}
	}
	if r.MaxTokens != 0 {
		b = append(b, `,"max_tokens":`...)
		b = strconv.AppendInt(b, int64(r.MaxTokens), 10)
	}
	if r.MaxCompletionTokens != 0 {
		b = append(b, `,"max_completion_tokens":`...)
		b = strconv.AppendInt(b, int64(r.MaxCompletionTokens), 10)
	}
	if len(r.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonx.AppendString(b, s, false)
		}
		b = append(b, ']')
	}
	if f := r.ResponseFormat; f != nil {
		b = append(b, `,"response_format":{"type":`...)
		b = jsonx.AppendString(b, f.Type, false)
		if s := f.JSONSchema; s != nil {
			var ok bool
			b = append(b, `,"json_schema":{"name":`...)
			b = jsonx.AppendString(b, s.Name, false)
			b = append(b, `,"schema":`...)
			if b, ok = appendRawJSON(b, s.Schema); !ok {
				return b, false
			}
			b = append(b, `,"strict":`...)
			b = strconv.AppendBool(b, s.Strict)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range r.Tools {
			var ok bool
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = jsonx.AppendString(b, t.Type, false)
			b = append(b, `,"function":{"name":`...)
			b = jsonx.AppendString(b, t.Function.Name, false)
			b = append(b, `,"parameters":`...)
			if b, ok = appendRawJSON(b, t.Function.Parameters); !ok {
				return b, false
			}
			if t.Function.Strict {
				b = append(b, `,"strict":true`...)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	switch c := r.ToolChoice.(type) {
	case nil:
	case string: // written even when empty: omitempty omits only a nil interface
		b = append(b, `,"tool_choice":`...)
		b = jsonx.AppendString(b, c, false)
	case *oaiToolChoice:
		if c == nil {
			return b, false
		}
		b = append(b, `,"tool_choice":{"type":`...)
		b = jsonx.AppendString(b, c.Type, false)
		b = append(b, `,"function":{"name":`...)
		b = jsonx.AppendString(b, c.Function.Name, false)
		b = append(b, "}}"...)
	default:
		return b, false
	}
	b = append(b, `,"stream":`...)
	b = strconv.AppendBool(b, r.Stream)
	return append(b, '}'), true
}

// appendJSONFloat writes f as encoding/json writes a float64 (ES6 number
// formatting); false for NaN and the infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendRawJSON writes a json.RawMessage as encoding/json does: null for
// nil, else the value compacted (it validates and strips whitespace).
// A schema form is the same bytes for every document, so bytes found
// valid and already compact are remembered (compactCache) and copied as
// they are the next time; others are compacted each time. Empty or
// invalid bytes make encoding/json fail: they are left to it.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, bool) {
	if raw == nil {
		return append(b, "null"...), true
	}
	if compactCache.has(raw) {
		return append(b, raw...), true
	}
	var buf bytes.Buffer
	if len(raw) == 0 || json.Compact(&buf, raw) != nil {
		return b, false
	}
	if bytes.Equal(buf.Bytes(), raw) {
		compactCache.add(raw)
	}
	return append(b, buf.Bytes()...), true
}

// compactCache holds JSON texts known to be valid and compact. It is
// bounded: once full it starts again empty (a worker sends a handful of
// schema forms).
var compactCache = &knownCompact{}

const knownCompactMax = 256

type knownCompact struct {
	mu sync.RWMutex
	m  map[string]struct{}
}

func (k *knownCompact) has(raw []byte) bool {
	k.mu.RLock()
	_, ok := k.m[string(raw)]
	k.mu.RUnlock()
	return ok
}

func (k *knownCompact) add(raw []byte) {
	k.mu.Lock()
	if k.m == nil || len(k.m) >= knownCompactMax {
		k.m = make(map[string]struct{})
	}
	k.m[string(raw)] = struct{}{}
	k.mu.Unlock()
}
