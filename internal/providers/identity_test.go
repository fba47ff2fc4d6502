package providers

import "testing"

func TestIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec, variant, want string
		bad                 bool
	}{
		{spec: "openai:gpt-4o-mini", want: "openai:gpt-4o-mini"},
		{spec: " OpenAI:gpt-4o-mini", want: "openai:gpt-4o-mini"},
		{spec: "groq:llama-3.1-8b", want: "groq:llama-3.1-8b"},
		{spec: "sim:clean", want: "sim:clean"},
		{spec: "sim:realistic", want: "sim:realistic"},
		{spec: "sim:clean/gpt-4o", want: "sim:clean/gpt-4o"},
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
	// The bug this exists for: two simulator profiles were one model.
	clean, _ := Identity("sim:clean", "")
	realistic, _ := Identity("sim:realistic", "")
	if clean == realistic {
		t.Errorf("sim:clean and sim:realistic share the identity %q", clean)
	}
}
