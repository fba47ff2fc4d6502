package providers

import "testing"

// The simulator's profiles are separate identities: see
// internal/sim/simprovider's TestIdentityOfProfiles.
func TestIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, variant, want string
		bad                 bool
	}{
		{spec: "openai:gpt-4o-mini", want: "openai:gpt-4o-mini"},
		{spec: " OpenAI:gpt-4o-mini", want: "openai:gpt-4o-mini"},
		{spec: "groq:llama-3.1-8b", want: "groq:llama-3.1-8b"},
		{spec: "openai:gpt-4o-mini", variant: "eu-proxy", want: "openai:gpt-4o-mini@eu-proxy"},
		{spec: "openai:gpt-4o-mini", variant: "two words", bad: true},
		{spec: "nope:x", bad: true},
	}
	for _, tt := range tests {
		got, err := Identity(tt.spec, tt.variant)
		if (err != nil) != tt.bad || got != tt.want {
			t.Errorf("Identity(%q, %q) = %q, %v; want %q (error %v)", tt.spec, tt.variant, got, err, tt.want, tt.bad)
		}
	}
}
