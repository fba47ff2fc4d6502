package audit

import (
	"slices"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/llm"
)

// appendSources appends sources as a JSON object in llm.Source's shape
// (pointers in order; chunk, page fields, box and snippet only when set),
// the stored form of results.sources. It is written by hand because the
// writer is the fleet's hot path: encoding/json and redaction of a dozen
// sources cost more than the rest of the record's encoding. Snippets are the document's own
// text (stored whole in documents), so they are not redacted; NUL and
// invalid UTF-8 become U+FFFD, as in every diagnostic.
func appendSources(b []byte, sources map[string]llm.Source) []byte {
	ptrs := make([]string, 0, len(sources))
	for p := range sources {
		ptrs = append(ptrs, p)
	}
	slices.Sort(ptrs)
	b = append(b, '{')
	for i, p := range ptrs {
		s := sources[p]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, p)
		b = append(b, `:{"start":`...)
		b = strconv.AppendInt(b, int64(s.Start), 10)
		b = append(b, `,"end":`...)
		b = strconv.AppendInt(b, int64(s.End), 10)
		if s.Chunk != 0 {
			b = append(b, `,"chunk":`...)
			b = strconv.AppendInt(b, int64(s.Chunk), 10)
		}
		if s.Match != "" {
			b = append(b, `,"match":`...)
			b = appendJSONString(b, s.Match)
		}
		if s.Page != 0 {
			b = append(b, `,"page":`...)
			b = strconv.AppendInt(b, int64(s.Page), 10)
			b = append(b, `,"page_start":`...)
			b = strconv.AppendInt(b, int64(s.PageStart), 10)
			b = append(b, `,"page_end":`...)
			b = strconv.AppendInt(b, int64(s.PageEnd), 10)
		}
		if s.PageLabel != "" {
			b = append(b, `,"page_label":`...)
			b = appendJSONString(b, s.PageLabel)
		}
		if x := s.Box; x != nil {
			b = append(b, `,"box":{"x0":`...)
			b = strconv.AppendFloat(b, x.X0, 'f', -1, 64)
			b = append(b, `,"y0":`...)
			b = strconv.AppendFloat(b, x.Y0, 'f', -1, 64)
			b = append(b, `,"x1":`...)
			b = strconv.AppendFloat(b, x.X1, 'f', -1, 64)
			b = append(b, `,"y1":`...)
			b = strconv.AppendFloat(b, x.Y1, 'f', -1, 64)
			b = append(b, '}')
		}
		if s.Snippet != "" {
			b = append(b, `,"snippet":`...)
			b = appendJSONString(b, s.Snippet)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, as encoding/json writes
// it but for NUL, which becomes U+FFFD: PostgreSQL refuses \u0000 when a
// json value is read as text (->>) or cast to jsonb.
func appendJSONString(b []byte, s string) []byte {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return jsonx.AppendString(b, s, false)
}
