package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
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

// Streams behind the buckets, as the server names them.
const (
	DocsStream   = "OBJ_" + DocsBucket
	SchemaStream = "KV_" + SchemaBucket
)

// StreamNames are the JetStream streams extractq needs: its three streams
// and the streams behind its two buckets.
func StreamNames() []string {
	return []string{JobsStream, DLQStream, AdvisoryStream, DocsStream, SchemaStream}
}

// EnsureStreams creates EXTRACTQ_JOBS, EXTRACTQ_DLQ, EXTRACTQ_ADVISORIES,
// the document Object Store and the schema KV bucket, or brings the
// existing ones in line. Only `worker migrate` (and `worker run
// --migrate`) calls it: submit and worker run use CheckStreams, which
// changes nothing, so a stream migrated with three replicas is never
// remapped to one by a command run with other settings. It is idempotent:
// an existing stream with updatable differences (subjects, duplicate
// window, max age, fewer replicas than asked for) is updated; replicas are
// never lowered; a stream with immutable differences (retention, storage)
// is reported as a *ConfigConflictError. While a leader election runs it
// retries for up to a minute.
func EnsureStreams(ctx context.Context, js jetstream.JetStream, opts ...StreamOption) error {
	o := newStreamOptions(opts)
	jobsCfg, dlqCfg, advisoryCfg := StreamConfigs(opts...)
	deadline := time.Now().Add(time.Minute)
	for _, want := range []jetstream.StreamConfig{jobsCfg, dlqCfg, advisoryCfg} {
		if err := retryElection(ctx, deadline, func() error { return ensureStream(ctx, js, want) }); err != nil {
			return err
		}
	}
	if err := retryElection(ctx, deadline, func() error {
		return ensureBucket(ctx, js, DocsStream, o.replicas, func() error {
			_, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
				Bucket: DocsBucket, Description: "extractq documents above the inline limit",
				Storage: o.storage, Replicas: o.replicas,
			})
			return err
		})
	}); err != nil {
		return fmt.Errorf("object store %s: %w", DocsBucket, err)
	}
	if err := retryElection(ctx, deadline, func() error {
		return ensureBucket(ctx, js, SchemaStream, o.replicas, func() error {
			_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
				Bucket: SchemaBucket, Description: "extractq schema bodies by fingerprint",
				Storage: o.storage, Replicas: o.replicas, History: 1,
			})
			return err
		})
	}); err != nil {
		return fmt.Errorf("key-value bucket %s: %w", SchemaBucket, err)
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
	next.Replicas = max(have.Replicas, want.Replicas)
	if _, err := js.UpdateStream(ctx, next); err != nil {
		return fmt.Errorf("update stream %s (%s): %w", want.Name, strings.Join(updatable, "; "), err)
	}
	return nil
}

