package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"

	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/schema"
)

// simPrompt follows the engine's prompt conventions, with the schema
// embedded for modes where the provider does not enforce it.
func simPrompt(s *schema.Schema, doc string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract the fields. Answer with JSON only."},
		{Role: llm.RoleUser, Content: "<json-schema>" + string(s.JSON()) + "</json-schema>\n<document-00112233aabbccdd>" + doc + "</document-00112233aabbccdd>"},
	}
}

// nativePrompt is simPrompt without the schema.
func nativePrompt(doc string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract the fields."},
		{Role: llm.RoleUser, Content: "<document-00112233aabbccdd>" + doc + "</document-00112233aabbccdd>"},
	}
}

func assertValid(t *testing.T, s *schema.Schema, text string) {
	t.Helper()
	vs, err := s.ValidateJSON([]byte(text))
	if err != nil || vs != nil {
		t.Fatalf("answer %q is not valid: %v %+v", text, err, vs)
	}
}

func TestSimProvider(t *testing.T) {
	sch := testSchema(t)
	for _, mode := range []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools, llm.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			p := mustNew(t, "sim:clean", env{})
			if p.Name() != "sim:clean" || p.Model() != simDefaultModel {
				t.Fatalf("name %q model %q", p.Name(), p.Model())
			}
			resp, err := p.Chat(context.Background(), llm.Request{Messages: simPrompt(sch, "Invoice from ACME, total 12.50, paid."), Mode: mode, Schema: sch})
			if err != nil {
				t.Fatal(err)
			}
			assertValid(t, sch, resp.Text)
			if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || len(resp.Raw) == 0 {
				t.Fatalf("usage %+v raw %d bytes", resp.Usage, len(resp.Raw))
			}
		})
	}
}

func TestSimProviderSpecs(t *testing.T) {
	p := mustNew(t, "sim:clean/gpt-4o-mini", env{})
	if p.Name() != "sim:clean/gpt-4o-mini" || p.Model() != "gpt-4o-mini" {
		t.Fatalf("name %q model %q", p.Name(), p.Model())
	}
	if usd, known := EstimateCost(p.Name(), llm.Usage{PromptTokens: 1e6}); !known || usd != SimInputPrice {
		t.Fatalf("a sim model must cost the notional price, got %v %v", usd, known)
	}
	_, err := New("sim:no-such-profile")
	if err == nil || !errors.Is(err, sim.ErrInvalidProfile) || !strings.Contains(err.Error(), "clean") {
		t.Fatalf("unknown profile error %v must list the built-ins", err)
	}
}

