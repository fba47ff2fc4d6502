package ratelimit

import (
	"slices"
	"testing"
)

func TestLiveMembers(t *testing.T) {
	t.Parallel()
	s := startNATS(t)
	_, js := connect(t, s)
	ctx := t.Context()
	got, err := LiveMembers(ctx, js, "")
	if err != nil || len(got) != 0 {
		t.Fatalf("before any worker: %v, %v; want no members and no error", got, err)
	}
	a := join(t, js, "w1", NewPool("sim:clean", Limits{Concurrency: 2}, WithLogger(quiet())))
	join(t, js, "w2", NewPool("sim:clean", Limits{Concurrency: 2}, WithLogger(quiet())), NewPool("openai:gpt-4o-mini", Limits{Concurrency: 2}, WithLogger(quiet())))
	got, err = LiveMembers(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got["sim:clean"])
	if !slices.Equal(got["sim:clean"], []string{"w1", "w2"}) || !slices.Equal(got["openai:gpt-4o-mini"], []string{"w2"}) || len(got) != 2 {
		t.Fatalf("LiveMembers = %v, want sim:clean [w1 w2] and openai:gpt-4o-mini [w2]", got)
	}
	a.Stop() // leaving deletes its keys at once
	got, err = LiveMembers(ctx, js, "")
	if err != nil || !slices.Equal(got["sim:clean"], []string{"w2"}) {
		t.Fatalf("after w1 left: %v, %v; want sim:clean [w2]", got, err)
	}
}
