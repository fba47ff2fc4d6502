package sink

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/extractq/extractq/internal/audit"
)

const invoiceSchema = `{
  "type": "object",
  "required": ["number", "total", "lines"],
  "properties": {
    "number": {"type": "string"},
    "total": {"type": "number"},
    "paid": {"type": "boolean"},
    "count": {"type": ["integer", "null"]},
    "customer": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "city": {"type": "string"}}},
    "lines": {"type": "array", "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "extra": {"anyOf": [{"type": "string"}, {"type": "number"}]}
  }
}`

// readBack returns the file's rows as generic maps.
func readBack(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	r := parquet.NewGenericReader[map[string]any](f, f.Schema())
	defer r.Close()
	out := make([]map[string]any, f.NumRows())
	for i := range out {
		out[i] = map[string]any{}
	}
	if n, err := r.Read(out); n != len(out) && err != nil {
		t.Fatalf("read %d of %d rows: %v", n, len(out), err)
	}
	return out
}

func TestParquetColumnsFollowTheSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		strict bool
		column string
		opt    bool
	}{
		{"required stays required with --version", true, "number", false},
		{"optional is nullable", true, "paid", true},
		{"nullable type is nullable", true, "count", true},
		{"everything nullable across versions", false, "number", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := NewLayout([]byte(invoiceSchema), tc.strict)
			if err != nil {
				t.Fatal(err)
			}
			var col parquet.Field
			for _, f := range l.Schema().Fields() {
				if f.Name() == tc.column {
					col = f
				}
			}
			if col == nil || col.Optional() != tc.opt {
				t.Fatalf("column %s: %v, want optional=%v\n%s", tc.column, col, tc.opt, l.Schema())
			}
		})
	}
	l, err := NewLayout([]byte(invoiceSchema), true)
	if err != nil {
		t.Fatal(err)
	}
	s := l.Schema().String()
	for _, want := range []string{"group customer", "group lines (LIST)", "int64 qty", "double total", "boolean paid", "binary extra (JSON)", "int64 _created_at (TIMESTAMP"} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %q:\n%s", want, s)
		}
	}
}

func TestParquetRowsRoundTrip(t *testing.T) {
	t.Parallel()
	l, err := NewLayout([]byte(invoiceSchema), false)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := NewParquetWriter(&buf, l, 2) // several row groups
	at := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	values := []string{
		`{"number":"A-1","total":12.5,"paid":true,"count":3,"customer":{"name":"Ada","city":"Paris"},"lines":[{"sku":"x","qty":2}],"tags":["a","b"],"extra":7,"undeclared":1}`,
		`{"number":"A-2","total":1,"lines":[]}`,
		`{"number":"A-3","total":0,"count":null,"lines":[{"sku":"y"}],"extra":"s"}`,
	}
	sources := []audit.FieldSource{
		{Field: "/number", Page: 1, Start: 10, End: 13, Snippet: "Invoice A-1"},
		{Field: "/total", Page: 2, PageLabel: "ii", Start: 95, End: 99, Snippet: "Total 12.5"},
		{Field: "/customer/name", Start: 300, End: 303, Snippet: "To: Ada"}, // a text without pages
	}
	for i, v := range values {
		r := Row{DocumentID: "d" + string(rune('1'+i)), Run: "nightly", SchemaVersion: 2, Model: "m", CreatedAt: at, SourceURI: "s3://b/k", ContentHash: "h", Value: json.RawMessage(v)}
		if i == 0 {
			r.Sources = sources
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows := readBack(t, buf.Bytes())
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	first := rows[0]
	checks := map[string]any{"_document_id": "d1", "_source_uri": "s3://b/k", "number": "A-1", "total": 12.5, "paid": true, "count": int64(3)}
	for k, want := range checks {
		if got := first[k]; !reflect.DeepEqual(got, want) {
			t.Errorf("row 1 %s = %#v, want %#v", k, got, want)
		}
	}
	if c, _ := first["customer"].(map[string]any); c == nil || c["city"] != "Paris" {
		t.Errorf("row 1 customer = %#v", first["customer"])
	}
	if got, _ := json.Marshal(first["extra"]); string(got) != "7" {
		t.Errorf("row 1 extra (a JSON column) = %s, want 7", got)
	}
	if got, _ := json.Marshal(first["lines"]); string(got) != `[{"qty":2,"sku":"x"}]` {
		t.Errorf("row 1 lines = %s, want a list of groups", got)
	}
	if got, _ := json.Marshal(first["tags"]); string(got) != `["a","b"]` {
		t.Errorf("row 1 tags = %s", got)
	}
	if _, has := first["undeclared"]; has {
		t.Error("an undeclared property became a column")
	}
	// Page sources: a list of groups, page null without pages.
	if got, _ := json.Marshal(first["_sources"]); string(got) != `[{"end":13,"field":"/number","page":1,"page_label":null,"snippet":"Invoice A-1","start":10},`+
		`{"end":99,"field":"/total","page":2,"page_label":"ii","snippet":"Total 12.5","start":95},`+
		`{"end":303,"field":"/customer/name","page":null,"page_label":null,"snippet":"To: Ada","start":300}]` {
		t.Errorf("row 1 _sources = %s", got)
	}
	if got, _ := json.Marshal(rows[1]["_sources"]); string(got) != `[]` {
		t.Errorf("row 2 _sources = %s, want an empty list", got)
	}
	if rows[1]["paid"] != nil || rows[1]["customer"] != nil {
		t.Errorf("row 2 absent values = %#v / %#v, want null", rows[1]["paid"], rows[1]["customer"])
	}
}

func TestParquetRefusesMisfits(t *testing.T) {
	t.Parallel()
	l, err := NewLayout([]byte(invoiceSchema), true)
	if err != nil {
		t.Fatal(err)
	}
	w := NewParquetWriter(&bytes.Buffer{}, l, 0)
	for _, v := range []string{`{"number":5,"total":1,"lines":[]}`, `{"total":1,"lines":[]}`, `[1]`, `{"number":"x","total":1,"lines":[{"qty":1.5}]}`} {
		if err := w.Write(&Row{DocumentID: "d", Value: json.RawMessage(v)}); !errors.Is(err, ErrMisfit) {
			t.Errorf("%s: %v, want ErrMisfit", v, err)
		}
	}
}

func TestParquetSchemaWithoutPropertiesIsOneJSONColumn(t *testing.T) {
	t.Parallel()
	l, err := NewLayout([]byte(`{"type":"array","items":{"type":"string"}}`), true)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := NewParquetWriter(&buf, l, 0)
	if err := w.Write(&Row{DocumentID: "d", Value: json.RawMessage(`["a","b"]`)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rows := readBack(t, buf.Bytes())
	// JSON columns read back decoded.
	if got, _ := json.Marshal(rows[0]["_value"]); string(got) != `["a","b"]` {
		t.Errorf("_value = %s", got)
	}
}
