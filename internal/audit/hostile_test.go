package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/redact"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// TestWriterIsolatesBadRecords puts one hostile record in a batch of good
// ones: the good records must all be committed, and the hostile one either
// stored made safe (diagnostics) or refused alone with ErrInvalidRecord.
// Before, Postgres refused the whole batch ("index row requires 10256
// bytes", "invalid byte sequence for encoding \"UTF8\": 0x00") and every
// Write of it failed.
func TestWriterIsolatesBadRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		spoil   func(r *Record)
		refused bool // the hostile record's Write fails with ErrInvalidRecord
		check   string
	}{
		{"10 KB document id", func(r *Record) { r.DocumentID = strings.Repeat("x", 10<<10) }, true, ""},
		{"NUL in document id", func(r *Record) { r.DocumentID = "doc\x00bad" }, true, ""},
		{"NUL in run", func(r *Record) { r.Run = "run\x00" }, true, ""},
		{`\u0000 in the result value`, func(r *Record) { r.Value = json.RawMessage(`{"total":1,"note":"a\u0000b"}`) }, true, ""},
		// jsonb refuses a lone surrogate; nothing checks for it before the
		// batch, so only the retry in halves can isolate it.
		{"lone surrogate in the result value", func(r *Record) { r.Value = json.RawMessage(`{"total":1,"note":"\ud800"}`) }, true, ""},
		{"NUL byte in the raw answer", func(r *Record) { r.Attempts[0].Raw = "{\"total\":\x00 1}" }, false,
			"SELECT raw_response FROM attempts WHERE job_id = 'bad' AND seq = 1"},
		{"invalid UTF-8 in the error", func(r *Record) { r.Attempts[0].Error = "bad \xff\xfe bytes" }, false,
			"SELECT error_message FROM attempts WHERE job_id = 'bad' AND seq = 1"},
		{`\u0000 in a violation`, func(r *Record) {
			r.Attempts[0].Violations = []schema.Violation{{Pointer: "/note", Keyword: "type", Message: "x", Value: "a\x00b"}}
		}, false, "SELECT violations::text FROM attempts WHERE job_id = 'bad' AND seq = 1"},
		{"NUL in the reason", func(r *Record) { r.Reason = "because\x00" }, false, "SELECT reason FROM jobs WHERE job_id = 'bad'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newTestStore(t)
			// One flusher and a linger: the records below share one batch.
			w := newTestWriter(t, s, WithFlushers(1), WithMaxDelay(100*time.Millisecond))
			const good = 40
			bad := testRecord("bad", "doc-bad", 1, 2, llm.OutcomeOK)
			tt.spoil(bad)
			var wg sync.WaitGroup
			errs := make([]error, good+1)
			for i := range good + 1 {
				rec := bad
				if i < good {
					rec = testRecord(fmt.Sprintf("good-%d", i), fmt.Sprintf("doc-%d", i), 1, 2, llm.OutcomeOK)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = w.Write(ctx, rec)
				}()
			}
			wg.Wait()
			for i, err := range errs[:good] {
				if err != nil {
					t.Errorf("good record %d failed with the hostile one: %v", i, err)
				}
			}
			if got := errs[good]; tt.refused != (got != nil) || (got != nil && !errors.Is(got, ErrInvalidRecord)) {
				t.Errorf("hostile record: Write = %v, want refused %v with ErrInvalidRecord", got, tt.refused)
			}
			want := counts{jobs: good, attempts: 2 * good, results: good}
			if !tt.refused {
				want = counts{jobs: good + 1, attempts: 2 * (good + 1), results: good + 1}
			}
			if got := countRows(t, s); got != want {
				t.Errorf("rows %+v, want %+v", got, want)
			}
			if tt.check != "" {
				var text string
				if err := s.pool.QueryRow(ctx, tt.check).Scan(&text); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(text, "\uFFFD") && !strings.Contains(text, `\ufffd`) {
					t.Errorf("stored %q: want the bad bytes replaced by U+FFFD", text)
				}
			}
			st := w.Stats()
			if tt.name == "lone surrogate in the result value" && (st.Splits == 0 || st.Refused != 1) {
				t.Errorf("stats %+v: want the batch split and one record refused", st)
			}
			t.Logf("%d good records committed, hostile one refused: %v; %d transactions, %d failed flushes, %d splits",
				good, errs[good] != nil, st.Batches, st.FlushErrors, st.Splits)
		})
	}
}