// ensureBucket creates the bucket behind stream when it is missing, and
// raises the replicas of an existing one; nothing else of an existing
// bucket is changed.
func ensureBucket(ctx context.Context, js jetstream.JetStream, stream string, replicas int, create func() error) error {
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if err := create(); err != nil {
			return fmt.Errorf("create: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up stream %s: %w", stream, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Replicas >= replicas {
		return nil
	}
	from := cfg.Replicas
	cfg.Replicas = replicas
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("raise the replicas of stream %s from %d to %d: %w", stream, from, replicas, err)
	}
	return nil
}

// ErrNotMigrated is matched by the error of CheckStreams when a stream or
// bucket does not exist.
var ErrNotMigrated = errors.New("extractq's JetStream streams are not set up")

// CheckOption tunes CheckStreams.
type CheckOption func(*checkOptions)

type checkOptions struct {
	wait     time.Duration
	optional []string
}

// WithCheckWait bounds how long CheckStreams keeps trying while the
// server cannot answer (default 30s).
func WithCheckWait(d time.Duration) CheckOption { return func(o *checkOptions) { o.wait = d } }

// WithOptionalStream also checks stream (e.g. the stream behind another
// bucket): a missing one is a warning, not an error.
func WithOptionalStream(stream string) CheckOption {
	return func(o *checkOptions) { o.optional = append(o.optional, stream) }
}

// CheckStreams checks that the streams and buckets `worker migrate`
// creates exist, and creates or changes nothing. While a stream's leader
// is being elected the server answers with timeouts or "stream offline"
// for a few seconds: those are retried with backoff for up to the wait
// (WithCheckWait). A missing stream is an error matching ErrNotMigrated
// that names `worker migrate`. The warnings name every stream that one
// lost node could take offline: one replica on a cluster, or fewer
// replicas than the cluster has nodes (up to 3, the quorum that survives
// a loss).
func CheckStreams(ctx context.Context, js jetstream.JetStream, opts ...CheckOption) (warnings []string, err error) {
	o := checkOptions{wait: 30 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	deadline := time.Now().Add(o.wait)
	nodes := clusterSize(js)
	// The streams are looked up at once, one round trip for all rather than
	// one each; the outcome is what checking them one by one gives: the
	// warnings of the streams before the first that fails, and its error.
	// A stream that fails for good stops the others' retries.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type checked struct {
		warning string
		err     error
	}
	check := func(name string, optional bool) (c checked) {
		var info *jetstream.StreamInfo
		err := retryElection(cctx, deadline, func() error {
			s, err := js.Stream(cctx, name)
			if err != nil {
				return err
			}
			info = s.CachedInfo()
			return nil
		})
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound) && optional:
			return checked{warning: fmt.Sprintf("stream %s does not exist: run `worker migrate` to create it with the fleet's replicas", name)}
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return checked{err: fmt.Errorf("%w: stream %s does not exist: run `worker migrate` (with --stream-replicas 3 on a three-node cluster) to create the streams and buckets; submit and worker run only use them", ErrNotMigrated, name)}
		case err != nil:
			return checked{err: fmt.Errorf("look up stream %s: %w (is JetStream enabled, and its cluster reachable?)", name, err)}
		}
		return checked{warning: replicaWarning(info, nodes)}
	}
	names := StreamNames()
	optional := len(names)
	names = append(names, o.optional...)
	results := make([]checked, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			results[i] = check(name, i >= optional)
			if results[i].err != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// The error is the first stream's that failed by itself (not canceled
	// because a later one failed), as one by one would have found it.
	failed := len(results)
	for i, r := range results {
		if r.err != nil && (ctx.Err() != nil || !errors.Is(r.err, context.Canceled)) {
			failed = i
			break
		}
	}
	var firstErr error
	for i, r := range results {
		if i == failed {
			firstErr = r.err
			break
		}
		if r.warning != "" {
			warnings = append(warnings, r.warning)
		}
	}
	return warnings, firstErr
}

// replicaWarning says why a stream on a cluster could go offline with one
// node; "" when it cannot (or there is no cluster).
func replicaWarning(info *jetstream.StreamInfo, nodes int) string {
	if info.Cluster == nil || info.Cluster.Name == "" {
		return ""
	}
	want := max(2, min(nodes, 3))
	r := max(info.Config.Replicas, 1)
	if r >= want {
		return ""
	}
	return fmt.Sprintf("stream %s has %d %s on JetStream cluster %q (%d nodes seen): losing the node that holds it takes it offline and stops the fleet; raise it with `worker migrate --stream-replicas %d`",
		info.Config.Name, r, plural(r, "replica", "replicas"), info.Cluster.Name, nodes, want)
}

// clusterSize is the number of servers the connection knows of (the one
// it is connected to and those the cluster advertised), at least 1.
func clusterSize(js jetstream.JetStream) int {
	seen := map[string]bool{}
	for _, u := range js.Conn().Servers() {
		seen[u] = true
	}
	return max(1, len(seen))
}

// retryElection runs fn until it succeeds, fails with an error that is
// not transient, ctx ends or deadline passes, with backoff between tries:
// a stream leader election makes the server time out or call the stream
// offline for a few seconds.
func retryElection(ctx context.Context, deadline time.Time, fn func() error) error {
	for n := 0; ; n++ {
		err := fn()
		if err == nil || !transient(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		wait := min(100*time.Millisecond<<min(n, 5), 2*time.Second)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
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
	if have.Replicas < want.Replicas {
		updatable = append(updatable, fmt.Sprintf("replicas are %d, want %d", have.Replicas, want.Replicas))
	}
	return fixed, updatable
}

// transient reports whether err is the server's answer while a leader is
// being elected or a node rejoins: timeouts, no responders, and the
// JetStream errors "temporarily unavailable", "cannot handle request",
// "not assigned" and "stream is offline".
func transient(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case 10007, 10008, 10009, 10118, 10194:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrConnectionReconnecting)
}
