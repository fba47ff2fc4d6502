package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/fleetview"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
)

// hostile holds what a document or a model can smuggle to a terminal:
// clear screen and home, a window title (OSC … BEL), a carriage return that
// overwrites the line, a C1 CSI, and a bidi override.
const hostile = "inv\x1b[2J\x1b[H\x1b]0;pwned\x07\rOK\u009b31m\u202e"

// TestHumanOutputEscapesControls: history and dlq show print ids, answers,
// errors and reasons escaped (JSON output is escaped by its encoder).
func TestHumanOutputEscapesControls(t *testing.T) {
	t.Parallel()
	now := time.Now()
	h := &audit.History{
		DocumentID: hostile,
		Texts:      []audit.TextInfo{{ContentHash: "aaaa", Bytes: 3, StoredAt: now}},
		Jobs:       []audit.JobInfo{{JobID: "j1", DocumentID: hostile, Run: hostile, SchemaName: "invoice", ContentHash: "aaaa", Status: "exhausted", Reason: hostile}},
		Attempts: []audit.AttemptInfo{{JobID: "j1", Raw: "line one\n" + hostile, ErrorMessage: hostile, ErrorClass: "schema",
			Violations: json.RawMessage(`[{"message":"` + strings.ReplaceAll(hostile, "\x1b", `\u001b`) + `"}]`)}},
		Results: []audit.ResultInfo{{SchemaName: "invoice", ContentHash: "aaaa", Value: json.RawMessage(`{"vendor":"x"}`), Redacted: true,
			Sources: map[string]llm.Source{"/vendor" + hostile: {Page: 1, PageLabel: hostile, Snippet: hostile}}}},
		DeadLetters: []audit.DeadLetterInfo{{Stream: "EXTRACTQ_DLQ", JobID: "j1", Reason: hostile}},
	}
	l := &jobs.Letter{Seq: 7, Time: now, DeadLetter: jobs.DeadLetter{
		Job:      jobs.Envelope{JobID: "j1", DocumentID: hostile, Run: hostile, Provider: "sim:clean"},
		Result:   llm.Result{Outcome: llm.OutcomeExhausted, Reason: hostile, Attempts: []llm.Attempt{{N: 1, Raw: hostile, Error: hostile}}},
		WorkerID: hostile,
	}}
	places := &fleetview.LetterPlaces{Violations: []audit.FieldSource{{Field: "/total", Page: 2, Start: 0, End: 3, Snippet: hostile}}}
	tests := []struct {
		name  string
		print func(*bytes.Buffer)
		want  []string
	}{
		{"history", func(b *bytes.Buffer) { printHistory(b, h) }, []string{`inv\x1b[2J\x1b[H\x1b]0;pwned\x07\rOK\u009b31m\u202e`, "line one\n", "text aaaa… (current)", "REDACTED",
			`source /vendorinv\x1b[2J`, `page 1 (inv\x1b[2J`, `"inv\x1b[2J\x1b[H\x1b]0;pwned\a\rOK\u009b31m\u202e"`}},
		{"dlq show", func(b *bytes.Buffer) { printLetter(b, l, places) }, []string{`inv\x1b[2J\x1b[H`, `\rOK`, `misread    /total  page 2  chars 0-3  "inv\x1b`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			tt.print(&b)
			out := b.String()
			if strings.ContainsAny(out, "\x1b\x07\r\u009b\u202e") {
				t.Errorf("output holds raw control characters:\n%q", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestDLQShowJSONPlaces: `dlq show --json` is the letter with "places"
// added beside its own fields, and without it when nothing was placed.
func TestDLQShowJSONPlaces(t *testing.T) {
	t.Parallel()
	l := &jobs.Letter{Seq: 9, DeadLetter: jobs.DeadLetter{Job: jobs.Envelope{JobID: "j9"}, Result: llm.Result{Reason: "still invalid"}}}
	places := &fleetview.LetterPlaces{FirstPage: 2, LastPage: 3, Violations: []audit.FieldSource{{Field: "/total", Page: 2, Start: 4, End: 9, Snippet: "Total 12,50"}}}
	tests := []struct {
		name   string
		places *fleetview.LetterPlaces
		want   []string
		absent string
	}{
		{"placed", places, []string{`"seq":9`, `"job_id":"j9"`, `"reason":"still invalid"`,
			`"places":{"violations":[{"field":"/total","page":2,"start":4,"end":9,"snippet":"Total 12,50"}],"first_page":2,"last_page":3}`}, ""},
		{"nothing placed", &fleetview.LetterPlaces{}, []string{`"seq":9`}, `"places"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(letterJSON(l, tt.places))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %s", b, w)
				}
			}
			if tt.absent != "" && strings.Contains(string(b), tt.absent) {
				t.Errorf("%s has %s", b, tt.absent)
			}
		})
	}
}
