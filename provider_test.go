package extractq_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
)

// A family registered through the public API is built from a provider
// string with the caller's settings, and an OpenAI-compatible server needs
// no adapter of its own: here the simulator's HTTP server plays one.
func TestRegisterProviderWithOpenAICompatibleServer(t *testing.T) {
	t.Parallel()
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(prof)
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	var seen extractq.ProviderSettings
	err = extractq.RegisterProvider("roottest-compat", func(model string, s extractq.ProviderSettings) (llm.Provider, error) {
		seen = s
		return extractq.NewOpenAICompatible("roottest-compat:"+model, model, llm.Capabilities{Modes: []llm.Mode{llm.ModeJSON, llm.ModeStrict}}, s)
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := extractq.NewProvider("roottest-compat:tiny", extractq.WithProviderBaseURL(hs.URL+"/v1"), extractq.WithProviderAPIKey("sk-test-1234567890"),
		extractq.WithProviderHTTPClient(hs.Client()), extractq.WithProviderLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if seen.BaseURL != hs.URL+"/v1" || seen.APIKey != "sk-test-1234567890" || seen.HTTPClient != hs.Client() || seen.Getenv == nil {
		t.Fatalf("factory saw %+v", seen)
	}
	s := compile(t, invoice)
	res, err := extractq.Extract(t.Context(), "Invoice from ACME: 2 bolts at 1.50", s, extractq.WithProvider(p), extractq.WithTransport(extractq.DefaultTransport()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != llm.ModeStrict || res.Provider != "roottest-compat:tiny" || res.Usage.Total() == 0 {
		t.Fatalf("result %+v", res)
	}
	again := func(string, extractq.ProviderSettings) (llm.Provider, error) { return nil, nil }
	for _, tc := range []struct {
		family string
		want   error
		says   string
	}{
		{"roottest-compat", extractq.ErrProviderRegistered, "already registered"},
		{"openai", extractq.ErrProviderRegistered, "built in"},
		{"Roottest", extractq.ErrBadProviderFamily, "lower-case"},
	} {
		err := extractq.RegisterProvider(tc.family, again)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("RegisterProvider(%q) = %v, want %v saying %q", tc.family, err, tc.want, tc.says)
		}
	}
	if _, err := extractq.NewProvider("nosuchfamily:x"); err == nil || !strings.Contains(err.Error(), "roottest-compat") {
		t.Fatalf("an unknown family's error must list the registered ones: %v", err)
	}
	if _, err := extractq.New(extractq.WithProvider(p), extractq.WithFeedbackMaxChars(-1), extractq.WithBreakOnUnextractable(false), extractq.WithTemplates(extractq.Templates{})); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	if x, _ := extractq.New(extractq.WithProvider(p)); x.Provider() != p {
		t.Fatal("Extractor.Provider")
	}
	if _, err := extractq.New(); !errors.Is(err, extractq.ErrConfig) {
		t.Fatalf("no provider: %v", err)
	}
}
