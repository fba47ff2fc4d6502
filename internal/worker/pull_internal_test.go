package worker

import (
	"context"
	"testing"
)

// BenchmarkPullRunners prices a pull loop's runners for one pull request
// of eight jobs (one runner waited for, seven taken if free, each given
// back once the job is settled): as release functions (AcquireSlot,
// TryAcquireSlot, as the loops held them before) and as bare tokens.
func BenchmarkPullRunners(b *testing.B) {
	ctx := context.Background()
	const jobs = 8
	b.Run("release funcs", func(b *testing.B) {
		idle := NewSemaphore(jobs)
		var held [jobs]func()
		b.ReportAllocs()
		for b.Loop() {
			r, err := idle.AcquireSlot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			held[0] = r
			for k := 1; k < jobs; k++ {
				if held[k], _ = idle.TryAcquireSlot(); held[k] == nil {
					b.Fatal("no runner free")
				}
			}
			for _, r := range held {
				r()
			}
		}
	})
	b.Run("tokens", func(b *testing.B) {
		idle := NewSemaphore(jobs)
		b.ReportAllocs()
		for b.Loop() {
			if !idle.takeRunner(ctx) {
				b.Fatal("ctx ended")
			}
			for k := 1; k < jobs; k++ {
				if !idle.tryTakeRunner() {
					b.Fatal("no runner free")
				}
			}
			for range jobs {
				idle.giveRunner()
			}
		}
	})
}

// TestRunnerTokens: a runner's token is taken while one is free, refused
// when none is, and free again once given back; takeRunner gives up when
// its context ends.
func TestRunnerTokens(t *testing.T) {
	idle := NewSemaphore(2)
	if !idle.takeRunner(context.Background()) || !idle.tryTakeRunner() {
		t.Fatal("a free runner was refused")
	}
	if idle.tryTakeRunner() {
		t.Fatal("a third runner taken from two")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if idle.takeRunner(ctx) {
		t.Fatal("takeRunner took a runner none was free for")
	}
	idle.giveRunner()
	if !idle.tryTakeRunner() {
		t.Fatal("a runner given back is not free again")
	}
}
