// Package sink writes stored results where a warehouse reads them: Parquet
// files whose columns come from the result's JSON Schema, streamed in row
// groups with flat memory, to a file or to S3 (a multipart upload), and
// exported exactly once per export name across nightly runs.
package sink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/extractq/extractq/internal/audit"
)

// Metadata columns come first; the underscore keeps them apart from the
// schema's own properties (as in the CSV export).
const (
	colDocumentID    = "_document_id"
	colRun           = "_run"
	colSchemaVersion = "_schema_version"
	colModel         = "_model"
	colCreatedAt     = "_created_at"
	colSourceURI     = "_source_uri"
	colContentHash   = "_content_hash"
	colSources       = "_sources"
	colValue         = "_value" // the whole value, for a schema without properties
)

// Row is one result to write.
type Row struct {
	DocumentID    string
	Run           string
	SchemaVersion int
	Model         string
	CreatedAt     time.Time
	SourceURI     string // the document's source (path, s3:// URI, URL); "" if unknown
	ContentHash   string
	Value         json.RawMessage
	// Sources say where each value was found (audit.SourceList: document
	// order); nil when the result has none.
	Sources []audit.FieldSource
}

// kind is what a JSON Schema node becomes in Parquet.
type kind int

const (
	kString kind = iota
	kInt
	kFloat
	kBool
	kJSON // anything without one plain type: compact JSON text
	kGroup
	kList
)

// field is a column (or group of columns) derived from the schema.
type field struct {
	name     string
	kind     kind
	optional bool
	children []field // kGroup, sorted by name
	item     *field  // kList
}

// Layout is the Parquet schema derived from a JSON Schema, and how values
// are converted to fit it.
type Layout struct {
	schema *parquet.Schema
	fields []field // the schema's properties; nil: one _value column
}

// Schema is the Parquet schema.
func (l *Layout) Schema() *parquet.Schema { return l.schema }

// NewLayout derives the Parquet schema from a JSON Schema body: objects
// with properties become groups, arrays lists, string/integer/number/
// boolean the matching types, anything else (unions, free-form objects)
// a JSON column. strict keeps required properties required; otherwise
// every property is nullable (results made under older schema versions may
// lack fields the latest requires).
func NewLayout(schemaBody []byte, strict bool) (*Layout, error) {
	var root map[string]any
	if err := json.Unmarshal(schemaBody, &root); err != nil {
		return nil, fmt.Errorf("sink: schema is not a JSON object: %w", err)
	}
	l := &Layout{}
	if props, ok := root["properties"].(map[string]any); ok && len(props) > 0 {
		l.fields = objectFields(root, strict)
	}
	g := parquet.Group{
		colDocumentID:    parquet.String(),
		colRun:           parquet.String(),
		colSchemaVersion: parquet.Int(32),
		colModel:         parquet.String(),
		colCreatedAt:     parquet.Timestamp(parquet.Microsecond),
		colSourceURI:     parquet.Optional(parquet.String()),
		colContentHash:   parquet.String(),
		// Where each value was found: its JSON pointer, page (null
		// without pages) and the page's label, the characters within the
		// page (within the text without pages), and the snippet.
		colSources: parquet.List(parquet.Group{
			"field":      parquet.String(),
			"page":       parquet.Optional(parquet.Int(32)),
			"page_label": parquet.Optional(parquet.String()),
			"start":      parquet.Int(32),
			"end":        parquet.Int(32),
			"snippet":    parquet.String(),
		}),
	}
	if l.fields == nil {
		g[colValue] = parquet.JSON()
	}
	for _, f := range l.fields {
		if _, clash := g[f.name]; clash {
			return nil, fmt.Errorf("sink: schema property %q clashes with a metadata column: rename it", f.name)
		}
		g[f.name] = f.node()
	}
	l.schema = parquet.NewSchema("result", g)
	return l, nil
}

func objectFields(node map[string]any, strict bool) []field {
	props, _ := node["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := node["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]field, 0, len(names))
	for _, n := range names {
		sub, _ := props[n].(map[string]any)
		f := fieldOf(n, sub, strict)
		if !strict || !required[n] {
			f.optional = true
		}
		out = append(out, f)
	}
	return out
}

// fieldOf maps one schema node. A nullable type (["string","null"]) is
// its other type, optional.
func fieldOf(name string, node map[string]any, strict bool) field {
	f := field{name: name, kind: kJSON}
	typ, nullable := plainType(node)
	f.optional = nullable
	switch typ {
	case "string":
		f.kind = kString
	case "integer":
		f.kind = kInt
	case "number":
		f.kind = kFloat
	case "boolean":
		f.kind = kBool
	case "object":
		if props, ok := node["properties"].(map[string]any); ok && len(props) > 0 {
			f.kind, f.children = kGroup, objectFields(node, strict)
		}
	case "array":
		if items, ok := node["items"].(map[string]any); ok {
			it := fieldOf("element", items, strict)
			f.kind, f.item = kList, &it
		}
	}
	return f
}

// plainType is the node's one non-null type, if it has exactly one.
func plainType(node map[string]any) (typ string, nullable bool) {
	switch t := node["type"].(type) {
	case string:
		return t, false
	case []any:
		for _, x := range t {
			s, _ := x.(string)
			if s == "null" {
				nullable = true
				continue
			}
			if typ != "" {
				return "", nullable // a union: JSON text
			}
			typ = s
		}
	}
	return typ, nullable
}

