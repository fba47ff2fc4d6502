package providers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/extractq/extractq/internal/sim"
	"github.com/extractq/extractq/llm"
)

// recorder keeps the body of every request by path, then passes it on.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	body map[string][][]byte
	ctyp map[string]string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	r.mu.Lock()
	r.body[req.URL.Path] = append(r.body[req.URL.Path], b)
	r.ctyp[req.URL.Path] = req.Header.Get("Content-Type")
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// batchPair is an OpenAI and an Anthropic adapter on one simulator.
func batchProviders(t *testing.T, prof sim.Profile) (oai, ant llm.Provider, rec *recorder, srv *sim.Server) {
	t.Helper()
	srv = sim.New(prof, sim.WithSeed(11))
	t.Cleanup(srv.Close)
	rec = &recorder{next: srv.Transport(), body: map[string][][]byte{}, ctyp: map[string]string{}}
	hc := &http.Client{Transport: rec}
	oai, err := New("openai:gpt-4o-mini", WithBaseURL("http://sim.invalid/v1"), WithAPIKey("sk-sim-test-key-000"), WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	ant, err = New("anthropic:claude-haiku-4-5", WithBaseURL("http://sim.invalid"), WithAPIKey("sk-ant-sim-test-key-000"), WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	return oai, ant, rec, srv
}

func batchRequests(t *testing.T, n, round int, mode llm.Mode) []llm.BatchRequest {
	s := testSchema(t)
	out := make([]llm.BatchRequest, n)
	for i := range out {
		msgs := nativePrompt(fmt.Sprintf("Invoice from Vendor %d Ltd. Total $%d.00, paid.", i, 100+i))
		if mode == llm.ModeText || mode == llm.ModeJSON {
			msgs = simPrompt(s, fmt.Sprintf("Invoice from Vendor %d Ltd. Total $%d.00, paid.", i, 100+i))
		}
		out[i] = llm.BatchRequest{
			CustomID: llm.BatchCustomID(fmt.Sprintf("%032x", i), round),
			Request:  llm.Request{Messages: msgs, Mode: mode, Schema: s, MaxTokens: 512, Temperature: 0.2},
		}
	}
	return out
}

// uploadedLines reads the JSONL file of the last upload.
func uploadedLines(t *testing.T, rec *recorder) []map[string]json.RawMessage {
	t.Helper()
	rec.mu.Lock()
	bodies, ctyp := rec.body["/v1/files"], rec.ctyp["/v1/files"]
	rec.mu.Unlock()
	_, params, err := mime.ParseMediaType(ctyp)
	if err != nil {
		t.Fatal(err)
	}
	mr := multipart.NewReader(bytes.NewReader(bodies[len(bodies)-1]), params["boundary"])
	var out []map[string]json.RawMessage
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(part)
		switch part.FormName() {
		case "purpose":
			if string(data) != "batch" {
				t.Fatalf("purpose %q", data)
			}
		case "file":
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				var l map[string]json.RawMessage
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatal(err)
				}
				out = append(out, l)
			}
		}
	}
}

