package audit

import (
	"bytes"
	"context"
	"encoding/csv"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestCSVColumns(t *testing.T) {
	tests := []struct {
		name, schema string
		want         []string
	}{
		{"flat", `{"type":"object","properties":{"total":{"type":"number"},"currency":{"type":"string"}}}`, []string{"currency", "total"}},
		{"nested and arrays", `{"type":"object","properties":{
			"customer":{"type":"object","properties":{"name":{},"address":{"type":"object","properties":{"city":{},"zip":{}}}}},
			"items":{"type":"array","items":{"type":"object","properties":{"sku":{}}}},
			"extra":{"type":"object"}}}`,
			[]string{"customer.address.city", "customer.address.zip", "customer.name", "extra", "items"}},
		{"no properties", `{"type":"array","items":{"type":"string"}}`, []string{"_value"}},
		{"not JSON", `type: object`, []string{"_value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CSVColumns([]byte(tt.schema)); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFlattenInto(t *testing.T) {
	paths := []string{"a.b", "big", "flag", "items", "missing", "name", "obj", "nul"}
	value := `{"a":{"b":1.50},"big":12345678901234567890,"flag":true,"items":[{"p":1}],"name":"x, \"y\"","obj":{"k":"v"},"nul":null}`
	want := []string{"1.50", "12345678901234567890", "true", `[{"p":1}]`, "", `x, "y"`, `{"k":"v"}`, ""}
	cells := make([]string, len(paths))
	if err := flattenInto(cells, paths, []byte(value)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cells, want) {
		t.Errorf("got %q, want %q", cells, want)
	}
	whole := make([]string, 1)
	if err := flattenInto(whole, []string{wholeValueColumn}, []byte(`["a","b"]`)); err != nil || whole[0] != `["a","b"]` {
		t.Errorf("whole value: %q, %v", whole[0], err)
	}
}

// seedResults stores n results for schema "invoice": versions 1 and 2,
// every third document also has a v1 result only.
func seedResults(t testing.TB, s *Store, n int, valuePad int) {
	t.Helper()
	ctx := context.Background()
	for _, fp := range []string{"fp1", "fp2"} {
		body := `{"type":"object","properties":{"total":{"type":"number"},"customer":{"type":"object","properties":{"name":{"type":"string"}}},"items":{"type":"array"},"note":{"type":"string"}}}`
		if _, _, err := s.RegisterSchema(ctx, "invoice", []byte(body), fp); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO results (document_id, schema_fingerprint, model, schema_name, schema_version, value, run)
		SELECT format('doc-%s', lpad(i::text, 7, '0')), 'fp' || v, 'sim-1', 'invoice', v,
		       jsonb_build_object('total', i, 'customer', jsonb_build_object('name', 'c' || i), 'items', jsonb_build_array(i, v),
		                          'note', repeat('x', $2)),
		       CASE WHEN i % 2 = 0 THEN 'even' ELSE 'odd' END
		FROM generate_series(1, $1) i, generate_series(1, 2) v
		WHERE v = 1 OR i % 3 <> 0`, n, valuePad)
	if err != nil {
		t.Fatal(err)
	}
}

func TestExportFormats(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	seedResults(t, s, 9, 3)
	// One result has sources, as a worker stores them (page 2, a box).
	if _, err := s.pool.Exec(ctx, `UPDATE results SET sources = $1 WHERE document_id = 'doc-0000001' AND schema_version = 2`,
		`{"/total": {"start": 812, "end": 813, "match": "exact", "page": 2, "page_start": 95, "page_end": 96, "page_label": "ii",
		  "box": {"x0": 1, "y0": 2, "x1": 3, "y1": 4}, "snippet": "Total due: 1"}, "/customer/name": {"start": 10, "end": 12, "page": 1, "page_start": 10, "page_end": 12, "snippet": "To: c1"}}`); err != nil {
		t.Fatal(err)
	}
	const sourcesJSON = `[{"field":"/customer/name","page":1,"start":10,"end":12,"snippet":"To: c1"},{"field":"/total","page":2,"page_label":"ii","start":95,"end":96,"snippet":"Total due: 1"}]`
	tests := []struct {
		name      string
		f         ExportFilter
		format    ExportFormat
		wantRows  int64
		wantFirst string // first data line
	}{
		{"latest per document, jsonl", ExportFilter{Schema: "invoice"}, FormatJSONL, 9, `"schema_version":2`},
		{"one version", ExportFilter{Schema: "invoice", Version: 1}, FormatJSONL, 9, `"schema_version":1`},
		{"one run", ExportFilter{Schema: "invoice", Version: 2, Run: "odd"}, FormatJSONL, 3, `"document_id":"doc-0000001"`},
		{"jsonl sources", ExportFilter{Schema: "invoice", Version: 2, Run: "odd"}, FormatJSONL, 3, `"sources":` + sourcesJSON + `}`},
		{"csv", ExportFilter{Schema: "invoice", Version: 2}, FormatCSV, 6, `doc-0000001,2,sim-1,odd,`},
		{"csv sources", ExportFilter{Schema: "invoice", Version: 2}, FormatCSV, 6, `,,"` + strings.ReplaceAll(sourcesJSON, `"`, `""`) + `",c1,`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := s.Export(ctx, tt.f, tt.format, &buf)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			data := lines
			if tt.format == FormatCSV {
				if want := "_document_id,_schema_version,_model,_run,_created_at,_redacted,_sources,customer.name,items,note,total"; lines[0] != want {
					t.Errorf("header %q, want %q", lines[0], want)
				}
				data = lines[1:]
			}
			if n != tt.wantRows || int64(len(data)) != n {
				t.Fatalf("rows %d, lines %d, want %d:\n%s", n, len(data), tt.wantRows, buf.String())
			}
			if !strings.Contains(data[0], tt.wantFirst) {
				t.Errorf("first line %q lacks %q", data[0], tt.wantFirst)
			}
		})
	}
	// A CSV row round-trips: nested object flattened, array as JSON.
	var buf bytes.Buffer
	if _, err := s.Export(ctx, ExportFilter{Schema: "invoice", Version: 1, Run: "even"}, FormatCSV, &buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := recs[1]; got[0] != "doc-0000002" || got[5] != "" || got[6] != "" || got[7] != "c2" || got[8] != "[2,1]" || got[9] != "xxx" || got[10] != "2" {
		t.Errorf("csv row %q", got)
	}
}

// heapWatch is an io.Writer that samples the live heap as output streams.
type heapWatch struct {
	written, nextSample int
	peak                uint64
	lines               int
}

func (h *heapWatch) Write(p []byte) (int, error) {
	h.written += len(p)
	h.lines += bytes.Count(p, []byte{'\n'})
	if h.written >= h.nextSample {
		h.nextSample = h.written + 4<<20
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		h.peak = max(h.peak, ms.HeapAlloc)
	}
	return len(p), nil
}

func TestExport100kResultsInConstantMemory(t *testing.T) {
	const n = 100_000
	ctx := context.Background()
	s := newTestStore(t)
	seedResults(t, s, n, 1000) // ~1 KB per value: ~100 MB of output per format
	for _, format := range []ExportFormat{FormatJSONL, FormatCSV} {
		t.Run(string(format), func(t *testing.T) {
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			w := &heapWatch{}
			got, err := s.Export(ctx, ExportFilter{Schema: "invoice"}, format, w)
			if err != nil {
				t.Fatal(err)
			}
			wantLines := n
			if format == FormatCSV {
				wantLines++
			}
			if got != n || w.lines != wantLines {
				t.Fatalf("exported %d rows, %d lines; want %d rows", got, w.lines, n)
			}
			growth := int64(w.peak) - int64(before.HeapAlloc)
			t.Logf("%s: %d MB written, live heap growth at peak %.1f MB", format, w.written>>20, float64(growth)/(1<<20))
			if growth > 50<<20 {
				t.Errorf("heap grew by %d MB exporting %d MB: export is not streaming", growth>>20, w.written>>20)
			}
			if w.written < 80<<20 {
				t.Errorf("only %d MB written: the test no longer proves anything", w.written>>20)
			}
		})
	}
}