// TestResultsPerText: a document whose text changes under the same id gets
// a result for each text (before, the second was dropped as a duplicate of
// document + fingerprint + model); export and latest_valid_results give
// the current text's result whatever order the results were written in;
// history shows both texts and both results.
func TestResultsPerText(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"old result first", "new result first"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := newTestStore(t)
			if _, _, err := s.RegisterSchema(ctx, "invoice", []byte(`{"type":"object","properties":{"total":{"type":"number"}}}`), "fp1"); err != nil {
				t.Fatal(err)
			}
			w := newTestWriter(t, s)
			const textA, textB = "Invoice total 10", "Invoice total 20 (corrected)"
			result := func(job, text, value string) *Record {
				r := testRecord(job, "inv-1", 1, 1, llm.OutcomeOK)
				r.DocumentHash, r.Value = HashText(text), json.RawMessage(value)
				return r
			}
			if err := s.PutDocument(ctx, Document{ID: "inv-1", Text: textA}); err != nil {
				t.Fatal(err)
			}
			if err := s.PutDocument(ctx, Document{ID: "inv-1", Text: textB}); err != nil {
				t.Fatal(err)
			}
			recs := []*Record{result("job-a", textA, `{"total":10}`), result("job-b", textB, `{"total":20}`)}
			if order == "new result first" {
				recs[0], recs[1] = recs[1], recs[0]
			}
			for _, r := range recs {
				if err := w.Write(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if got := countRows(t, s); got.results != 2 {
				t.Fatalf("%d results stored, want one per text", got.results)
			}
			var buf bytes.Buffer
			if n, err := s.Export(ctx, ExportFilter{Schema: "invoice"}, FormatJSONL, &buf); err != nil || n != 1 {
				t.Fatalf("export: %d rows, %v", n, err)
			}
			if !strings.Contains(buf.String(), `"value":{"total":20}`) || !strings.Contains(buf.String(), HashText(textB)) {
				t.Errorf("export %s: want the current text's result", buf.String())
			}
			var view string
			if err := s.pool.QueryRow(ctx, "SELECT value::text FROM latest_valid_results WHERE document_id = 'inv-1'").Scan(&view); err != nil || view != `{"total": 20}` {
				t.Errorf("latest_valid_results = %s, %v; want the current text's result", view, err)
			}
			h, err := s.History(ctx, "inv-1")
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Texts) != 2 || h.Texts[0].ContentHash != HashText(textB) || h.Texts[0].ReplacedAt != nil ||
				h.Texts[1].ContentHash != HashText(textA) || h.Texts[1].ReplacedAt == nil || h.Texts[1].Bytes != len(textA) {
				t.Errorf("history texts %+v: want the current text, then the replaced one", h.Texts)
			}
			hashes := map[string]bool{}
			for _, r := range h.Results {
				hashes[r.ContentHash] = true
			}
			if len(h.Results) != 2 || !hashes[HashText(textA)] || !hashes[HashText(textB)] {
				t.Errorf("history results %+v: want one per text", h.Results)
			}
			// The earlier text stays readable by its hash (a dead letter of
			// it can be resubmitted).
			if d, err := s.DocumentVersion(ctx, "inv-1", HashText(textA)); err != nil || d.Text != textA {
				t.Errorf("DocumentVersion(old) = %+v, %v", d, err)
			}
			if _, err := s.DocumentVersion(ctx, "inv-1", HashText("never")); !errors.Is(err, ErrNotFound) {
				t.Errorf("DocumentVersion(unknown) = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestJobStateResultOfSameText: a job counts as having a result only when
// a result exists for its own text.
func TestJobStateResultOfSameText(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	old := testRecord("j-old", "doc", 1, 1, llm.OutcomeOK)
	old.DocumentHash = HashText("old text")
	failed := testRecord("j-new", "doc", 1, 1, llm.OutcomeExhausted)
	failed.DocumentHash = HashText("new text")
	for _, r := range []*Record{old, failed} {
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.JobStates(ctx, []string{"j-old", "j-new"})
	if err != nil {
		t.Fatal(err)
	}
	if !st["j-old"].OK() || st["j-new"].OK() {
		t.Errorf("states %+v: the new text's failed job must not count the old text's result", st)
	}
}

// TestResultValueNeverRewritten: the writer stores a result's value exactly
// as validated, even when it looks like a credential, and marks a value
// holding the redaction marker as redacted in the results, the view and
// the export.
func TestResultValueNeverRewritten(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	if _, _, err := s.RegisterSchema(ctx, "invoice", []byte(`{"type":"object","properties":{"vendor":{"type":"object","properties":{"name":{"type":"string"}}}}}`), "fp1"); err != nil {
		t.Fatal(err)
	}
	w := newTestWriter(t, s)
	tests := []struct {
		doc, value string
		redacted   bool
	}{
		{"keyish", `{"vendor": {"name": "sk-hynix-semiconductor-0042"}}`, false},
		{"password-ish", `{"vendor": {"name": "password=Sunshine-Bakery"}}`, false},
		{"marked", `{"vendor": {"name": "` + redact.Marker + `"}}`, true},
	}
	for _, tt := range tests {
		r := testRecord("job-"+tt.doc, tt.doc, 1, 1, llm.OutcomeOK)
		r.Value = json.RawMessage(tt.value)
		if err := w.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range tests {
		var value string
		var redacted, viewRedacted bool
		err := s.pool.QueryRow(ctx, `SELECT r.value::text, r.redacted, v.redacted FROM results r
			JOIN latest_valid_results v USING (document_id) WHERE r.document_id = $1`, tt.doc).Scan(&value, &redacted, &viewRedacted)
		if err != nil {
			t.Fatal(err)
		}
		if value != tt.value || redacted != tt.redacted || viewRedacted != tt.redacted {
			t.Errorf("%s: stored %s redacted=%v (view %v), want %s redacted=%v", tt.doc, value, redacted, viewRedacted, tt.value, tt.redacted)
		}
	}
	var jsonl, csvOut bytes.Buffer
	if _, err := s.Export(ctx, ExportFilter{Schema: "invoice"}, FormatJSONL, &jsonl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Export(ctx, ExportFilter{Schema: "invoice"}, FormatCSV, &csvOut); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(jsonl.String(), `"redacted":true`); n != 1 {
		t.Errorf("jsonl marks %d results redacted, want 1:\n%s", n, jsonl.String())
	}
	if !strings.Contains(csvOut.String(), "_redacted") || strings.Count(csvOut.String(), ",true,") != 1 {
		t.Errorf("csv does not mark the one redacted result:\n%s", csvOut.String())
	}
}

// TestPutDocumentsIsolatesBadDocuments: documents Postgres cannot store are
// reported one by one; the others are stored.
func TestPutDocumentsIsolatesBadDocuments(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := newTestStore(t)
	docs := []Document{
		{ID: "ok-1", Text: "fine"},
		{ID: strings.Repeat("x", 10<<10), Text: "long id"},
		{ID: "nul\x00id", Text: "nul in id"},
		{ID: "esc\x1b[2Jid", Text: "terminal escape in id"},
		{ID: "nul-text", Text: "a\x00b"},
		{ID: "nul-meta", Text: "t", Metadata: json.RawMessage(`{"k":"a\u0000b"}`)},
		{ID: "escaped-backslash-meta", Text: "t", Metadata: json.RawMessage(`{"k":"a\\u0000b"}`)}, // the text \u0000: fine
		{ID: "ok-2", Text: "fine too"},
	}
	err := s.PutDocuments(ctx, docs)
	var de *DocumentErrors
	if !errors.As(err, &de) || !errors.Is(err, ErrBadDocument) {
		t.Fatalf("PutDocuments = %v, want *DocumentErrors matching ErrBadDocument", err)
	}
	for i, d := range docs {
		_, refused := de.Errs[i]
		wantRefused := i >= 1 && i <= 5
		if refused != wantRefused {
			t.Errorf("document %d (%.20q): refused %v, want %v (%v)", i, d.ID, refused, wantRefused, de.Errs[i])
		}
		_, err := s.Document(ctx, d.ID)
		if stored := err == nil; stored == wantRefused {
			t.Errorf("document %d (%.20q): stored %v", i, d.ID, stored)
		}
	}
	// Refusals only the database knows of (here a CHECK constraint added for
	// the test) are isolated too, by retrying in halves.
	if _, err := s.pool.Exec(ctx, "ALTER TABLE documents ADD CONSTRAINT no_forbidden CHECK (body <> 'forbidden')"); err != nil {
		t.Fatal(err)
	}
	err = s.PutDocuments(ctx, []Document{{ID: "a", Text: "x"}, {ID: "b", Text: "forbidden"}, {ID: "c", Text: "y"}})
	if !errors.As(err, &de) || len(de.Errs) != 1 || de.Errs[1] == nil {
		t.Fatalf("PutDocuments = %v, want only document 1 refused", err)
	}
	for _, id := range []string{"a", "c"} {
		if _, err := s.Document(ctx, id); err != nil {
			t.Errorf("%s not stored next to the refused one: %v", id, err)
		}
	}
	// The same id twice in one call: the later text wins, the earlier is kept.
	if err := s.PutDocuments(ctx, []Document{{ID: "twice", Text: "first"}, {ID: "x", Text: "x"}, {ID: "twice", Text: "second"}}); err != nil {
		t.Fatalf("same id twice: %v", err)
	}
	if d, err := s.Document(ctx, "twice"); err != nil || d.Text != "second" {
		t.Errorf("twice: %+v, %v; want the later text", d, err)
	}
	if d, err := s.DocumentVersion(ctx, "twice", HashText("first")); err != nil || d.Text != "first" {
		t.Errorf("twice, earlier text: %+v, %v", d, err)
	}
}

func TestCheckDocumentID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id string
		ok bool
	}{
		{"invoices/2024-117.pdf", true},
		{"größe/日本語.txt", true},
		{strings.Repeat("a", MaxDocumentIDBytes), true},
		{strings.Repeat("a", MaxDocumentIDBytes+1), false},
		{"", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\x1b[31mred", false},
		{"a\x7f", false},
		{"a\u009bb", false}, // C1 control (CSI)
		{"bad\xffutf8", false},
	}
	for _, tt := range tests {
		if err := CheckDocumentID(tt.id); (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrBadDocument)) {
			t.Errorf("CheckDocumentID(%.30q) = %v, want ok %v", tt.id, err, tt.ok)
		}
	}
}

func TestReplaceNULEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"a":"x"}`, `{"a":"x"}`},
		{`{"a":"\u0000"}`, `{"a":"\ufffd"}`},
		{`{"a":"\\u0000"}`, `{"a":"\\u0000"}`},           // an escaped backslash, then text
		{`{"a":"\\\u0000"}`, `{"a":"\\\ufffd"}`},         // a backslash, then the escape
		{`["\u0000\u0000"]`, `["\ufffd\ufffd"]`},         // back to back
		{`["\u0000","\\u0000"]`, `["\ufffd","\\u0000"]`}, // mixed
	}
	for _, tt := range tests {
		if got := string(replaceNULEscapes([]byte(tt.in))); got != tt.want {
			t.Errorf("replaceNULEscapes(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if !json.Valid([]byte(tt.want)) {
			t.Errorf("%s is not JSON", tt.want)
		}
	}
}