func (f *field) node() parquet.Node {
	var n parquet.Node
	switch f.kind {
	case kString:
		n = parquet.String()
	case kInt:
		n = parquet.Int(64)
	case kFloat:
		n = parquet.Leaf(parquet.DoubleType)
	case kBool:
		n = parquet.Leaf(parquet.BooleanType)
	case kGroup:
		g := parquet.Group{}
		for _, c := range f.children {
			g[c.name] = c.node()
		}
		n = g
	case kList:
		n = parquet.List(f.item.node())
	default:
		n = parquet.JSON()
	}
	if f.optional {
		n = parquet.Optional(n)
	}
	return n
}

// convert fits a decoded JSON value to the field; ok is false when it does
// not fit (a value of another type, null where required).
func (f *field) convert(v any) (out any, ok bool) {
	if v == nil {
		return nil, f.optional
	}
	switch f.kind {
	case kString:
		s, ok := v.(string)
		return s, ok
	case kInt:
		n, isNum := v.(json.Number)
		if !isNum {
			return nil, false
		}
		i, err := n.Int64()
		return i, err == nil
	case kFloat:
		n, isNum := v.(json.Number)
		if !isNum {
			return nil, false
		}
		x, err := n.Float64()
		return x, err == nil
	case kBool:
		b, ok := v.(bool)
		return b, ok
	case kGroup:
		m, isObj := v.(map[string]any)
		if !isObj {
			return nil, false
		}
		return convertObject(f.children, m)
	case kList:
		a, isArr := v.([]any)
		if !isArr {
			return nil, false
		}
		out := make([]any, len(a))
		for i, x := range a {
			c, ok := f.item.convert(x)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	b, err := json.Marshal(v)
	return string(b), err == nil
}

// convertObject converts an object's declared properties; undeclared ones
// are left out (they are in the JSONL export).
func convertObject(fields []field, m map[string]any) (map[string]any, bool) {
	out := make(map[string]any, len(fields))
	for i := range fields {
		f := &fields[i]
		c, ok := f.convert(m[f.name])
		if !ok {
			return nil, false
		}
		if c != nil {
			out[f.name] = c
		}
	}
	return out, true
}

// ErrMisfit is matched by a result whose value does not fit the columns
// (made under another schema version): export with --version.
var ErrMisfit = fmt.Errorf("value does not fit the schema's columns")

// ParquetWriter writes rows to a Parquet file in row groups.
type ParquetWriter struct {
	layout *Layout
	w      *parquet.GenericWriter[map[string]any]
	rows   int64
	buf    []map[string]any
}

// DefaultRowGroupRows is how many rows a row group holds by default: what
// the writer keeps in memory at most.
const DefaultRowGroupRows = 50_000

// NewParquetWriter writes l's rows to out, zstd-compressed, rowGroup rows
// per row group (0: DefaultRowGroupRows).
func NewParquetWriter(out io.Writer, l *Layout, rowGroup int64) *ParquetWriter {
	if rowGroup <= 0 {
		rowGroup = DefaultRowGroupRows
	}
	w := parquet.NewGenericWriter[map[string]any](out, l.schema, parquet.Compression(&parquet.Zstd), parquet.MaxRowsPerRowGroup(rowGroup))
	return &ParquetWriter{layout: l, w: w}
}

// Write adds one row. A value that does not fit the columns is refused
// with ErrMisfit, and nothing of it is written.
func (p *ParquetWriter) Write(r *Row) error {
	m := map[string]any{
		colDocumentID: r.DocumentID, colRun: r.Run, colSchemaVersion: int32(r.SchemaVersion), colModel: r.Model,
		colCreatedAt: r.CreatedAt.UTC(), colContentHash: r.ContentHash,
	}
	if r.SourceURI != "" {
		m[colSourceURI] = r.SourceURI
	}
	srcs := make([]any, len(r.Sources))
	for i, f := range r.Sources {
		e := map[string]any{"field": f.Field, "start": int32(f.Start), "end": int32(f.End), "snippet": f.Snippet}
		if f.Page > 0 {
			e["page"] = int32(f.Page)
		}
		if f.PageLabel != "" {
			e["page_label"] = f.PageLabel
		}
		srcs[i] = e
	}
	m[colSources] = srcs
	if p.layout.fields == nil {
		m[colValue] = string(r.Value)
	} else {
		dec := json.NewDecoder(bytes.NewReader(r.Value))
		dec.UseNumber()
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%w: result of %s is not a JSON object", ErrMisfit, r.DocumentID)
		}
		c, ok := convertObject(p.layout.fields, v)
		if !ok {
			return fmt.Errorf("%w: result of %s (schema version %d)", ErrMisfit, r.DocumentID, r.SchemaVersion)
		}
		for k, x := range c {
			m[k] = x
		}
	}
	p.buf = append(p.buf[:0], m)
	if _, err := p.w.Write(p.buf); err != nil {
		return fmt.Errorf("sink: write parquet row of %s: %w", r.DocumentID, err)
	}
	p.rows++
	return nil
}

// Close flushes the last row group and writes the footer.
func (p *ParquetWriter) Close() error {
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("sink: finish parquet file: %w", err)
	}
	return nil
}
