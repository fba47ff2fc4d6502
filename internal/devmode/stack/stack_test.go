package stack

import (
	"testing"

	"github.com/extractq/extractq/internal/ratelimit"
)

func TestUsesProfile(t *testing.T) {
	tests := []struct {
		spec, profile string
		want          bool
	}{
		{"sim:sloppy", "sloppy", true},
		{"sim:sloppy/gpt-4o", "sloppy", true},
		{"sim:clean", "sloppy", false},
		{"sim:sloppy-2", "sloppy", false},
		{"openai:sloppy", "sloppy", false},
		{"sim:./profiles/my.yaml", "./profiles/my.yaml", true},
	}
	for _, tt := range tests {
		if got := usesProfile(tt.spec, tt.profile); got != tt.want {
			t.Errorf("usesProfile(%q, %q) = %v, want %v", tt.spec, tt.profile, got, tt.want)
		}
	}
}

func TestConfigPools(t *testing.T) {
	mustSpec := func(s string) ratelimit.PoolSpec {
		p, err := ratelimit.ParsePoolSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name    string
		cfg     Config
		want    []string // pool names
		wantCon []int    // their concurrency
	}{
		{"nothing named", Config{}, []string{DefaultPool}, []int{ratelimit.DefaultConcurrency}},
		{"simulator", Config{SimProfile: "sloppy"}, []string{"sim:sloppy"}, []int{ratelimit.DefaultConcurrency}},
		{"simulator and a pool", Config{SimProfile: "sloppy", Pools: []ratelimit.PoolSpec{mustSpec("anthropic:claude-haiku-4-5=concurrency:2")}},
			[]string{"sim:sloppy", "anthropic:claude-haiku-4-5"}, []int{ratelimit.DefaultConcurrency, 2}},
		{"a pool sets the simulator's limits", Config{SimProfile: "sloppy", Pools: []ratelimit.PoolSpec{mustSpec("sim:sloppy=concurrency:3")}},
			[]string{"sim:sloppy"}, []int{3}},
		{"pools only", Config{Pools: []ratelimit.PoolSpec{mustSpec("openai:gpt-4o=rpm:100")}}, []string{"openai:gpt-4o"}, []int{ratelimit.DefaultConcurrency}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.cfg.pools()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("pools = %+v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].Name != tt.want[i] || got[i].Limits.Concurrency != tt.wantCon[i] {
					t.Errorf("pool %d = %s (concurrency %d), want %s (concurrency %d)", i, got[i].Name, got[i].Limits.Concurrency, tt.want[i], tt.wantCon[i])
				}
			}
		})
	}
}
