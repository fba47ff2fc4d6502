package ratelimit

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// LiveMembers reads the heartbeat bucket (DefaultMembersBucket when bucket
// is "") and returns the live workers of each pool, by pool name as the
// workers configured it (e.g. "sim:sloppy"). A bucket that does not exist
// yet (no worker ever ran) means no live worker: an empty map.
func LiveMembers(ctx context.Context, kvm jetstream.KeyValueManager, bucket string) (map[string][]string, error) {
	beats, err := LiveHeartbeats(ctx, kvm, bucket)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, hb := range beats {
		out[hb.Pool] = append(out[hb.Pool], hb.Worker)
	}
	return out, nil
}

// LiveHeartbeats reads the heartbeat bucket (DefaultMembersBucket when
// bucket is "") and returns the last heartbeat of every live worker and
// pool: shares, pauses and their reasons. Keys that expired are gone from
// the bucket, so what it holds is the live fleet. A bucket that does not
// exist yet (no worker ever ran) means no live worker: none and no error.
func LiveHeartbeats(ctx context.Context, kvm jetstream.KeyValueManager, bucket string) ([]Heartbeat, error) {
	if bucket == "" {
		bucket = DefaultMembersBucket
	}
	kv, err := kvm.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open key-value bucket %s: %w", bucket, err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list members in %s: %w", bucket, err)
	}
	defer w.Stop()
	var out []Heartbeat
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list members in %s: %w", bucket, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("list members in %s: watcher closed", bucket)
			}
			if e == nil { // all current keys delivered
				return out, nil
			}
			hb, err := DecodeHeartbeat(e.Value())
			if err != nil || hb.Pool == "" {
				continue // not a heartbeat this version writes
			}
			out = append(out, hb)
		}
	}
}