// TestBatchLinesAreTheOnlineBody: each batch request carries byte for byte
// the body the online Chat call sends, in every mode.
func TestBatchLinesAreTheOnlineBody(t *testing.T) {
	t.Parallel()
	for _, mode := range []llm.Mode{llm.ModeText, llm.ModeJSON, llm.ModeStrict, llm.ModeTools} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			oai, ant, rec, _ := batchProviders(t, sim.Profile{})
			reqs := batchRequests(t, 3, 1, mode)
			ctx := t.Context()
			if _, err := oai.(llm.Batcher).SubmitBatch(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			lines := uploadedLines(t, rec)
			if len(lines) != len(reqs) {
				t.Fatalf("%d lines for %d requests", len(lines), len(reqs))
			}
			for i, r := range reqs {
				if _, err := oai.Chat(ctx, r.Request); err != nil {
					t.Fatal(err)
				}
				online := rec.body["/v1/chat/completions"][i]
				if string(lines[i]["custom_id"]) != `"`+r.CustomID+`"` || string(lines[i]["url"]) != `"/v1/chat/completions"` || string(lines[i]["method"]) != `"POST"` {
					t.Fatalf("line %d: %s", i, lines[i]["custom_id"])
				}
				if !bytes.Equal(lines[i]["body"], online) {
					t.Fatalf("OpenAI line %d body\n%s\nonline body\n%s", i, lines[i]["body"], online)
				}
			}
			if mode == llm.ModeJSON {
				return // Anthropic has no JSON mode
			}
			if _, err := ant.(llm.Batcher).SubmitBatch(ctx, reqs); err != nil {
				t.Fatal(err)
			}
			var sent struct {
				Requests []struct {
					CustomID string          `json:"custom_id"`
					Params   json.RawMessage `json:"params"`
				} `json:"requests"`
			}
			if err := json.Unmarshal(rec.body["/v1/messages/batches"][0], &sent); err != nil {
				t.Fatal(err)
			}
			for i, r := range reqs {
				if _, err := ant.Chat(ctx, r.Request); err != nil {
					t.Fatal(err)
				}
				if online := rec.body["/v1/messages"][i]; sent.Requests[i].CustomID != r.CustomID || !bytes.Equal(sent.Requests[i].Params, online) {
					t.Fatalf("Anthropic request %d params\n%s\nonline body\n%s", i, sent.Requests[i].Params, online)
				}
			}
		})
	}
}