func TestSimProviderSharedServer(t *testing.T) {
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	srv := sim.New(prof, sim.WithSeed(7))
	defer srv.Close()
	sch := testSchema(t)
	a := mustNew(t, "sim:one", env{}, WithSimServer(srv))
	b := mustNew(t, "sim:two/gpt-4o", env{}, WithSimServer(srv))
	if b.Model() != "gpt-4o" {
		t.Fatalf("model %q", b.Model())
	}
	for _, p := range []llm.Provider{a, b} {
		if _, err := p.Chat(context.Background(), llm.Request{Messages: simPrompt(sch, "doc"), Mode: llm.ModeStrict, Schema: sch}); err != nil {
			t.Fatal(err)
		}
	}
	if st := srv.Stats(); st.Requests != 2 || st.ByRoute[sim.RouteOpenAI] != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAdaptersAgainstSimulator runs every adapter over real HTTP against
// the simulator in every mode it supports, and checks the answers
// validate.
func TestAdaptersAgainstSimulator(t *testing.T) {
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(prof)
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	sch := testSchema(t)
	specs := []struct{ spec, base string }{
		{"openai:gpt-4o-mini", hs.URL + "/v1"},
		{"groq:llama-3.1-8b-instant", hs.URL + "/v1"},
		{"anthropic:claude-haiku-4-5", hs.URL},
		{"anthropic:claude-3-5-haiku-latest", hs.URL},
		{"ollama:llama3.1:8b", hs.URL},
		{"gemini:gemini-2.5-flash", hs.URL},
	}
	for _, sp := range specs {
		p := mustNew(t, sp.spec, env{}, WithBaseURL(sp.base), WithAPIKey("sk-sim-test-key-000"))
		for _, mode := range p.Capabilities().Modes {
			t.Run(sp.spec+"/"+string(mode), func(t *testing.T) {
				msgs := simPrompt(sch, "Invoice from ACME, total 12.50, paid.")
				if mode == llm.ModeStrict || mode == llm.ModeTools {
					// The engine leaves the schema out of the prompt when the
					// provider enforces it: the native field must carry it.
					msgs = nativePrompt("Invoice from ACME, total 12.50, paid.")
				}
				resp, err := p.Chat(context.Background(), llm.Request{Messages: msgs, Mode: mode, Schema: sch, MaxTokens: 1000})
				if err != nil {
					t.Fatal(err)
				}
				assertValid(t, sch, resp.Text)
				if resp.FinishReason != llm.FinishStop && resp.FinishReason != llm.FinishToolCall {
					t.Fatalf("finish %s", resp.FinishReason)
				}
			})
		}
	}
}

// TestSimulatorRateLimit drives the rate-limited profile past its budget:
// the 429 must come back classified, with the state parsed.
func TestSimulatorRateLimit(t *testing.T) {
	sch := testSchema(t)
	p := mustNew(t, "sim:rate-limited", env{})
	for i := 0; i < 200; i++ {
		resp, err := p.Chat(context.Background(), llm.Request{Messages: simPrompt(sch, "doc"), Mode: llm.ModeStrict, Schema: sch})
		if err == nil {
			if !resp.RateLimit.HasRequests {
				t.Fatalf("call %d: no rate-limit state on a success: %+v", i, resp.RateLimit)
			}
			continue
		}
		var pe *llm.Error
		if !errors.As(err, &pe) || pe.Class != llm.ClassRateLimited || !pe.Retryable() || pe.RateLimit.RetryAfter <= 0 {
			t.Fatalf("call %d: got %+v", i, err)
		}
		return
	}
	t.Fatal("200 calls never hit the 60 requests/minute limit")
}

// TestConcurrentChats: a provider is safe for concurrent use (run with
// -race to make this meaningful).
func TestConcurrentChats(t *testing.T) {
	sch := testSchema(t)
	p := mustNew(t, "sim:clean", env{})
	const workers, calls = 8, 25
	errs := make(chan error, workers*calls)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				resp, err := p.Chat(context.Background(), llm.Request{Messages: simPrompt(sch, fmt.Sprintf("doc %d/%d", w, i)), Mode: llm.ModeStrict, Schema: sch})
				if err == nil {
					_, err = sch.ValidateJSON([]byte(resp.Text))
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAdaptersClassifySimulatorFaults runs every adapter against a
// simulator that fails often, and checks each failure's class against what
// the simulator reports it did.
func TestAdaptersClassifySimulatorFaults(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "faulty.yaml")
	if err := os.WriteFile(profile, []byte(`name: faulty
errors: {status_500: 0.15, status_503: 0.1, status_529: 0.1, drop: 0.1, timeout: 0.05, timeout_cap: 2s}
faults: {truncation: 0.2, refusal: 0.1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	prof, err := sim.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	sch := testSchema(t)
	for _, spec := range []string{"openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "ollama:llama3.1:8b", "gemini:gemini-2.5-flash"} {
		t.Run(spec, func(t *testing.T) {
			s := sim.New(prof, sim.WithSeed(42))
			defer s.Close()
			hs := httptest.NewServer(s.Handler())
			defer hs.Close()
			base := hs.URL
			if strings.HasPrefix(spec, "openai:") {
				base += "/v1"
			}
			p := mustNew(t, spec, env{}, WithBaseURL(base))
			classes := map[llm.ErrorClass]int{}
			statuses := map[int]int{}
			finishes := map[llm.FinishReason]int{}
			const calls = 150
			for i := 0; i < calls; i++ {
				resp, err := p.Chat(context.Background(), llm.Request{
					Messages: nativePrompt(fmt.Sprintf("Invoice %d from ACME", i)), Mode: llm.ModeStrict, Schema: sch,
					Timeout: 100 * time.Millisecond,
				})
				if err != nil {
					var pe *llm.Error
					if !errors.As(err, &pe) || !pe.Retryable() {
						t.Fatalf("call %d: %v is not a retryable *Error", i, err)
					}
					classes[pe.Class]++
					statuses[pe.Status]++
					continue
				}
				finishes[resp.FinishReason]++
			}
			st := s.Stats()
			overloaded := st.ByStatus[503] + st.ByStatus[529]
			if int64(classes[llm.ClassServer]) != st.ByStatus[500] || int64(classes[llm.ClassOverloaded]) != overloaded {
				t.Errorf("server %d / overloaded %d errors, simulator sent %d×500 and %d×503/529", classes[llm.ClassServer], classes[llm.ClassOverloaded], st.ByStatus[500], overloaded)
			}
			if int64(statuses[529]) != st.ByStatus[529] {
				t.Errorf("%d errors with status 529, simulator sent %d", statuses[529], st.ByStatus[529])
			}
			for _, c := range []llm.ErrorClass{llm.ClassServer, llm.ClassOverloaded, llm.ClassNetwork, llm.ClassTimeout} {
				if classes[c] == 0 {
					t.Errorf("no %s error in %d calls (classes %v, stats %+v)", c, calls, classes, st)
				}
			}
			if finishes[llm.FinishLength] == 0 {
				t.Errorf("no truncated answer reported as length (finishes %v)", finishes)
			}
			// Only OpenAI's API reports a refusal apart from the text.
			if strings.HasPrefix(spec, "openai:") && finishes[llm.FinishRefusal] == 0 {
				t.Errorf("no refusal reported (finishes %v)", finishes)
			}
		})
	}
}
