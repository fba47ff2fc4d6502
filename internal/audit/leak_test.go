package audit

import (
	"context"
	"testing"

	"github.com/extractq/extractq/llm"

	"github.com/jackc/pgx/v5"

	"github.com/extractq/extractq/schema"
)

const fakeKey = "sk-test-LEAKCHECK-9f8e7d6c5b4a39281706"

// Places a provider error or an echoing model could carry a key.
var leakForms = []string{
	"Incorrect API key provided: " + fakeKey,
	"Authorization: Bearer " + fakeKey,
	`{"error":{"message":"bad key","request":{"headers":{"x-api-key":"` + fakeKey + `"}}}}`,
	"GET https://generativelanguage.googleapis.com/v1beta/models/x:generateContent?key=LEAKCHECKAIzaSyD4-0123456789abcdef&alt=sse",
	"api-key: LEAKCHECK0123456789",
	"AIzaSyLEAKCHECK0123456789abcdefghijklmno",
}

// TestNoKeyInAnyTable writes failing and succeeding records whose provider
// errors, raw responses, violations, reasons and dead letters carry a fake
// key in every form, then searches every table's rows as text.
func TestNoKeyInAnyTable(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	w := newTestWriter(t, s)
	for i, form := range leakForms {
		fatal := testRecord("leak-fatal-"+string(rune('a'+i)), "doc-leak", 1, 1, llm.OutcomeFatal)
		fatal.Attempts[0].Class = "auth"
		fatal.Attempts[0].Error = "openai:gpt-4o-mini: auth (HTTP 401): " + form
		fatal.Attempts[0].Raw = form
		fatal.Attempts[0].Violations = []schema.Violation{{Pointer: "/k", Keyword: "type", Message: form, Value: form}}
		fatal.Reason = "fatal provider error: " + form
		fatal.DeadLetter = &DeadLetter{Stream: "EXTRACTQ_DLQ", Seq: uint64(i + 1), Reason: form}
		ok := testRecord("leak-ok-"+string(rune('a'+i)), "doc-leak-ok", 1, 2, llm.OutcomeOK)
		ok.Attempts[0].Error = "retried after: " + form
		ok.Attempts[0].Raw = "Sure! Using " + form + ` here is {"total": 1}`
		for _, rec := range []*Record{fatal, ok} {
			if err := w.Write(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 8 {
		t.Fatalf("only %d tables found: %v", len(tables), tables)
	}
	searched := 0
	for _, table := range tables {
		var n, total int
		id := pgx.Identifier{table}.Sanitize()
		err := s.pool.QueryRow(ctx, "SELECT count(*) FILTER (WHERE t::text LIKE '%LEAKCHECK%'), count(*) FROM "+id+" t").Scan(&n, &total)
		if err != nil {
			t.Fatal(err)
		}
		searched += total
		if n > 0 {
			t.Errorf("table %s: %d rows contain the fake key", table, n)
		}
	}
	if searched < 40 {
		t.Errorf("searched only %d rows: the records were not written", searched)
	}
}
