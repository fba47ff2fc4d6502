package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerSettings are the redelivery settings of the per-pool consumers.
type ConsumerSettings struct {
	// AckWait is how long the server waits for an ack (or an in-progress
	// signal) before redelivering.
	AckWait time.Duration
	// MaxDeliver bounds deliveries; the worker dead-letters on the last one.
	MaxDeliver int
	// BackOff, when set, replaces AckWait for successive redeliveries after
	// an ack timeout (a crashed worker); its length must be below MaxDeliver.
	BackOff []time.Duration
	// MaxAckPending bounds jobs out at once on the consumer across the fleet.
	MaxAckPending int
}

// DefaultConsumerSettings: a job gets 5 deliveries, redelivered after a
// crash at 30s, 1m, 2m then 5m (BackOffFor the 30 s ack wait).
func DefaultConsumerSettings() ConsumerSettings {
	return ConsumerSettings{
		AckWait:       30 * time.Second,
		MaxDeliver:    5,
		BackOff:       BackOffFor(30*time.Second, 5),
		MaxAckPending: 10000,
	}
}

// BackOffFor is the back-off that goes with an ack wait when none is set:
// the ack wait, then twice, four and ten times it, as many steps as
// maxDeliver allows (fewer than it). JetStream takes a back-off's first
// step as the consumer's ack wait, so a back-off that did not follow the
// ack wait (the default's 30 s under a 5 s ack wait) would override it.
func BackOffFor(ackWait time.Duration, maxDeliver int) []time.Duration {
	steps := []time.Duration{ackWait, 2 * ackWait, 4 * ackWait, 10 * ackWait}
	return steps[:max(0, min(len(steps), maxDeliver-1))]
}

// Validate checks the settings and names the bad one.
func (s ConsumerSettings) Validate() error {
	switch {
	case s.AckWait < time.Second:
		return fmt.Errorf("ack_wait %s: must be at least 1s", s.AckWait)
	case s.MaxDeliver < 1:
		return fmt.Errorf("max_deliver %d: must be at least 1", s.MaxDeliver)
	case len(s.BackOff) > 0 && len(s.BackOff) >= s.MaxDeliver:
		return fmt.Errorf("backoff has %d entries: must be fewer than max_deliver (%d)", len(s.BackOff), s.MaxDeliver)
	case s.MaxAckPending < 1:
		return fmt.Errorf("max_ack_pending %d: must be at least 1", s.MaxAckPending)
	}
	for i, d := range s.BackOff {
		if d < time.Second {
			return fmt.Errorf("backoff[%d] %s: must be at least 1s", i, d)
		}
	}
	return nil
}

// ProgressInterval is how often a running job tells the server it is still
// being worked on: a third of the shortest ack deadline it may have.
func (s ConsumerSettings) ProgressInterval() time.Duration {
	shortest := s.AckWait
	for _, d := range s.BackOff {
		shortest = min(shortest, d)
	}
	return shortest / 3
}

// ConsumerConfig is the durable pull consumer of a pool.
func (s ConsumerSettings) ConsumerConfig(pool string) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       ConsumerName(pool),
		Description:   "extractq workers of pool " + pool,
		FilterSubject: JobSubject(pool),
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       s.AckWait,
		MaxDeliver:    s.MaxDeliver,
		BackOff:       s.BackOff,
		MaxAckPending: s.MaxAckPending,
	}
}

// EnsureConsumer creates or updates the durable pull consumer of pool.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, pool string, s ConsumerSettings) (jetstream.Consumer, error) {
	if err := ValidatePool(pool); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cfg := s.ConsumerConfig(pool)
	c, err := js.CreateOrUpdateConsumer(ctx, JobsStream, cfg)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("consumer %s: stream %s does not exist: run `worker migrate`: %w", cfg.Durable, JobsStream, err)
	}
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on %s: %w", cfg.Durable, JobsStream, err)
	}
	return c, nil
}

// SupportsTermReason reports whether a server of this version (e.g.
// nc.ConnectedServerVersion()) understands TermWithReason: 2.10.4 and
// later. An older server ignores it and redelivers the job, so the worker
// falls back to a plain Term there.
func SupportsTermReason(serverVersion string) bool {
	var major, minor, patch int
	if _, err := fmt.Sscanf(serverVersion, "%d.%d.%d", &major, &minor, &patch); err != nil {
		return false
	}
	return major > 2 || major == 2 && (minor > 10 || minor == 10 && patch >= 4)
}

// Terminate tells the server never to redeliver msg, with the reason where
// the server supports it.
func Terminate(msg jetstream.Msg, reason string, withReason bool) error {
	if withReason {
		return msg.TermWithReason(reason)
	}
	return msg.Term()
}

// EnsureAdvisoryConsumer creates the durable pull consumer workers share on
// EXTRACTQ_ADVISORIES.
func EnsureAdvisoryConsumer(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	c, err := js.CreateOrUpdateConsumer(ctx, AdvisoryStream, jetstream.ConsumerConfig{
		Durable: AdvisoryConsumer, Description: "extractq workers moving exhausted jobs to the DLQ",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on %s: %w (run `worker migrate`)", AdvisoryConsumer, AdvisoryStream, err)
	}
	return c, nil
}
