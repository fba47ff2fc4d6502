package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/audit"
	"github.com/extractq/extractq/internal/events"
	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/ratelimit"
)

// MembersStream is the stream behind the fleet membership bucket.
const MembersStream = "KV_" + ratelimit.DefaultMembersBucket

// Migrate applies the audit migrations and creates the streams and buckets,
// the fleet membership bucket included, with replicas copies each (raising
// existing ones that have fewer), and nothing else; it is idempotent. It
// is the only place streams and buckets are created or changed: submit
// and worker run check and use what exists. opts are further stream
// settings (Config.StreamOptions).
func Migrate(ctx context.Context, js jetstream.JetStream, store *audit.Store, replicas int, opts ...jobs.StreamOption) error {
	if err := CheckStreamReplicas(replicas); err != nil {
		return err
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	if err := jobs.EnsureStreams(ctx, js, append([]jobs.StreamOption{jobs.WithReplicas(replicas)}, opts...)...); err != nil {
		return err
	}
	if err := events.Ensure(ctx, js, replicas); err != nil {
		return err
	}
	return ensureMembersBucket(ctx, js, replicas)
}

// MigrateConsumers creates or updates the durable consumers of cfg's pools,
// with the settings the workers use, and the advisory consumer the workers
// share, so that they exist before any worker needs them: a worker started
// while a node is down or an election is under way finds them instead of
// having to create them (see jobs.StartConsumer).
func MigrateConsumers(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	s := cfg.ConsumerSettings()
	for _, spec := range cfg.Pools {
		ps := s
		if spec.IsBatch() {
			ps.MaxAckPending = max(ps.MaxAckPending, batchMaxAckPending)
		}
		if _, err := jobs.EnsureConsumer(ctx, js, jobs.PoolFor(spec.Name), ps); err != nil {
			return err
		}
	}
	_, err := jobs.EnsureAdvisoryConsumer(ctx, js)
	return err
}

// ensureMembersBucket creates the heartbeat bucket of the rate-limit
// membership with replicas copies, so that on a cluster it survives the
// loss of a node like the other buckets. Heartbeats are worthless after a
// restart, so a single node keeps them in memory; a replicated bucket is on
// file, as a memory stream's replicas cannot be moved or caught up after a
// node restarts. A bucket of the wrong storage (a worker made it before
// migrate ran) is replaced: the workers' next heartbeat rebuilds it.
func ensureMembersBucket(ctx context.Context, js jetstream.JetStream, replicas int) error {
	storage := jetstream.FileStorage
	if replicas == 1 {
		storage = jetstream.MemoryStorage
	}
	create := func() error {
		_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: ratelimit.DefaultMembersBucket, Description: "extractq worker heartbeats per rate-limit pool",
			TTL: ratelimit.DefaultMembersTTL, History: 1, Storage: storage, Replicas: replicas,
		})
		return err
	}
	for range 3 { // a worker may create it in between; look again
		s, err := js.Stream(ctx, MembersStream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			if err = create(); errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				continue
			}
			if err != nil {
				return fmt.Errorf("create key-value bucket %s: %w", ratelimit.DefaultMembersBucket, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("look up stream %s: %w", MembersStream, err)
		}
		cfg := s.CachedInfo().Config
		switch {
		case cfg.Replicas >= replicas && (replicas == 1 || cfg.Storage == storage):
			return nil
		case cfg.Storage == storage:
			cfg.Replicas = replicas
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return fmt.Errorf("raise the replicas of %s to %d: %w", MembersStream, replicas, err)
			}
			return nil
		}
		if err := js.DeleteStream(ctx, MembersStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("replace %s (%s, %d replicas) by a replicated bucket: %w", MembersStream, cfg.Storage, cfg.Replicas, err)
		}
	}
	return fmt.Errorf("key-value bucket %s: workers keep recreating it unreplicated; run migrate before starting workers", ratelimit.DefaultMembersBucket)
}

// streamCheckWait bounds the stream check at start while a leader
// election runs.
const streamCheckWait = 30 * time.Second
