package jobs_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/extractq/extractq/internal/jobs"
)

// TestMessageBatchIsSealedMessage builds the same jobs with a
// MessageBatch and with SealedMessage, whose allocations it shares out,
// and compares the messages: texts small and large (one above a quarter
// of a chunk, one in the Object Store), more messages than the batch was
// made for, and bodies that must not overlap.
func TestMessageBatchIsSealedMessage(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	js := setup(t)
	p := jobs.NewPublisher(js, jobs.WithInlineLimit(200<<10), jobs.WithMaxDocument(1<<20))
	texts := []string{"short", "", strings.Repeat("ü", 1000), strings.Repeat("a", 70<<10), strings.Repeat("b", 300<<10), "tail"}
	for i := range 600 { // past a chunk of 256 KiB
		texts = append(texts, strings.Repeat("c", 300+i%700))
	}
	b := p.NewMessageBatch(len(texts) - 3)
	base := envelope("doc", "m")
	var got [][]byte
	for i, text := range texts {
		env, want := new(*base), new(*base)
		env.Seal(text)
		want.Seal(text)
		m, err := b.Sealed(ctx, env, text)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		w, err := p.SealedMessage(ctx, want, text)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if m.Subject != w.Subject || !bytes.Equal(m.Data, w.Data) || !reflect.DeepEqual(m.Header, w.Header) || m.Reply != w.Reply {
			t.Fatalf("%d: batch built %s %v %.200q, SealedMessage %s %v %.200q", i, m.Subject, m.Header, m.Data, w.Subject, w.Header, w.Data)
		}
		if i < len(texts)-3 && cap(m.Data) != len(m.Data) {
			t.Fatalf("%d: body has %d bytes of room after it: an append would write into the next", i, cap(m.Data)-len(m.Data))
		}
		got = append(got, m.Data)
	}
	// Every body still holds its own job once all are built.
	for i, text := range texts {
		want := new(*base)
		want.Seal(text)
		w, err := p.SealedMessage(ctx, want, text)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i], w.Data) {
			t.Fatalf("%d: body changed after later ones were built", i)
		}
	}
}

// TestMessageBatchAllocations checks the point of a MessageBatch: fewer
// allocations per message than SealedMessage.
func TestMessageBatchAllocations(t *testing.T) {
	ctx := t.Context()
	p := jobs.NewPublisher(nil)
	env := envelope("doc", "m")
	env.Seal("some text")
	one := testing.AllocsPerRun(200, func() {
		if _, err := p.SealedMessage(ctx, env, "some text"); err != nil {
			t.Fatal(err)
		}
	})
	b := p.NewMessageBatch(1000)
	batched := testing.AllocsPerRun(200, func() {
		if _, err := b.Sealed(ctx, env, "some text"); err != nil {
			t.Fatal(err)
		}
	})
	if batched > one-2 {
		t.Fatalf("%.1f allocations per message in a batch, %.1f alone: want at least two fewer", batched, one)
	}
}
