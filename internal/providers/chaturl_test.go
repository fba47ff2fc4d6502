package providers

import (
	"testing"

	"github.com/extractq/extractq/llm"
)

// TestChatURLMadeOnce: both constructors make the chat completions URL
// once; a call then uses it without concatenating (an allocation per
// call before), and a provider made without it still gets the same URL.
func TestChatURLMadeOnce(t *testing.T) {
	viaNew, err := New("vllm:m", WithBaseURL("http://127.0.0.1:1/v1/"), WithGetenv(env{}.get))
	if err != nil {
		t.Fatal(err)
	}
	viaCompat, err := NewOpenAICompatible("x:m", "m", llm.Capabilities{}, Settings{BaseURL: "http://127.0.0.1:1/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*openAIProvider{viaNew.(*openAIProvider), viaCompat.(*openAIProvider)} {
		if got, want := p.chatEndpoint(), p.baseURL+"/chat/completions"; got != want || got != "http://127.0.0.1:1/v1/chat/completions" {
			t.Fatalf("chatEndpoint() = %q, want %q", got, want)
		}
		if n := testing.AllocsPerRun(100, func() { _ = p.chatEndpoint() }); n != 0 {
			t.Fatalf("chatEndpoint: %v allocations, want 0", n)
		}
	}
	bare := &openAIProvider{base: base{baseURL: "http://h/v1"}}
	if got := bare.chatEndpoint(); got != "http://h/v1/chat/completions" {
		t.Fatalf("chatEndpoint() without chatURL = %q", got)
	}
}
