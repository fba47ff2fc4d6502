package ratelimit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

func TestParseBatchPoolSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    BatchSettings
		wantErr string // substring naming the setting
	}{
		{in: "openai:gpt-4o-mini=batch,max_requests:20000,max_wait:10m", want: BatchSettings{MaxRequests: 20000, MaxWait: 10 * time.Minute}},
		{in: "openai:gpt-4o-mini=batch", want: BatchSettings{MaxRequests: 50000, MaxWait: DefaultBatchMaxWait}},
		{in: "anthropic:claude-haiku-4-5=max_wait:90s,BATCH", want: BatchSettings{MaxRequests: 100000, MaxWait: 90 * time.Second}},
		{in: "anthropic:claude-haiku-4-5=batch,max_requests:100000", want: BatchSettings{MaxRequests: 100000, MaxWait: DefaultBatchMaxWait}},
		{in: "sim:clean=batch,max_requests:10,concurrency:2", want: BatchSettings{MaxRequests: 10, MaxWait: DefaultBatchMaxWait}},
		{in: "openai:gpt-4o-mini=batch,max_requests:50001", wantErr: `max_requests="50001": above openai's limit of 50000`},
		{in: "anthropic:claude-haiku-4-5=batch,max_requests:100001", wantErr: `max_requests="100001": above anthropic's limit`},
		{in: "openai:m=batch,max_requests:0", wantErr: `max_requests="0": must be positive`},
		{in: "openai:m=batch,max_requests:-3", wantErr: `max_requests="-3": must be positive`},
		{in: "openai:m=batch,max_requests:2k", wantErr: `max_requests="2k": not a whole number`},
		{in: "openai:m=batch,max_wait:10", wantErr: `max_wait="10": not a duration`},
		{in: "openai:m=batch,max_wait:0s", wantErr: `max_wait="0s": must be positive`},
		{in: "openai:m=batch,max_wait:48h", wantErr: `max_wait="48h0m0s": longer than 24h`},
		{in: "openai:m=batch,max_wait:1m,max_wait:2m", wantErr: `max_wait="2m": given twice`},
		{in: "openai:m=batch,batch", wantErr: `kind="batch": given twice`},
		{in: "openai:m=batch,rpm:100", wantErr: `rpm/tpm: a batch pool is not paced per minute`},
		{in: "groq:llama-3.3-70b-versatile=batch", wantErr: `kind="batch": provider family groq has no batch API; batch pools support anthropic, openai`},
		{in: "openai:m=max_requests:100", wantErr: `max_requests/max_wait: batch settings on an online pool`},
		{in: "openai:m=rpm:5,max_wait:1m", wantErr: `batch settings on an online pool`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePoolSpec(tc.in)
			if tc.wantErr != "" {
				var ce *ConfigError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("error = %v, want a *ConfigError containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.IsBatch() || got.Batch != tc.want {
				t.Fatalf("got kind %q, batch %+v; want batch %+v", got.Kind, got.Batch, tc.want)
			}
		})
	}
}

func TestOnlinePoolSpecUnchanged(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"openai:gpt-4o-mini=rpm:10", "openai:gpt-4o-mini=online,rpm:10"} {
		got, err := ParsePoolSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		if got.IsBatch() || got.Batch != (BatchSettings{}) || got.Limits.RPM != 10 {
			t.Fatalf("%s: got %+v; want an online pool", in, got)
		}
	}
}

// TestBatchPoolConfigFile reads the config-file form as a worker's config
// does (a list of pools in YAML) and validates it.
func TestBatchPoolConfigFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		wantErr    string
		want       BatchSettings
	}{
		{name: "batch", file: `
- name: openai:gpt-4o-mini
  kind: batch
  batch: {max_requests: 20000, max_wait: 10m}
- name: openai:gpt-4o
  limits: {concurrency: 4, rpm: 100}
`, want: BatchSettings{MaxRequests: 20000, MaxWait: 10 * time.Minute}},
		{name: "defaults", file: `
- name: anthropic:claude-haiku-4-5
  kind: Batch
`, want: BatchSettings{MaxRequests: 100000, MaxWait: DefaultBatchMaxWait}},
		{name: "too many", file: `
- name: openai:gpt-4o-mini
  kind: batch
  batch: {max_requests: 60000}
`, wantErr: `pool "openai:gpt-4o-mini": max_requests="60000": above openai's limit`},
		{name: "unknown kind", file: `
- name: openai:gpt-4o-mini
  kind: bulk
`, wantErr: `kind="bulk": unknown pool kind; use online or batch`},
		{name: "settings without kind", file: `
- name: openai:gpt-4o-mini
  batch: {max_wait: 5m}
`, wantErr: `batch settings on an online pool`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var specs []PoolSpec
			if err := yaml.UnmarshalWithOptions([]byte(tc.file), &specs, yaml.Strict()); err != nil {
				t.Fatal(err)
			}
			for i := range specs {
				specs[i].Limits.Concurrency = max(specs[i].Limits.Concurrency, 1)
			}
			err := Validate(specs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !specs[0].IsBatch() || specs[0].Batch != tc.want {
				t.Fatalf("got %+v; want batch %+v", specs[0], tc.want)
			}
			if len(specs) > 1 && specs[1].IsBatch() {
				t.Fatalf("the online pool became %+v", specs[1])
			}
		})
	}
}
