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

// TestOutputNamesChunks: `history` and `dlq show` say which part of a long
// document each attempt worked on and which prefill step it was, and `dlq
// list` and `dlq show` name the part whose failure dead-lettered the
// document: its number of all, its character offsets and its own reason.
func TestOutputNamesChunks(t *testing.T) {
	t.Parallel()
	now := time.Now()
	part := &llm.Span{Index: 2, Start: 1460, End: 2048}
	h := &audit.History{
		DocumentID: "long",
		Jobs:       []audit.JobInfo{{JobID: "j1", DocumentID: "long", Status: "exhausted"}},
		Attempts: []audit.AttemptInfo{
			{JobID: "j1", N: 1, Chunk: part, ErrorClass: "no_json"},
			{JobID: "j1", N: 2, Pointer: "/items/0/sku", Step: "value"},
			{JobID: "j1", N: 3, Step: "whole"},
		},
	}
	l := &jobs.Letter{Seq: 9, Time: now, DeadLetter: jobs.DeadLetter{
		Job: jobs.Envelope{JobID: "j1", DocumentID: "long", Provider: "sim:clean"},
		Result: llm.Result{Outcome: llm.OutcomeExhausted, Chunks: make([]llm.Span, 7), FailedChunk: part,
			Reason:   "chunk 3 of 7 (characters 1460-2048) failed: 2 attempts; no JSON found in the answer",
			Attempts: []llm.Attempt{{N: 1, Chunk: part, Class: llm.ClassNoJSON}}},
		ChunkFailure: &jobs.ChunkFailure{Index: 2, Of: 7, Start: 1460, End: 2048, Reason: "2 attempts; no JSON found in the answer"},
	}}
	plain := &jobs.Letter{Seq: 10, Time: now, DeadLetter: jobs.DeadLetter{Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid"}}}
	summary, err := json.Marshal(letterSummary(l))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		out    string
		want   []string
		absent []string
	}{
		{"history", capture(func(b *bytes.Buffer) { printHistory(b, h) }),
			[]string{"chunk 3 (characters 1460-2048)", "prefill value at /items/0/sku", "prefill whole at /"}, nil},
		{"dlq show", capture(func(b *bytes.Buffer) { printLetter(b, l, &fleetview.LetterPlaces{}) }),
			[]string{"failed     chunk 3 of 7 (characters 1460-2048): 2 attempts; no JSON found in the answer", "\n  chunk 3 (characters 1460-2048)\n"}, nil},
		{"dlq show of a whole document", capture(func(b *bytes.Buffer) { printLetter(b, plain, &fleetview.LetterPlaces{}) }), nil, []string{"failed ", "chunk"}},
		{"dlq list", letterRow(l), []string{"\t3/7\tchunk 3 of 7"}, nil},
		{"dlq list of a whole document", letterRow(plain), []string{"\t-\tstill invalid"}, nil},
		{"dlq list --json", string(summary), []string{`"chunk_failure":{"index":2,"of":7,"start":1460,"end":2048,"reason":"2 attempts; no JSON found in the answer"}`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, w := range tt.want {
				if !strings.Contains(tt.out, w) {
					t.Errorf("output lacks %q:\n%s", w, tt.out)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(tt.out, w) {
					t.Errorf("output holds %q:\n%s", w, tt.out)
				}
			}
		})
	}
}

func capture(print func(*bytes.Buffer)) string {
	var b bytes.Buffer
	print(&b)
	return b.String()
}
