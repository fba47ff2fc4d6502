// Package capstore keeps the adjustments provider adapters learn from
// refused requests (llm.Adjustment: a temperature, a forced tool, the
// system role, a schema keyword a model's server refuses) in a NATS
// key-value bucket, so that one worker's refused request teaches the whole
// fleet. It implements llm.CapabilityStore; the engine and the adapters
// know only that interface.
package capstore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/llm"
)

// DefaultBucket is the key-value bucket the fleet shares.
const DefaultBucket = "EXTRACTQ_CAPABILITIES"

// DefaultMaxAge is how long a learned adjustment is kept after it was last
// learned: a provider may start accepting a part it refused, and
// relearning a refusal costs one extra call.
const DefaultMaxAge = 7 * 24 * time.Hour

// KV is a CapabilityStore over a JetStream key-value bucket, one key per
// provider and adjustment: "<provider>.<adjustment>", each part
// base64url-encoded (provider names hold ':', '/' and '.', which keys
// cannot). The value is a readable fact, so `nats kv watch` shows what the
// fleet learned: {"provider":"anthropic:claude-fable-5-1",
// "adjustment":"no_temperature","learned_at":"2026-11-26T03:20:00Z"}. The
// bucket is created on first use when absent.
type KV struct {
	kvm    jetstream.KeyValueManager
	bucket string
	maxAge time.Duration

	mu sync.Mutex
	kv jetstream.KeyValue // bound on first success
}

// Option configures New.
type Option func(*KV)

// WithBucket names the bucket (DefaultBucket).
func WithBucket(name string) Option { return func(s *KV) { s.bucket = name } }

// WithMaxAge sets how long an adjustment is kept (DefaultMaxAge).
func WithMaxAge(d time.Duration) Option { return func(s *KV) { s.maxAge = d } }

// New returns the store; nothing is contacted until the first call.
func New(kvm jetstream.KeyValueManager, opts ...Option) *KV {
	s := &KV{kvm: kvm, bucket: DefaultBucket, maxAge: DefaultMaxAge}
	for _, o := range opts {
		o(s)
	}
	return s
}

var enc = base64.RawURLEncoding

// fact is a key's value.
type fact struct {
	Provider   string         `json:"provider"`
	Adjustment llm.Adjustment `json:"adjustment"`
	LearnedAt  time.Time      `json:"learned_at"`
}

// Load returns the adjustments recorded for the provider key.
func (s *KV) Load(ctx context.Context, key string) ([]llm.Adjustment, error) {
	kv, err := s.bind(ctx)
	if err != nil {
		return nil, err
	}
	w, err := kv.Watch(ctx, enc.EncodeToString([]byte(key))+".*", jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("read learned capabilities of %s from bucket %s: %w", key, s.bucket, err)
	}
	defer func() { _ = w.Stop() }()
	var out []llm.Adjustment
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("read learned capabilities of %s from bucket %s: %w", key, s.bucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("read learned capabilities of %s from bucket %s: the watcher closed", key, s.bucket)
			}
			if e == nil { // every current key delivered
				return out, nil
			}
			var f fact
			if json.Unmarshal(e.Value(), &f) != nil || f.Adjustment == "" {
				continue // not a value this package writes
			}
			out = append(out, f.Adjustment)
		}
	}
}

// Add records that the provider key needs adjustment a.
func (s *KV) Add(ctx context.Context, key string, a llm.Adjustment) error {
	kv, err := s.bind(ctx)
	if err != nil {
		return err
	}
	k := enc.EncodeToString([]byte(key)) + "." + enc.EncodeToString([]byte(a))
	val, err := json.Marshal(fact{Provider: key, Adjustment: a, LearnedAt: time.Now().UTC()})
	if err != nil {
		return fmt.Errorf("encode learned capability %s of %s: %w", a, key, err)
	}
	if _, err := kv.Put(ctx, k, val); err != nil {
		return fmt.Errorf("record learned capability %s of %s in bucket %s: %w", a, key, s.bucket, err)
	}
	return nil
}

// bind finds the bucket, creating it when absent.
func (s *KV) bind(ctx context.Context) (jetstream.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := s.kvm.KeyValue(ctx, s.bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// File storage: what was learned holds after a server restart.
		kv, err = s.kvm.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: s.bucket, TTL: s.maxAge, History: 1,
			Storage: jetstream.FileStorage, Description: "extractq: request parts provider servers refuse, learned per model"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = s.kvm.KeyValue(ctx, s.bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open key-value bucket %s (learned provider capabilities): %w; check the NATS connection and JetStream", s.bucket, err)
	}
	s.kv = kv
	return kv, nil
}
