package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// stepClock is a clock tests move by hand.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func newStepClock() *stepClock { return &stepClock{t: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)} }

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// do sends method path with body through the in-process transport.
func do(t testing.TB, s *Server, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "http://sim"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := (&http.Client{Transport: s.Transport()}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// chatBody is an OpenAI chat request extracting the invoice from doc.
func chatBody(t testing.TB, doc string) []byte {
	t.Helper()
	_, raw := invoiceSchema(t)
	b, err := json.Marshal(map[string]any{
		"model":    "gpt-4o-mini",
		"messages": []map[string]string{{"role": "user", "content": promptWithSchema(raw, doc)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func batchDoc(i int) string {
	return fmt.Sprintf("Invoice INV%05d from Vendor %d Ltd, issued 2026-03-%02d. Total $%d.00.", i, i, 1+i%28, 100+i)
}

// batchFile is the JSONL input of n request lines from document first on.
func batchFile(t testing.TB, first, n int) []byte {
	t.Helper()
	var file bytes.Buffer
	for i := first; i < first+n; i++ {
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("job%d-r1", i), "method": "POST", "url": "/v1/chat/completions", "body": json.RawMessage(chatBody(t, batchDoc(i)))})
		file.Write(line)
		file.WriteByte('\n')
	}
	return file.Bytes()
}

// uploadBatch uploads n request lines and creates an OpenAI batch.
func uploadBatch(t testing.TB, s *Server, first, n int) map[string]any {
	t.Helper()
	return createBatch(t, s, batchFile(t, first, n))
}

// createBatch uploads file and creates an OpenAI batch of it.
func createBatch(t testing.TB, s *Server, file []byte) map[string]any {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	_, _ = fw.Write(file)
	_ = mw.Close()
	status, out := do(t, s, "POST", "/v1/files", mw.FormDataContentType(), body.Bytes())
	if status != 200 {
		t.Fatalf("upload: %d %s", status, out)
	}
	fileID := obj(t, out)["id"].(string)
	req, _ := json.Marshal(map[string]any{"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": "24h"})
	status, out = do(t, s, "POST", "/v1/batches", "application/json", req)
	if status != 200 {
		t.Fatalf("create batch: %d %s", status, out)
	}
	return obj(t, out)
}

func getBatch(t testing.TB, s *Server, id string) map[string]any {
	t.Helper()
	status, out := do(t, s, "GET", "/v1/batches/"+id, "", nil)
	if status != 200 {
		t.Fatalf("get batch: %d %s", status, out)
	}
	return obj(t, out)
}

// fileLines reads a file's JSONL by custom id.
func fileLines(t testing.TB, s *Server, id any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	if id == nil {
		return out
	}
	status, body := do(t, s, "GET", "/v1/files/"+id.(string)+"/content", "", nil)
	if status != 200 {
		t.Fatalf("file content: %d %s", status, body)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		m := obj(t, sc.Bytes())
		out[m["custom_id"].(string)] = m
	}
	return out
}

func TestOpenAIBatchLifecycleAnswersAsChat(t *testing.T) {
	t.Parallel()
	prof := builtins["sloppy"]
	prof.Batch = BatchProfile{Delay: time.Hour}
	clock := newStepClock()
	s := New(prof, WithSeed(7), WithClock(clock.now))
	const n = 40
	b := uploadBatch(t, s, 0, n)
	id := b["id"].(string)
	for _, step := range []struct {
		after time.Duration
		want  string
	}{{0, "validating"}, {10 * time.Minute, "in_progress"}, {45 * time.Minute, "finalizing"}, {5 * time.Minute, "completed"}} {
		clock.add(step.after)
		if got := getBatch(t, s, id)["status"]; got != step.want {
			t.Fatalf("status after %v more = %v, want %s", step.after, got, step.want)
		}
	}
	if st := s.Stats(); st.Batches != 1 || st.BatchRequests != n {
		t.Fatalf("stats: batches %d, batch requests %d; want 1, %d", st.Batches, st.BatchRequests, n)
	}
	got := getBatch(t, s, id)
	if got["error_file_id"] != nil {
		t.Fatalf("a profile without batch faults produced an error file: %v", got)
	}
	lines := fileLines(t, s, got["output_file_id"])
	if len(lines) != n {
		t.Fatalf("output has %d lines, want %d", len(lines), n)
	}
	// The same requests sent to the chat route of a twin simulator get the
	// same answers: a batch line is answered by the chat path.
	twin := New(prof, WithSeed(7))
	faulty := 0
	for i := range n {
		resp := lines[fmt.Sprintf("job%d-r1", i)]["response"].(map[string]any)
		if resp["status_code"].(float64) != 200 {
			t.Fatalf("line %d: %v", i, resp)
		}
		body := resp["body"].(map[string]any)
		_, chat := call(t, twin, "/v1/chat/completions", string(chatBody(t, batchDoc(i))))
		want := obj(t, chat)
		gotMsg, _ := json.Marshal(body["choices"])
		wantMsg, _ := json.Marshal(want["choices"])
		if !bytes.Equal(gotMsg, wantMsg) {
			t.Fatalf("line %d answered\n%s\nthe chat route answers\n%s", i, gotMsg, wantMsg)
		}
		gotU, _ := json.Marshal(body["usage"])
		wantU, _ := json.Marshal(want["usage"])
		if !bytes.Equal(gotU, wantU) || body["usage"].(map[string]any)["prompt_tokens"].(float64) == 0 {
			t.Fatalf("line %d usage %s, chat usage %s", i, gotU, wantU)
		}
		if !json.Valid([]byte(fmt.Sprint(body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]))) {
			faulty++
		}
	}
	if faulty == 0 {
		t.Fatal("the sloppy profile spoiled no batch answer; output faults must apply to batch lines")
	}
	var faults int64
	for _, c := range s.Stats().Faults {
		faults += c
	}
	if faults == 0 || s.Stats().PromptTokens == 0 {
		t.Fatalf("batch lines' faults and tokens are not counted: %+v", s.Stats())
	}
}

func TestOpenAIBatchExpiredAndFailedLines(t *testing.T) {
	t.Parallel()
	prof := Profile{Name: "batchy", Batch: BatchProfile{Expire: 0.25, Fail: 0.25}}
	s := New(prof, WithSeed(3))
	const n = 200
	b := getBatch(t, s, uploadBatch(t, s, 0, n)["id"].(string))
	if b["status"] != "expired" {
		t.Fatalf("status %v; a batch with expired lines ends expired", b["status"])
	}
	out, errs := fileLines(t, s, b["output_file_id"]), fileLines(t, s, b["error_file_id"])
	expired, failed := map[string]bool{}, 0
	for cid, l := range errs {
		switch {
		case l["error"] != nil:
			if code := l["error"].(map[string]any)["code"]; code != "batch_expired" {
				t.Fatalf("line %s: error code %v", cid, code)
			}
			expired[cid] = true
		case l["response"].(map[string]any)["status_code"].(float64) == 500:
			failed++
		default:
			t.Fatalf("unexpected error line %v", l)
		}
	}
	if len(out)+len(errs) != n || len(expired) < n/8 || failed < n/8 {
		t.Fatalf("%d answered, %d expired, %d failed of %d; want about a quarter each expired and failed", len(out), len(expired), failed, n)
	}
	st := s.Stats()
	if st.BatchExpired != int64(len(expired)) || st.BatchFailed != int64(failed) {
		t.Fatalf("stats count %d expired, %d failed; the files hold %d, %d", st.BatchExpired, st.BatchFailed, len(expired), failed)
	}
	counts := b["request_counts"].(map[string]any)
	if counts["completed"].(float64) != float64(len(out)) || counts["failed"].(float64) != float64(len(errs)) {
		t.Fatalf("request_counts %v", counts)
	}
	// Sent again, the same requests draw afresh: not the same lines expire.
	again := fileLines(t, s, getBatch(t, s, uploadBatch(t, s, 0, n)["id"].(string))["error_file_id"])
	same := 0
	for cid := range expired {
		if l, ok := again[cid]; ok && l["error"] != nil {
			same++
		}
	}
	if same == len(expired) {
		t.Fatal("every expired line expired again: a retry must draw afresh")
	}
}

func TestBatchEnqueuedTokenLimit(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	probe := New(Profile{})
	uploadBatch(t, probe, 0, 10) // measures what 10 lines enqueue
	var tok int
	for _, b := range probe.batches.batches {
		tok = b.tokens
	}
	s := New(Profile{Batch: BatchProfile{Delay: time.Hour, MaxEnqueuedTokens: tok * 3 / 2}}, WithClock(clock.now))
	a := uploadBatch(t, s, 0, 10)
	if a["status"] != "validating" {
		t.Fatalf("first batch: %v", a)
	}
	b := uploadBatch(t, s, 10, 10)
	if b["status"] != "failed" {
		t.Fatalf("second batch over the enqueued-token limit: status %v", b["status"])
	}
	data := b["errors"].(map[string]any)["data"].([]any)[0].(map[string]any)
	if data["code"] != "token_limit_exceeded" || !strings.Contains(data["message"].(string), "Enqueued token limit") {
		t.Fatalf("errors: %v", data)
	}
	// A smaller batch fits beside the first.
	if c := uploadBatch(t, s, 20, 3); c["status"] == "failed" {
		t.Fatalf("a batch within the limit was refused: %v", c)
	}
	// Once the running batches end, a batch of the same size is accepted.
	clock.add(time.Hour)
	if d := uploadBatch(t, s, 30, 10); d["status"] == "failed" {
		t.Fatalf("the limit did not free up when the batches ended: %v", d)
	}
	if st := s.Stats(); st.BatchesRejected != 1 || st.Batches != 4 {
		t.Fatalf("stats: %d batches, %d rejected; want 4, 1", st.Batches, st.BatchesRejected)
	}
}

func anthropicBatch(t testing.TB, s *Server, ids ...int) (int, map[string]any) {
	t.Helper()
	_, raw := invoiceSchema(t)
	var reqs []any
	for _, i := range ids {
		reqs = append(reqs, map[string]any{"custom_id": fmt.Sprintf("job%d-r2", i), "params": map[string]any{
			"model": "claude-haiku-4-5", "max_tokens": 1024,
			"messages": []map[string]string{{"role": "user", "content": promptWithSchema(raw, batchDoc(i))}},
		}})
	}
	body, _ := json.Marshal(map[string]any{"requests": reqs})
	status, out := do(t, s, "POST", "/v1/messages/batches", "application/json", body)
	return status, obj(t, out)
}

func TestAnthropicBatchLifecycleAndCancel(t *testing.T) {
	t.Parallel()
	clock := newStepClock()
	s := New(Profile{Batch: BatchProfile{Delay: time.Hour, MaxEnqueuedTokens: 50_000}}, WithClock(clock.now))
	status, b := anthropicBatch(t, s, 1, 2, 3, 4)
	if status != 200 || b["type"] != "message_batch" || b["processing_status"] != "in_progress" || !strings.HasPrefix(b["id"].(string), "msgbatch_") {
		t.Fatalf("create: %d %v", status, b)
	}
	id := b["id"].(string)
	if status, out := do(t, s, "GET", "/v1/messages/batches/"+id+"/results", "", nil); status != 400 {
		t.Fatalf("results of a running batch: %d %s", status, out)
	}
	clock.add(time.Hour)
	_, out := do(t, s, "GET", "/v1/messages/batches/"+id, "", nil)
	if got := obj(t, out); got["processing_status"] != "ended" || got["request_counts"].(map[string]any)["succeeded"].(float64) != 4 {
		t.Fatalf("ended batch: %v", got)
	}
	status, res := do(t, s, "GET", "/v1/messages/batches/"+id+"/results", "", nil)
	if status != 200 || bytes.Count(res, []byte("\n")) != 4 {
		t.Fatalf("results: %d %s", status, res)
	}
	first := obj(t, bytes.SplitN(res, []byte("\n"), 2)[0])
	msg := first["result"].(map[string]any)["message"].(map[string]any)
	if first["custom_id"] != "job1-r2" || msg["type"] != "message" || msg["usage"].(map[string]any)["input_tokens"].(float64) == 0 {
		t.Fatalf("result line: %v", first)
	}

	// Canceled a quarter of the way: the first quarter keeps its answers.
	_, b = anthropicBatch(t, s, 1, 2, 3, 4, 5, 6, 7, 8)
	id = b["id"].(string)
	clock.add(15 * time.Minute)
	_, out = do(t, s, "POST", "/v1/messages/batches/"+id+"/cancel", "application/json", nil)
	if got := obj(t, out); got["processing_status"] != "canceling" || got["cancel_initiated_at"] == nil {
		t.Fatalf("cancel: %v", got)
	}
	_, out = do(t, s, "GET", "/v1/messages/batches/"+id, "", nil)
	counts := obj(t, out)["request_counts"].(map[string]any)
	if counts["succeeded"].(float64) != 2 || counts["canceled"].(float64) != 6 {
		t.Fatalf("after cancel: %v", counts)
	}
	// Over the enqueued-token limit Anthropic answers 429.
	big := make([]int, 400)
	for i := range big {
		big[i] = i
	}
	if status, body := anthropicBatch(t, s, big...); status != 429 || body["error"].(map[string]any)["type"] != "rate_limit_error" {
		t.Fatalf("oversized batch: %d %v", status, body)
	}
}

func TestBatchRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	s := New(Profile{})
	tests := []struct {
		name, method, path, ctype, body string
		want                            int
	}{
		{"file without multipart", "POST", "/v1/files", "application/json", `{}`, 400},
		{"unknown file", "GET", "/v1/files/file-nope/content", "", ``, 404},
		{"batch of an unknown file", "POST", "/v1/batches", "application/json", `{"input_file_id":"file-nope","endpoint":"/v1/chat/completions","completion_window":"24h"}`, 404},
		{"wrong window", "POST", "/v1/batches", "application/json", `{"input_file_id":"f","endpoint":"/v1/chat/completions","completion_window":"1h"}`, 400},
		{"wrong endpoint", "POST", "/v1/batches", "application/json", `{"input_file_id":"f","endpoint":"/v1/embeddings","completion_window":"24h"}`, 400},
		{"unknown batch", "GET", "/v1/batches/batch_nope", "", ``, 404},
		{"wrong method", "DELETE", "/v1/batches", "", ``, 405},
		{"bad custom id", "POST", "/v1/messages/batches", "application/json", `{"requests":[{"custom_id":"a b","params":{}}]}`, 400},
		{"no requests", "POST", "/v1/messages/batches", "application/json", `{"requests":[]}`, 400},
		{"unknown message batch", "GET", "/v1/messages/batches/msgbatch_nope", "", ``, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out := do(t, s, tc.method, tc.path, tc.ctype, []byte(tc.body))
			if status != tc.want {
				t.Fatalf("%s %s: %d %s; want %d", tc.method, tc.path, status, out, tc.want)
			}
		})
	}
	// A file whose lines mix models fails validation, naming the line.
	var file bytes.Buffer
	for i, m := range []string{"gpt-4o-mini", "gpt-4o"} {
		fmt.Fprintf(&file, `{"custom_id":"c%d","method":"POST","url":"/v1/chat/completions","body":{"model":%q,"messages":[{"role":"user","content":"x"}]}}`+"\n", i, m)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	_, _ = fw.Write(file.Bytes())
	_ = mw.Close()
	_, out := do(t, s, "POST", "/v1/files", mw.FormDataContentType(), body.Bytes())
	req := fmt.Sprintf(`{"input_file_id":%q,"endpoint":"/v1/chat/completions","completion_window":"24h"}`, obj(t, out)["id"])
	_, out = do(t, s, "POST", "/v1/batches", "application/json", []byte(req))
	b := obj(t, out)
	data := b["errors"].(map[string]any)["data"].([]any)[0].(map[string]any)
	if b["status"] != "failed" || data["code"] != "mismatched_model" || data["line"].(float64) != 2 {
		t.Fatalf("mixed models: %v", b)
	}
}
