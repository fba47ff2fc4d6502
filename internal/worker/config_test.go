package worker_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/worker"
)

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "worker.yaml")
	if err := os.WriteFile(file, []byte("nats_url: nats://file:4222\nack_wait: 45s\npools:\n  - name: openai:gpt-4o-mini\n    limits: {concurrency: 4, rpm: 100}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte("ack_wiat: 45s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noBackOff := filepath.Join(dir, "nobackoff.yaml")
	if err := os.WriteFile(noBackOff, []byte("backoff: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := "EXTRACTQ_POOLS"
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		wantErr string // substring naming the bad setting; "" for valid
		check   func(worker.Config) bool
	}{
		{name: "file", file: file, check: func(c worker.Config) bool {
			return c.NATSURL == "nats://file:4222" && c.AckWait == 45*time.Second && len(c.Pools) == 1 && c.Pools[0].Limits.RPM == 100
		}},
		{name: "env overrides file", file: file, env: map[string]string{"EXTRACTQ_NATS_URL": "nats://env:4222", "EXTRACTQ_BACKOFF": "40s, 2m", "EXTRACTQ_MAX_DELIVER": "7"},
			check: func(c worker.Config) bool {
				return c.NATSURL == "nats://env:4222" && c.MaxDeliver == 7 && len(c.BackOff) == 2 && c.BackOff[1] == 2*time.Minute
			}},
		{name: "pools from env", env: map[string]string{pool: "openai:gpt-4o-mini=concurrency:2;anthropic:claude-haiku-4-5"},
			check: func(c worker.Config) bool { return len(c.Pools) == 2 }},
		{name: "start wait default", env: map[string]string{pool: "openai:m"}, check: func(c worker.Config) bool { return c.StartWait == 30*time.Second }},
		{name: "start wait from env", env: map[string]string{pool: "openai:m", "EXTRACTQ_START_WAIT": "2m"}, check: func(c worker.Config) bool { return c.StartWait == 2*time.Minute }},
		{name: "no start wait", env: map[string]string{pool: "openai:m", "EXTRACTQ_START_WAIT": "0s"}, check: func(c worker.Config) bool { return c.StartWait == 0 }},
		{name: "negative start wait", env: map[string]string{pool: "openai:m", "EXTRACTQ_START_WAIT": "-1s"}, wantErr: "start_wait"},
		{name: "unknown key in file", file: typo, wantErr: "ack_wiat"},
		{name: "no pools", wantErr: "pools: none configured"},
		{name: "bad duration", env: map[string]string{pool: "openai:m", "EXTRACTQ_ACK_WAIT": "soon"}, wantErr: "EXTRACTQ_ACK_WAIT"},
		{name: "bad url", env: map[string]string{pool: "openai:m", "EXTRACTQ_NATS_URL": "localhost:4222"}, wantErr: "nats_url"},
		{name: "unknown provider", env: map[string]string{pool: "nope:m"}, wantErr: "unknown provider family"},
		{name: "overlapping pools", env: map[string]string{pool: "openai:m;openai:m"}, wantErr: "overlaps"},
		{name: "backoff longer than deliveries", env: map[string]string{pool: "openai:m", "EXTRACTQ_MAX_DELIVER": "2", "EXTRACTQ_BACKOFF": "30s,1m"}, wantErr: "backoff"},
		// JetStream takes a back-off's first step as the ack wait: one not
		// set follows the ack wait (before, the default 30s,1m,2m,5m stayed
		// under --ack-wait 5s, and the consumer's ack wait was 30 s).
		{name: "default backoff", env: map[string]string{pool: "openai:m"}, check: backOffIs(30*time.Second, time.Minute, 2*time.Minute, 5*time.Minute)},
		{name: "backoff follows the ack wait", env: map[string]string{pool: "openai:m", "EXTRACTQ_ACK_WAIT": "5s"},
			check: backOffIs(5*time.Second, 10*time.Second, 20*time.Second, 50*time.Second)},
		{name: "backoff follows max deliver", env: map[string]string{pool: "openai:m", "EXTRACTQ_ACK_WAIT": "5s", "EXTRACTQ_MAX_DELIVER": "3"},
			check: backOffIs(5*time.Second, 10*time.Second)},
		{name: "backoff set", env: map[string]string{pool: "openai:m", "EXTRACTQ_ACK_WAIT": "5s", "EXTRACTQ_BACKOFF": "1m"}, check: backOffIs(time.Minute)},
		{name: "no backoff", file: noBackOff, env: map[string]string{pool: "openai:m", "EXTRACTQ_ACK_WAIT": "5s"}, check: backOffIs()},
		{name: "bad log level", env: map[string]string{pool: "openai:m", "EXTRACTQ_LOG_LEVEL": "loud"}, wantErr: "log_level"},
		{name: "stream replicas default", env: map[string]string{pool: "openai:m"}, check: func(c worker.Config) bool { return c.StreamReplicas == 1 }},
		{name: "stream replicas from env", env: map[string]string{pool: "openai:m", "EXTRACTQ_STREAM_REPLICAS": "3"}, check: func(c worker.Config) bool { return c.StreamReplicas == 3 }},
		{name: "stream replicas above five", env: map[string]string{pool: "openai:m", "EXTRACTQ_STREAM_REPLICAS": "7"}, wantErr: "stream_replicas 7"},
		{name: "stream replicas zero", env: map[string]string{pool: "openai:m", "EXTRACTQ_STREAM_REPLICAS": "0"}, wantErr: "stream_replicas 0"},
		{name: "fleet settings from env", env: map[string]string{pool: "openai:m", "EXTRACTQ_DUPLICATE_WINDOW": "2h", "EXTRACTQ_DLQ_MAX_AGE": "240h",
			"EXTRACTQ_REQUEUE_DELAY": "3s", "EXTRACTQ_MAX_PAUSE": "30s", "EXTRACTQ_DEFAULT_MAX_TOKENS": "512",
			"EXTRACTQ_CIRCUIT_FAILURES": "5", "EXTRACTQ_CIRCUIT_OPEN": "10s", "EXTRACTQ_CIRCUIT_MAX_OPEN": "2m"},
			check: func(c worker.Config) bool {
				b := c.Circuit()
				return c.DuplicateWindow == 2*time.Hour && c.DLQMaxAge == 240*time.Hour && c.RequeueDelay == 3*time.Second &&
					c.MaxPause == 30*time.Second && c.DefaultMaxTokens == 512 && b.Failures == 5 && b.Open == 10*time.Second && b.MaxOpen == 2*time.Minute &&
					len(c.StreamOptions()) == 3
			}},
		{name: "circuit max open below open", env: map[string]string{pool: "openai:m", "EXTRACTQ_CIRCUIT_OPEN": "2m", "EXTRACTQ_CIRCUIT_MAX_OPEN": "1m"}, wantErr: "circuit_max_open"},
		{name: "zero circuit failures", env: map[string]string{pool: "openai:m", "EXTRACTQ_CIRCUIT_FAILURES": "0"}, wantErr: "circuit_failures 0"},
		{name: "negative duplicate window", env: map[string]string{pool: "openai:m", "EXTRACTQ_DUPLICATE_WINDOW": "-1h"}, wantErr: "duplicate_window"},
		{name: "audit linger default", env: map[string]string{pool: "openai:m"}, check: func(c worker.Config) bool { return c.AuditLinger == worker.DefaultAuditLinger }},
		{name: "audit linger from env", env: map[string]string{pool: "openai:m", "EXTRACTQ_AUDIT_LINGER": "20ms"}, check: func(c worker.Config) bool { return c.AuditLinger == 20*time.Millisecond }},
		{name: "no audit linger", env: map[string]string{pool: "openai:m", "EXTRACTQ_AUDIT_LINGER": "0s"}, check: func(c worker.Config) bool { return c.AuditLinger == 0 }},
		{name: "audit linger too long", env: map[string]string{pool: "openai:m", "EXTRACTQ_AUDIT_LINGER": "2s"}, wantErr: "audit_linger 2s"},
		{name: "negative audit linger", env: map[string]string{pool: "openai:m", "EXTRACTQ_AUDIT_LINGER": "-1ms"}, wantErr: "audit_linger"},
		{name: "events from env", env: map[string]string{pool: "openai:m", "EXTRACTQ_EVENTS": "true"}, check: func(c worker.Config) bool { return c.Events }},
		{name: "events off by default", env: map[string]string{pool: "openai:m"}, check: func(c worker.Config) bool { return !c.Events }},
		{name: "events not a boolean", env: map[string]string{pool: "openai:m", "EXTRACTQ_EVENTS": "yes please"}, wantErr: "EXTRACTQ_EVENTS"},
		{name: "stream replicas not a number", env: map[string]string{pool: "openai:m", "EXTRACTQ_STREAM_REPLICAS": "three"}, wantErr: "EXTRACTQ_STREAM_REPLICAS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := worker.DefaultConfig()
			err := func() error {
				if tc.file != "" {
					if err := c.LoadConfigFile(tc.file); err != nil {
						return err
					}
				}
				if err := c.LoadEnv(func(k string) string { return tc.env[k] }); err != nil {
					return err
				}
				return c.Validate()
			}()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("config = %+v", c)
			}
		})
	}
}

// backOffIs checks the back-off of the consumer settings a Config makes.
func backOffIs(want ...time.Duration) func(worker.Config) bool {
	return func(c worker.Config) bool { return slices.Equal(c.ConsumerSettings().BackOff, want) }
}
