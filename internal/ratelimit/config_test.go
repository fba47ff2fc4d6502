package ratelimit

import (
	"errors"
	"strings"
	"testing"

	_ "github.com/extractq/extractq/internal/sim/simprovider" // registers the "sim" family
)

func TestParsePoolSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    PoolSpec
		wantErr string // substring; the setting it names
	}{
		{in: "openai:gpt-4o-mini=rpm:5000,tpm:2000000,concurrency:64",
			want: PoolSpec{Name: "openai:gpt-4o-mini", Provider: "openai", Model: "gpt-4o-mini", Limits: Limits{Concurrency: 64, RPM: 5000, TPM: 2000000}}},
		{in: " OpenAI:gpt-4o-mini = RPM:10 , concurrency: 3 ",
			want: PoolSpec{Name: "openai:gpt-4o-mini", Provider: "openai", Model: "gpt-4o-mini", Limits: Limits{Concurrency: 3, RPM: 10}}},
		{in: "ollama:llama3.1:8b=concurrency:2",
			want: PoolSpec{Name: "ollama:llama3.1:8b", Provider: "ollama", Model: "llama3.1:8b", Limits: Limits{Concurrency: 2}}},
		{in: "sim:rate-limited",
			want: PoolSpec{Name: "sim:rate-limited", Provider: "sim", Model: "rate-limited", Limits: Limits{Concurrency: DefaultConcurrency}}},
		{in: "anthropic:claude-haiku-4-5=tpm:1000000000",
			want: PoolSpec{Name: "anthropic:claude-haiku-4-5", Provider: "anthropic", Model: "claude-haiku-4-5", Limits: Limits{Concurrency: DefaultConcurrency, TPM: MaxTPM}}},
		{in: "", wantErr: "pool: empty"},
		{in: "=rpm:5", wantErr: "pool: empty"},
		{in: "openai=rpm:5", wantErr: `provider="openai": want family:model`},
		{in: "openai:=rpm:5", wantErr: "want family:model"},
		{in: "acme:model-1=rpm:5", wantErr: `provider="acme": unknown provider family`},
		{in: "openai:m=rpm:0", wantErr: `rpm="0": must be positive; omit rpm for no limit`},
		{in: "openai:m=tpm:0", wantErr: `tpm="0": must be positive; omit tpm for no limit`},
		{in: "openai:m=concurrency:0", wantErr: `concurrency="0": must be at least 1`},
		{in: "openai:m=rpm:-5", wantErr: `rpm="-5": must be at least 1`},
		{in: "openai:m=concurrency:-1", wantErr: `concurrency="-1"`},
		{in: "openai:m=rpm:10000001", wantErr: `rpm="10000001": absurdly large`},
		{in: "openai:m=tpm:5000000000", wantErr: `tpm="5000000000": absurdly large`},
		{in: "openai:m=concurrency:100000", wantErr: `concurrency="100000": absurdly large`},
		{in: "openai:m=rpm:5k", wantErr: `rpm="5k": not a whole number`},
		{in: "openai:m=rpm:5,rpm:6", wantErr: `rpm="6": given twice`},
		{in: "openai:m=rps:5", wantErr: `rps="5": unknown setting`},
		{in: "openai:m=rpm5", wantErr: `settings="rpm5": want key:value pairs`},
		{in: "openai:m=rpm:5,", wantErr: `settings: want key:value pairs`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePoolSpec(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("error %v does not match ErrInvalidConfig", err)
				}
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Setting == "" {
					t.Fatalf("error %v is not a *ConfigError naming a setting", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Limits{Concurrency: 4, RPM: 100}
	tests := []struct {
		name    string
		specs   []PoolSpec
		wantErr []string // every one must appear
	}{
		{"distinct pools", []PoolSpec{{Name: "openai:gpt-4o-mini", Limits: ok}, {Name: "openai:gpt-4o", Limits: ok}, {Name: "groq:gpt-4o-mini", Limits: ok}}, nil},
		{"overlap", []PoolSpec{{Name: "openai:gpt-4o-mini", Limits: ok}, {Name: "openai:gpt-4o", Limits: ok}, {Name: "OpenAI:gpt-4o-mini", Limits: ok}},
			[]string{`pool "OpenAI:gpt-4o-mini": pool="OpenAI:gpt-4o-mini": overlaps pool "openai:gpt-4o-mini"`}},
		{"every problem reported", []PoolSpec{{Name: "nope:x", Limits: ok}, {Name: "gemini:flash", Limits: Limits{Concurrency: 0, TPM: -1}}},
			[]string{`provider="nope"`, `pool "gemini:flash": concurrency="0"`, `pool "gemini:flash": tpm="-1"`}},
		{"empty name", []PoolSpec{{Limits: ok}}, []string{"pool: empty"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.specs)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if tc.specs[0].Provider != "openai" || tc.specs[0].Model != "gpt-4o-mini" {
					t.Fatalf("Validate did not fill provider and model: %+v", tc.specs[0])
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not match ErrInvalidConfig", err)
			}
			for _, w := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("error = %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestParsePoolSpecs(t *testing.T) {
	specs, err := ParsePoolSpecs([]string{"openai:a=rpm:5", "anthropic:b=tpm:7,concurrency:2"})
	if err != nil || len(specs) != 2 || specs[1].Limits != (Limits{Concurrency: 2, TPM: 7}) {
		t.Fatalf("specs = %+v, err = %v", specs, err)
	}
	_, err = ParsePoolSpecs([]string{"openai:a=rpm:5", "openai:a=rpm:6"})
	if err == nil || !strings.Contains(err.Error(), `overlaps pool "openai:a"`) {
		t.Fatalf("overlapping flags: err = %v", err)
	}
	_, err = ParsePoolSpecs([]string{"openai:a=rpm:0", "x:b"})
	if err == nil || !strings.Contains(err.Error(), `rpm="0"`) || !strings.Contains(err.Error(), `provider="x"`) {
		t.Fatalf("two bad flags: err = %v, want both named", err)
	}
}

func TestKeyToken(t *testing.T) {
	tests := map[string]string{
		"openai:gpt-4o-mini": "openai_3agpt-4o-mini",
		"ollama:llama3.1:8b": "ollama_3allama3_2e1_3a8b",
		"host_1/42":          "host_5f1_2f42",
	}
	for in, want := range tests {
		if got := keyToken(in); got != want {
			t.Errorf("keyToken(%q) = %q, want %q", in, got, want)
		}
	}
}
