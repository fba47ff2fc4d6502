package simprovider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/providers"
	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/internal/sim/simprovider"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

func testSchema(t testing.TB) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"vendor":{"type":"string"},"total":{"type":"number"},"paid":{"type":"boolean"}},"required":["vendor","total","paid"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustNew(t *testing.T, spec string) llm.Provider {
	t.Helper()
	p, err := providers.New(spec)
	if err != nil {
		t.Fatalf("New(%q): %v", spec, err)
	}
	return p
}

// simPrompt follows the engine's prompt conventions, with the schema
// embedded for modes where the provider does not enforce it.
func simPrompt(s *schema.Schema, doc string) []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "Extract the fields. Answer with JSON only."},
		{Role: llm.RoleUser, Content: "<json-schema>" + string(s.JSON()) + "</json-schema>\n<document-00112233aabbccdd>" + doc + "</document-00112233aabbccdd>"},
	}
}

func assertValid(t *testing.T, s *schema.Schema, text string) {
	t.Helper()
	vs, err := s.ValidateJSON([]byte(text))
	if err != nil || vs != nil {
		t.Fatalf("answer %q is not valid: %v %+v", text, err, vs)
	}
}

func TestRegisteredFamily(t *testing.T) {
	if !strings.Contains(strings.Join(providers.KnownFamilies(), ","), simprovider.Family) {
		t.Fatalf("importing simprovider must register %q: %v", simprovider.Family, providers.KnownFamilies())
	}
	if err := providers.Register(simprovider.Family, nil); !errors.Is(err, providers.ErrBadFamily) {
		t.Fatalf("a second registration of sim must fail: %v", err)
	}
}

func TestSimProvider(t *testing.T) {
	sch := testSchema(t)
	for _, mode := range []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools, llm.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			p := mustNew(t, "sim:clean")
			if p.Name() != "sim:clean" || p.Model() != "sim" {
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
	p := mustNew(t, "sim:clean/gpt-4o-mini")
	if p.Name() != "sim:clean/gpt-4o-mini" || p.Model() != "gpt-4o-mini" {
		t.Fatalf("name %q model %q", p.Name(), p.Model())
	}
	if usd, known := providers.EstimateCost(p.Name(), llm.Usage{PromptTokens: 1e6}); !known || usd != providers.SimInputPrice {
		t.Fatalf("a sim model must cost the notional price, got %v %v", usd, known)
	}
	_, err := providers.New("sim:no-such-profile")
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
	a := mustSharedNew(t, "sim:one", srv)
	b := mustSharedNew(t, "sim:two/gpt-4o", srv)
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

// TestSimulatorRateLimit drives the rate-limited profile past its budget:
// the 429 must come back classified, with the state parsed.
func TestSimulatorRateLimit(t *testing.T) {
	sch := testSchema(t)
	p := mustNew(t, "sim:rate-limited")
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
	p := mustNew(t, "sim:clean")
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

func mustSharedNew(t *testing.T, spec string, srv *sim.Server) llm.Provider {
	t.Helper()
	p, err := simprovider.New(spec, srv)
	if err != nil {
		t.Fatalf("simprovider.New(%q): %v", spec, err)
	}
	return p
}

// TestIdentityOfProfiles: two simulator profiles answer differently, so
// they are two models to the fleet (results of sim:clean must not count as
// done for sim:realistic).
func TestIdentityOfProfiles(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{"sim:clean": "sim:clean", "sim:realistic": "sim:realistic", "sim:clean/gpt-4o": "sim:clean/gpt-4o"} {
		if got, err := providers.Identity(spec, ""); err != nil || got != want {
			t.Errorf("Identity(%q) = %q, %v; want %q", spec, got, err, want)
		}
	}
}

// TestRemoteReachesTheSameBatches: a batch submitted to a simulator in
// process is seen and canceled over HTTP through Remote, as `extractq batch
// cancel` reaches a dev mode's simulator.
func TestRemoteReachesTheSameBatches(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	prof, err := sim.LoadProfile("clean")
	if err != nil {
		t.Fatal(err)
	}
	prof.Batch.Delay = time.Hour
	srv := sim.New(prof, sim.WithSeed(5))
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	local, err := simprovider.New("sim:clean/gpt-4o-mini", srv)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := simprovider.Remote("sim:clean/gpt-4o-mini", hs.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if remote.Name() != local.Name() || remote.Model() != "gpt-4o-mini" || !remote.Capabilities().Batch.Supported() {
		t.Fatalf("remote provider %s (%s), batch %+v", remote.Name(), remote.Model(), remote.Capabilities().Batch)
	}
	sch := testSchema(t)
	id, err := local.(llm.Batcher).SubmitBatch(ctx, []llm.BatchRequest{{CustomID: llm.BatchCustomID("job1", 1),
		Request: llm.Request{Messages: simPrompt(sch, "Invoice from ACME, total 12.50, paid"), Mode: llm.ModeStrict, Schema: sch}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := remote.(llm.Batcher).CancelBatch(ctx, id)
	if err != nil || st.ProviderStatus != "cancelling" {
		t.Fatalf("cancel over HTTP = %+v, %v", st, err)
	}
	if st, err := local.(llm.Batcher).BatchStatus(ctx, id); err != nil || st.State != llm.BatchCanceled {
		t.Fatalf("in process after the remote cancel: %+v, %v", st, err)
	}
	if _, err := simprovider.Remote("openai:gpt-4o", hs.URL); !errors.Is(err, providers.ErrBadSpec) {
		t.Fatalf("Remote of a non-sim spec: %v", err)
	}
}
