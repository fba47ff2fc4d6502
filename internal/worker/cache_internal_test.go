package worker

import (
	"reflect"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/llm"
)

// TestProviderCacheHitNoAlloc checks that finding a pool's provider for a
// spec makes no allocation (the key built as one string was one per job)
// and tells pools and specs apart, a pool name and spec that would join
// to the same string too.
func TestProviderCacheHitNoAlloc(t *testing.T) {
	var c providerCache
	builds := 0
	build := func(spec string) (llm.Provider, error) {
		builds++
		return fixedProvider{resp: &llm.Response{Text: spec}}, nil
	}
	pools := []Pool{{Name: "a", Budget: NewSemaphore(1)}, {Name: "a\x00b", Budget: NewSemaphore(1)}}
	for _, p := range pools {
		for _, spec := range []string{"b\x00c", "c"} {
			if _, err := c.get(p, nil, spec, build); err != nil {
				t.Fatal(err)
			}
		}
	}
	if builds != 4 {
		t.Errorf("%d providers built for 2 pools × 2 specs, want 4", builds)
	}
	spec := string([]byte("c")) // not the inserted string: the map compares bytes
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.get(pools[0], nil, spec, build); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a cached provider's look-up allocated %v times, want 0", n)
	}
	if builds != 4 {
		t.Errorf("look-ups built %d more providers", builds-4)
	}
}

// BenchmarkProviderCacheGet is a job's look-up of its pool's provider.
func BenchmarkProviderCacheGet(b *testing.B) {
	var c providerCache
	build := func(string) (llm.Provider, error) { return fixedProvider{}, nil }
	p := Pool{Name: "openai", Budget: NewSemaphore(1)}
	spec := "openai:gpt-4o-mini"
	if _, err := c.get(p, nil, spec, build); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.get(p, nil, spec, build); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFinalRecordInDelivery checks that the result's record, made in its
// delivery, is the record a fresh one would be, without an allocation.
func TestFinalRecordInDelivery(t *testing.T) {
	w := &Worker{id: "w1"}
	env := &jobs.Envelope{JobID: "job-1", DocumentID: "doc-1", Run: "run-1", Provider: "sim:clean", Model: "m",
		Schema: jobs.SchemaRef{Name: "s", Version: 2, Fingerprint: "fp"}}
	d := &delivery{env: env, pool: "sim", seq: 7, n: 2, started: time.Now()}
	res := &llm.Result{Outcome: llm.OutcomeOK, Value: []byte(`{"a":1}`), Attempts: []llm.Attempt{{N: 1}}}
	want := w.record(d, res, true)
	got := w.recordInto(&d.final, d, res, true)
	want.FinishedAt = got.FinishedAt
	if got != &d.final || !reflect.DeepEqual(got, want) {
		t.Errorf("record in the delivery:\n%+v\nfresh:\n%+v", got, want)
	}
	if n := testing.AllocsPerRun(100, func() { w.recordInto(&d.final, d, res, true) }); n != 0 {
		t.Errorf("the result's record allocated %v times, want 0", n)
	}
}