// pollEnded polls until the batch is final.
func pollEnded(t *testing.T, b llm.Batcher, id llm.BatchID) llm.BatchStatus {
	t.Helper()
	for range 100 {
		st, err := b.BatchStatus(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State.Final() {
			return st
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("batch %s did not end", id)
	return llm.BatchStatus{}
}

func TestBatchRoundTripThroughSimulator(t *testing.T) {
	t.Parallel()
	prof := sim.Profile{Batch: sim.BatchProfile{Expire: 0.2, Fail: 0.2}}
	for _, name := range []string{"openai", "anthropic"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			oai, ant, _, _ := batchProviders(t, prof)
			p := oai
			if name == "anthropic" {
				p = ant
			}
			b := p.(llm.Batcher)
			if !p.Capabilities().Batch.Supported() || b.BatchLimits() != p.Capabilities().Batch {
				t.Fatalf("capabilities do not announce the batch API: %+v", p.Capabilities())
			}
			reqs := batchRequests(t, 60, 2, llm.ModeTools)
			id, err := b.SubmitBatch(t.Context(), reqs)
			if err != nil {
				t.Fatal(err)
			}
			st := pollEnded(t, b, id)
			if st.State != llm.BatchExpired || st.Counts.Total != len(reqs) {
				t.Fatalf("status %+v; a batch with expired lines ends expired", st)
			}
			// Results of a batch polled by another worker: rebuilt requests.
			res, err := llm.BatchResults(t.Context(), b, id, reqs)
			if err != nil {
				t.Fatal(err)
			}
			s := testSchema(t)
			counts := map[llm.ErrorClass]int{}
			for i, r := range res {
				if r.CustomID != reqs[i].CustomID {
					t.Fatalf("result %d is %s, want %s", i, r.CustomID, reqs[i].CustomID)
				}
				if jobID, round, ok := llm.ParseBatchCustomID(r.CustomID); !ok || round != 2 || jobID != fmt.Sprintf("%032x", i) {
					t.Fatalf("custom id %s does not parse back", r.CustomID)
				}
				if (r.Response == nil) == (r.Err == nil) {
					t.Fatalf("result %d: response %v, err %v; want exactly one", i, r.Response, r.Err)
				}
				if r.Err != nil {
					var pe *llm.Error
					if !errors.As(r.Err, &pe) || !pe.Retryable() {
						t.Fatalf("result %d: %v must be a retryable *llm.Error (a transport-class retry, never a re-ask)", i, r.Err)
					}
					counts[pe.Class]++
					continue
				}
				assertValid(t, s, r.Response.Text)
				if r.Response.Usage.PromptTokens == 0 || r.Response.Usage.CompletionTokens == 0 || r.Response.FinishReason != llm.FinishToolCall {
					t.Fatalf("result %d: %+v", i, r.Response)
				}
				counts[""]++
			}
			if counts[llm.ClassBatchExpired] == 0 || counts[llm.ClassServer] == 0 || counts[""] == 0 {
				t.Fatalf("outcomes %v; want answers, expired and failed lines", counts)
			}
		})
	}
}

func TestSplitBatchByLimits(t *testing.T) {
	t.Parallel()
	oai, ant, _, _ := batchProviders(t, sim.Profile{})
	reqs := batchRequests(t, 10, 1, llm.ModeTools)
	for _, p := range []llm.Provider{oai, ant} {
		t.Run(p.Name(), func(t *testing.T) {
			var lineSize int64
			set := func(l llm.BatchLimits) {
				switch v := p.(type) {
				case *openAIProvider:
					v.caps.Batch = l
				case *anthropicProvider:
					v.caps.Batch = l
				}
			}
			b := p.(llm.Batcher)
			set(llm.BatchLimits{MaxRequests: 3, MaxBytes: 1 << 30})
			groups, err := b.SplitBatch(reqs)
			if err != nil {
				t.Fatal(err)
			}
			if sizes := groupSizes(groups); sizes != "3,3,3,1" {
				t.Fatalf("split by count: %s", sizes)
			}
			if err := p.(interface {
				checkBatch(int, int64, llm.BatchLimits) error
			}).checkBatch(4, 1, b.BatchLimits()); err == nil {
				t.Fatal("four requests passed a limit of three")
			}
			_, err = b.SubmitBatch(t.Context(), reqs[:4])
			var pe *llm.Error
			if !errors.As(err, &pe) || pe.Class != llm.ClassTooLarge || !strings.Contains(pe.Message, "SplitBatch") {
				t.Fatalf("submitting more than the limit: %v", err)
			}
			// By size: room for two encoded requests per batch.
			one, _ := (&recorderFree{p}).size(reqs[0])
			lineSize = one + 1
			set(llm.BatchLimits{MaxRequests: 1000, MaxBytes: 2*lineSize + lineSize/2})
			groups, err = b.SplitBatch(reqs)
			if err != nil {
				t.Fatal(err)
			}
			if sizes := groupSizes(groups); sizes != "2,2,2,2,2" {
				t.Fatalf("split by size: %s", sizes)
			}
			var flat []llm.BatchRequest
			for _, g := range groups {
				flat = append(flat, g...)
			}
			for i := range reqs {
				if flat[i].CustomID != reqs[i].CustomID {
					t.Fatal("the split reordered the requests")
				}
			}
			set(llm.BatchLimits{MaxRequests: 1000, MaxBytes: lineSize / 2})
			if _, err := b.SplitBatch(reqs); err == nil || !strings.Contains(err.Error(), reqs[0].CustomID) {
				t.Fatalf("a request larger than a batch: %v", err)
			}
			set(llm.BatchLimits{MaxRequests: 1000, MaxBytes: 1 << 30})
			bad := append([]llm.BatchRequest{}, reqs[:2]...)
			bad[1].CustomID = bad[0].CustomID
			if _, err := b.SplitBatch(bad); err == nil || !strings.Contains(err.Error(), "twice") {
				t.Fatalf("duplicate custom ids: %v", err)
			}
			bad[1].CustomID = "job 1/r1"
			if _, err := b.SplitBatch(bad); err == nil || !strings.Contains(err.Error(), "job 1/r1") {
				t.Fatalf("bad custom id: %v", err)
			}
			set(llm.BatchLimits{})
			if _, err := b.SplitBatch(reqs); err == nil || !strings.Contains(err.Error(), "no batch API") {
				t.Fatalf("no batch API: %v", err)
			}
		})
	}
}

// recorderFree measures a request's encoded size as the adapter sends it.
type recorderFree struct{ p llm.Provider }

func (r *recorderFree) size(req llm.BatchRequest) (int64, error) {
	var b []byte
	var err error
	switch v := r.p.(type) {
	case *openAIProvider:
		b, err = v.batchLine(req)
	case *anthropicProvider:
		b, err = v.batchEntry(req)
	}
	return int64(len(b)), err
}

func groupSizes(groups [][]llm.BatchRequest) string {
	var s []string
	for _, g := range groups {
		s = append(s, fmt.Sprint(len(g)))
	}
	return strings.Join(s, ",")
}

func TestBatchTokenLimitAndCancel(t *testing.T) {
	t.Parallel()
	oai, ant, _, _ := batchProviders(t, sim.Profile{Batch: sim.BatchProfile{Delay: time.Hour, MaxEnqueuedTokens: 5000}})
	ctx := context.Background()
	reqs := batchRequests(t, 40, 1, llm.ModeTools)
	id, err := oai.(llm.Batcher).SubmitBatch(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := oai.(llm.Batcher).BatchStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != llm.BatchFailed || st.Failure == nil || st.Failure.Type != "token_limit_exceeded" || st.Failure.Class != llm.ClassRateLimited {
		t.Fatalf("over the enqueued-token limit: %+v (failure %+v)", st, st.Failure)
	}
	// Its results are the failure, for every request: retryable, no re-ask.
	res, err := llm.BatchResults(ctx, oai.(llm.Batcher), id, reqs)
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("results of a failed batch: %d, %v", len(res), err)
	}
	for _, r := range res {
		var pe *llm.Error
		if !errors.As(r.Err, &pe) || pe.Type != "token_limit_exceeded" || !pe.Retryable() {
			t.Fatalf("result of a refused batch: %+v", r)
		}
	}
	// A part fits; cancelled at once, every line is canceled and retryable.
	id, err = oai.(llm.Batcher).SubmitBatch(ctx, reqs[:4])
	if err != nil {
		t.Fatal(err)
	}
	if st, err = oai.(llm.Batcher).CancelBatch(ctx, id); err != nil || st.ProviderStatus != "cancelling" || st.State.Final() {
		t.Fatalf("cancel: %+v, %v", st, err)
	}
	if st, _ = oai.(llm.Batcher).BatchStatus(ctx, id); st.State != llm.BatchCanceled {
		t.Fatalf("after cancel: %+v", st)
	}
	res, err = llm.BatchResults(ctx, oai.(llm.Batcher), id, reqs[:4])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		var pe *llm.Error
		if !errors.As(r.Err, &pe) || pe.Class != llm.ClassBatchCanceled || !pe.Retryable() {
			t.Fatalf("canceled line: %+v", r)
		}
	}
	// Anthropic refuses the oversized batch outright with a 429.
	_, err = ant.(llm.Batcher).SubmitBatch(ctx, reqs)
	var pe *llm.Error
	if !errors.As(err, &pe) || pe.Class != llm.ClassRateLimited {
		t.Fatalf("Anthropic over the enqueued-token limit: %v", err)
	}
	// Results of a running batch are refused, naming what to do.
	id, err = ant.(llm.Batcher).SubmitBatch(ctx, reqs[:2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.BatchResults(ctx, ant.(llm.Batcher), id, reqs[:2]); err == nil || !strings.Contains(err.Error(), "poll until") {
		t.Fatalf("results of a running batch: %v", err)
	}
}

func TestBatchSupportByFamily(t *testing.T) {
	t.Parallel()
	for fam, want := range map[string]int{"openai": 50_000, "anthropic": 100_000, "groq": 0, "gemini": 0} {
		l, ok := BatchLimitsFor(fam)
		if ok != (want > 0) || l.MaxRequests != want {
			t.Errorf("%s: %+v, %v; want max %d", fam, l, ok, want)
		}
	}
	p, err := New("groq:llama-3.3-70b-versatile", WithAPIKey("k"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Capabilities().Batch.Supported() {
		t.Fatal("groq announces a batch API it was not checked for")
	}
}

func TestEstimateBatchCostIsHalf(t *testing.T) {
	t.Parallel()
	u := llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}
	online, _ := EstimateCost("openai:gpt-4o-mini", u)
	batch, known := EstimateBatchCost("openai:gpt-4o-mini", u)
	if !known || online != 0.75 || batch != 0.375 {
		t.Fatalf("online %v, batch %v (known %v); want 0.75 and 0.375", online, batch, known)
	}
	if _, known := EstimateBatchCost("nobody:model", u); known {
		t.Fatal("an unknown model has a batch price")
	}
}
