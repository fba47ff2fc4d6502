package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamOption tunes the streams EnsureStreams creates.
type StreamOption func(*streamOptions)

type streamOptions struct {
	replicas        int
	duplicateWindow time.Duration
	dlqMaxAge       time.Duration
	storage         jetstream.StorageType
}

// WithReplicas sets the replica count of every stream and bucket (default 1).
func WithReplicas(n int) StreamOption { return func(o *streamOptions) { o.replicas = n } }

// WithDuplicateWindow sets how long EXTRACTQ_JOBS remembers Nats-Msg-Id
// values (default 24h): a document submitted twice within it is queued once.
func WithDuplicateWindow(d time.Duration) StreamOption {
	return func(o *streamOptions) { o.duplicateWindow = d }
}

// WithDLQMaxAge sets how long dead letters are kept (default 30 days).
func WithDLQMaxAge(d time.Duration) StreamOption { return func(o *streamOptions) { o.dlqMaxAge = d } }

// WithMemoryStorage keeps streams in memory: for tests and benchmarks only.
func WithMemoryStorage() StreamOption {
	return func(o *streamOptions) { o.storage = jetstream.MemoryStorage }
}

func newStreamOptions(opts []StreamOption) streamOptions {
	o := streamOptions{replicas: 1, duplicateWindow: 24 * time.Hour, dlqMaxAge: 30 * 24 * time.Hour, storage: jetstream.FileStorage}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// StreamConfigs returns the configurations EnsureStreams applies.
func StreamConfigs(opts ...StreamOption) (jobsCfg, dlqCfg, advisoryCfg jetstream.StreamConfig) {
	o := newStreamOptions(opts)
	jobsCfg = jetstream.StreamConfig{
		Name:        JobsStream,
		Description: "extractq jobs, one subject per provider pool",
		Subjects:    []string{jobsSubjectPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     o.storage,
		Replicas:    o.replicas,
		Duplicates:  o.duplicateWindow,
		Discard:     jetstream.DiscardOld,
	}
	dlqCfg = jetstream.StreamConfig{
		Name:        DLQStream,
		Description: "extractq dead letters with full diagnostics",
		Subjects:    []string{dlqSubjectPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     o.storage,
		Replicas:    o.replicas,
		MaxAge:      o.dlqMaxAge,
		// Dead letters are deduplicated by job id: a worker that crashes
		// between publishing a dead letter and terminating the job publishes
		// the same letter again on redelivery.
		Duplicates: min(o.duplicateWindow, o.dlqMaxAge),
		Discard:    jetstream.DiscardOld,
	}
	// Advisories are core NATS messages: captured in a stream, one that
	// fires while no worker runs is handled when one starts.
	advisoryCfg = jetstream.StreamConfig{
		Name:        AdvisoryStream,
		Description: "max-deliveries advisories of " + JobsStream + ", moved to the DLQ by workers",
		Subjects:    []string{MaxDeliveriesAdvisory},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     o.storage,
		Replicas:    o.replicas,
		MaxAge:      o.dlqMaxAge,
		Duplicates:  2 * time.Minute,
		Discard:     jetstream.DiscardOld,
	}
	return jobsCfg, dlqCfg, advisoryCfg
}

// ConfigConflictError says how an existing stream differs from what extractq
// needs in ways the server cannot update in place.
type ConfigConflictError struct {
	Stream      string
	Differences []string
}

func (e *ConfigConflictError) Error() string {
	return fmt.Sprintf("stream %s exists with a configuration extractq cannot update (%s); delete it (nats stream rm %s) after draining it, or point extractq at another server",
		e.Stream, strings.Join(e.Differences, "; "), e.Stream)
}

// EnsureStreams creates EXTRACTQ_JOBS, EXTRACTQ_DLQ, EXTRACTQ_ADVISORIES,
// the document Object Store and the schema KV bucket, or checks the
// existing ones. It is
// idempotent: an existing stream with updatable differences (subjects,
// duplicate window, max age) is updated, one with immutable differences
// (retention, storage) is reported as a *ConfigConflictError.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, opts ...StreamOption) error {
	o := newStreamOptions(opts)
	jobsCfg, dlqCfg, advisoryCfg := StreamConfigs(opts...)
	for _, want := range []jetstream.StreamConfig{jobsCfg, dlqCfg, advisoryCfg} {
		if err := ensureStream(ctx, js, want); err != nil {
			return err
		}
	}
	if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: DocsBucket, Description: "extractq documents above the inline limit",
		Storage: o.storage, Replicas: o.replicas,
	}); err != nil {
		return fmt.Errorf("create object store %s: %w", DocsBucket, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: SchemaBucket, Description: "extractq schema bodies by fingerprint",
		Storage: o.storage, Replicas: o.replicas, History: 1,
	}); err != nil {
		return fmt.Errorf("create key-value bucket %s: %w", SchemaBucket, err)
	}
	return nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) error {
	s, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := js.CreateStream(ctx, want); err != nil {
			return fmt.Errorf("create stream %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w (is JetStream enabled on the server?)", want.Name, err)
	}
	have := s.CachedInfo().Config
	fixed, updatable := diffStream(have, want)
	if len(fixed) > 0 {
		return &ConfigConflictError{Stream: want.Name, Differences: append(fixed, updatable...)}
	}
	if len(updatable) == 0 {
		return nil
	}
	next := have
	next.Subjects = want.Subjects
	next.Duplicates = want.Duplicates
	next.MaxAge = want.MaxAge
	if _, err := js.UpdateStream(ctx, next); err != nil {
		return fmt.Errorf("update stream %s (%s): %w", want.Name, strings.Join(updatable, "; "), err)
	}
	return nil
}

// diffStream compares the settings extractq depends on. fixed lists what the
// server cannot change in place; updatable what UpdateStream can.
func diffStream(have, want jetstream.StreamConfig) (fixed, updatable []string) {
	if have.Retention != want.Retention {
		fixed = append(fixed, fmt.Sprintf("retention is %s, want %s", have.Retention, want.Retention))
	}
	if have.Storage != want.Storage {
		fixed = append(fixed, fmt.Sprintf("storage is %s, want %s", have.Storage, want.Storage))
	}
	hs, ws := slices.Clone(have.Subjects), slices.Clone(want.Subjects)
	slices.Sort(hs)
	slices.Sort(ws)
	if !slices.Equal(hs, ws) {
		updatable = append(updatable, fmt.Sprintf("subjects are %v, want %v", have.Subjects, want.Subjects))
	}
	if have.Duplicates != want.Duplicates {
		updatable = append(updatable, fmt.Sprintf("duplicate window is %s, want %s", have.Duplicates, want.Duplicates))
	}
	if have.MaxAge != want.MaxAge {
		updatable = append(updatable, fmt.Sprintf("max age is %s, want %s", have.MaxAge, want.MaxAge))
	}
	return fixed, updatable
}
