package main

import (
	"encoding/json"
	"testing"

	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

func TestAnnounceDoneOnceEveryJobIsFinal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if err := announceDone(ctx, js, "nightly", waitResult{Total: 1, Done: 1}); err != nil {
		t.Fatalf("without the events stream: %v, want nothing done", err)
	}
	if err := events.Ensure(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	for _, res := range []waitResult{
		{Total: 3, Done: 1, Unfinished: 2, TimedOut: true},
		{Total: 3, Done: 2, Unfinished: 1, Interrupted: true},
		{Total: 3, Done: 2, Failed: 1},
		{Total: 3, Done: 2, Failed: 1}, // re-attached: de-duplicated
	} {
		if err := announceDone(ctx, js, "nightly", res); err != nil {
			t.Fatal(err)
		}
	}
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d events, want one done", info.State.Msgs)
	}
	m, err := s.GetLastMsgForSubject(ctx, events.Subject("nightly", events.KindDone))
	if err != nil {
		t.Fatal(err)
	}
	var e events.Event
	if err := json.Unmarshal(m.Data, &e); err != nil || e.Total != 3 || e.OK != 2 || e.Failed != 1 {
		t.Fatalf("done event %s (%v), want totals 3/2/1", m.Data, err)
	}
}
