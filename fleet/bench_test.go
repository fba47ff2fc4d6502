package fleet_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/extractq/extractq/fleet"
	"github.com/extractq/extractq/fleet/fleettest"
	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/jobs/jobstest"
	"github.com/extractq/extractq/internal/jobs/submit"
	"github.com/extractq/extractq/schema"
)

// BenchmarkSubmit queues the same documents through fleet.Client.Submit
// (what `submit` runs) and through the internal submitter it wraps, on
// one embedded NATS server and database, alternating, so the two can be
// compared in one run: the difference is the fleet layer's cost (its
// pool consumer check and schema registration per call, and a conversion
// per document).
//
//	go test -run XXX -bench Submit -benchtime 4x ./fleet/
func BenchmarkSubmit(b *testing.B) {
	f := fleettest.Start(b)
	ctx := context.Background()
	_, js := jobstest.Connect(b, f.NATSURL)
	st, err := audit.Open(ctx, f.DatabaseURL)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c := fleet.NewClient(js, st.Pool())
	sc, err := schema.Compile([]byte(totalSchema))
	if err != nil {
		b.Fatal(err)
	}
	sub := submit.New(js, st)
	ref, err := sub.RegisterSchema(ctx, "totals", sc)
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	docs := func(prefix string) []fleet.Document {
		out := make([]fleet.Document, n)
		for i := range out {
			out[i] = fleet.Document{ID: fmt.Sprintf("%s-%05d", prefix, i), Text: fmt.Sprintf("invoice %s %d, total: %d", prefix, i, i)}
		}
		return out
	}
	model, pool, _ := submit.ResolveProvider("fleettest-reader:v1")
	viaFleet := func(list []fleet.Document) int {
		s, err := c.Submit(ctx, fleet.Job{Schema: sc, SchemaName: "totals", Provider: "fleettest-reader:v1", Run: "bench"}, slices.Values(list))
		if err != nil {
			b.Fatal(err)
		}
		return s.Queued
	}
	viaInternal := func(list []fleet.Document) int {
		s, err := sub.Submit(ctx, submit.Job{Schema: ref, Provider: "fleettest-reader:v1", Model: model, Pool: pool, Run: "bench"},
			func(fn func(submit.Doc) error) error {
				for _, d := range list {
					if err := fn(submit.Doc{ID: d.ID, Source: d.ID, Text: d.Text}); err != nil {
						return err
					}
				}
				return nil
			}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return s.Queued
	}
	var spent [2]time.Duration
	round := 0
	for b.Loop() {
		round++
		order := []int{0, 1}
		if round%2 == 0 { // each goes first every other round
			order = []int{1, 0}
		}
		for _, k := range order {
			via := []func([]fleet.Document) int{viaFleet, viaInternal}[k]
			list := docs(fmt.Sprintf("r%d-%d", round, k))
			start := time.Now()
			if q := via(list); q != n {
				b.Fatalf("queued %d of %d", q, n)
			}
			spent[k] += time.Since(start)
		}
	}
	b.ReportMetric(float64(n*b.N)/spent[0].Seconds(), "fleet-docs/s")
	b.ReportMetric(float64(n*b.N)/spent[1].Seconds(), "internal-docs/s")
	b.ReportMetric(spent[0].Seconds()/spent[1].Seconds(), "fleet/internal")
}
