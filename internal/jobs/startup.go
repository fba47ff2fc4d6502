package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Transient reports whether err is what JetStream answers while a leader
// is being elected, a node is down or rejoins: timeouts, no responders,
// "temporarily unavailable", "stream is offline". A retry after a moment
// may succeed; any other error will fail the same way again.
func Transient(err error) bool { return transient(err) }

// Backoff is the wait before try n+1 (n from 0) of a start-up step that
// failed transiently: 200ms doubling to 5s.
func Backoff(n int) time.Duration { return min(200*time.Millisecond<<min(n, 5), 5*time.Second) }

// startTry bounds one try of a start-up request, so that a request lost
// in an election is retried instead of waiting for the caller's deadline.
const startTry = 5 * time.Second

// StartConsumer returns the durable consumer of pool with settings s,
// creating or updating it, and waits out a cluster that cannot answer yet
// (a node down, an election under way): transient failures are retried
// with backoff until ctx ends, each logged with what was tried. When the
// update keeps failing but the consumer exists (created by `worker
// migrate`, `submit` or another worker), it is used as it is, with a
// warning, so that a roll-out during a node loss still drains the pool.
// Other errors (a missing stream, bad settings) are returned at once.
func StartConsumer(ctx context.Context, js jetstream.JetStream, pool string, s ConsumerSettings, log *slog.Logger) (jetstream.Consumer, error) {
	return startRetry(ctx, log, "create consumer "+ConsumerName(pool), func(tctx context.Context) (jetstream.Consumer, error) {
		c, err := EnsureConsumer(tctx, js, pool, s)
		if err == nil || !transient(err) {
			return c, err
		}
		if existing, lerr := js.Consumer(tctx, JobsStream, ConsumerName(pool)); lerr == nil {
			log.Warn("JetStream could not update the pool's consumer (a node down or an election under way): using it with the settings it has; restart the worker once the cluster is whole to apply this worker's",
				"consumer", ConsumerName(pool), "err", err)
			return existing, nil
		}
		return nil, err
	})
}

// StartAdvisoryConsumer is EnsureAdvisoryConsumer, waiting out a cluster
// that cannot answer yet as StartConsumer does.
func StartAdvisoryConsumer(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (jetstream.Consumer, error) {
	return startRetry(ctx, log, "create consumer "+AdvisoryConsumer, func(tctx context.Context) (jetstream.Consumer, error) {
		return EnsureAdvisoryConsumer(tctx, js)
	})
}

// startRetry runs try, each within startTry, until it succeeds, fails with
// an error that is not transient, or ctx ends; it logs every transient
// failure and returns the last error with the number of tries.
func startRetry[T any](ctx context.Context, log *slog.Logger, what string, try func(context.Context) (T, error)) (T, error) {
	start := time.Now()
	for n := 0; ; n++ {
		tctx, cancel := context.WithTimeout(ctx, startTry)
		v, err := try(tctx)
		cancel()
		if err == nil || !transient(err) {
			return v, err
		}
		gaveUp := func() (T, error) {
			return v, fmt.Errorf("%s: gave up after %d tries over %s while JetStream could not answer (a node down or an election under way): %w",
				what, n+1, time.Since(start).Round(time.Second), err)
		}
		if ctx.Err() != nil {
			return gaveUp()
		}
		wait := Backoff(n)
		log.Warn("JetStream cannot answer yet (a node down or an election under way): retrying", "step", what, "try", n+1, "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return gaveUp()
		case <-t.C:
		}
	}
}

// EnsurePoolConsumer creates the durable consumer of pool with the default
// settings when it does not exist yet, and leaves an existing one as it
// is: `submit` and `worker migrate` call it so that the consumer exists
// before any worker needs it, and a worker started while a node is down
// finds it instead of having to create it. The workers apply their own
// settings when they start.
func EnsurePoolConsumer(ctx context.Context, js jetstream.JetStream, pool string, s ConsumerSettings) error {
	if err := ValidatePool(pool); err != nil {
		return err
	}
	if _, err := js.Consumer(ctx, JobsStream, ConsumerName(pool)); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("look up consumer %s on %s: %w", ConsumerName(pool), JobsStream, err)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	_, err := js.CreateConsumer(ctx, JobsStream, s.ConsumerConfig(pool))
	if err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
		return fmt.Errorf("create consumer %s on %s: %w", ConsumerName(pool), JobsStream, err)
	}
	return nil
}

// ErrNoJetStream is matched by WaitJetStream's error for a NATS server
// that runs without JetStream: start it with -js; waiting will not help.
var ErrNoJetStream = errors.New("NATS server without JetStream")

// WaitJetStream asks for the account's JetStream information (only a
// cluster's meta leader answers it) until it answers, fails with an error
// no retry cures, or wait passes (unless ctx ends first), with Backoff
// between tries of at most 5 s each: a cluster electing its meta leader,
// as when workers start together or a node is lost, answers after a few
// seconds. A server without JetStream is ErrNoJetStream at once; when the
// wait is over, the error says what was tried and wraps the last failure.
// wait 0 tries once.
func WaitJetStream(ctx context.Context, js jetstream.JetStream, wait time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if wait <= 0 {
		wctx = ctx // a single try, bounded by startTry
	}
	start := time.Now()
	for n := 0; ; n++ {
		tctx, cancelTry := context.WithTimeout(wctx, startTry)
		_, err := js.AccountInfo(tctx)
		cancelTry()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return fmt.Errorf("%w: %w", ErrNoJetStream, err)
		case !transient(err):
			return err
		}
		if wait <= 0 {
			return fmt.Errorf("JetStream did not answer (a cluster answers once it has elected a meta leader; is a majority of its nodes up?): %w", err)
		}
		t := time.NewTimer(Backoff(n))
		select {
		case <-wctx.Done():
			t.Stop()
			return fmt.Errorf("JetStream did not answer: %d tries over %s (a cluster answers once it has elected a meta leader; is a majority of its nodes up?), last: %w",
				n+1, time.Since(start).Round(100*time.Millisecond), err)
		case <-t.C:
		}
	}
}
