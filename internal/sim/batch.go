package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The batch APIs: OpenAI Files + Batches (POST /v1/files purpose "batch",
// POST /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel,
// GET /v1/files/{id}/content) and Anthropic Message Batches (POST
// /v1/messages/batches, GET …/{id}, GET …/{id}/results, POST …/{id}/cancel).
//
// A batch runs on the simulator's clock: it is validating for the first
// tenth of Profile.Batch.Delay, in progress until nine tenths, finalizing
// until Delay has passed, then ended. Its lines are answered when it ends,
// each exactly as the chat route would answer that request (the same
// values, output faults and transport faults, drawn from the same seeds),
// except that a line may also expire (Batch.Expire) or fail (Batch.Fail).
// A transport fault drawn for a line becomes that line's error status.
// A batch whose enqueued tokens, with those of the model's batches still
// running, exceed Batch.MaxEnqueuedTokens is refused: OpenAI fails it with
// token_limit_exceeded, Anthropic answers 429.

// BatchProfile is how the simulated batch APIs behave.
type BatchProfile struct {
	// Delay is how long a batch runs before its results are ready (zero:
	// ready at the first poll).
	Delay time.Duration `yaml:"delay,omitempty" json:"delay"`
	// Expire and Fail are the probabilities, per request line, that it
	// expires unanswered or fails with a server error.
	Expire float64 `yaml:"expire,omitempty" json:"expire"`
	Fail   float64 `yaml:"fail,omitempty" json:"fail"`
	// MaxEnqueuedTokens bounds the prompt tokens of one model's batches
	// running at once (zero: unlimited), as OpenAI's enqueued-token quota.
	MaxEnqueuedTokens int `yaml:"max_enqueued_tokens,omitempty" json:"max_enqueued_tokens"`
}

// Batch limits of the APIs, as published.
const (
	maxOpenAIBatchFile     = 200 << 20
	maxOpenAIBatchLines    = 50_000
	maxAnthropicBatchBody  = 256 << 20
	maxAnthropicBatchLines = 100_000
)

// batchSalt separates the expire/fail draw of a line from its answer's.
const batchSalt = 0xba7c4

type simFile struct {
	id, purpose, filename string
	data                  []byte
	created               time.Time
}

type batchLine struct {
	customID string
	body     []byte // the chat request (OpenAI body, Anthropic params)
}

type lineOutcome uint8

const (
	lineSucceeded lineOutcome = iota
	lineErrored
	lineExpired
	lineCanceled
)

type lineResult struct {
	customID string
	outcome  lineOutcome
	status   int // HTTP status of the answer (succeeded or errored)
	body     []byte
}

type simBatch struct {
	id      string
	a       api // apiOpenAI or apiAnthropic
	model   string
	created time.Time
	tokens  int // enqueued prompt tokens
	inputID string
	lines   []batchLine

	mu sync.Mutex
	// failure refused the batch as a whole (OpenAI status "failed").
	failure    *batchFailure
	canceledAt time.Time
	endedAt    time.Time
	ended      bool
	results    []lineResult
	outputID   string
	errorID    string
}

type batchFailure struct {
	code, msg string
	line      int // 1-based; 0 when not about a line
}

type batchStore struct {
	// enqueue serialises admission, so two batches sent at once cannot
	// both fit the enqueued-token limit that only one fits.
	enqueue sync.Mutex
	mu      sync.Mutex
	next    uint64
	files   map[string]*simFile
	batches map[string]*simBatch
}

func newBatchStore() *batchStore {
	return &batchStore{files: map[string]*simFile{}, batches: map[string]*simBatch{}}
}

func (bs *batchStore) id(prefix string) string {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.next++
	return fmt.Sprintf("%s%012d", prefix, bs.next)
}

func (bs *batchStore) file(id string) *simFile {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return bs.files[id]
}

func (bs *batchStore) batch(id string, a api) *simBatch {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if b := bs.batches[id]; b != nil && b.a == a {
		return b
	}
	return nil
}

// serveBatch handles the batch and file endpoints; it reports whether the
// path was one of them.
func (s *Server) serveBatch(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	var a api
	switch {
	case p == "/v1/messages/batches" || strings.HasPrefix(p, "/v1/messages/batches/"):
		a = apiAnthropic
	case p == "/v1/files" || strings.HasPrefix(p, "/v1/files/") || p == "/v1/batches" || strings.HasPrefix(p, "/v1/batches/"):
		a = apiOpenAI
	default:
		return false
	}
	s.c.requests.Add(1)
	s.c.byRoute[a].Add(1)
	notFound := func() {
		s.fail(w, a, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("Invalid URL (%s %s)", r.Method, p)}, nil)
	}
	method := func(want string) bool {
		if r.Method == want {
			return true
		}
		s.fail(w, a, &apiError{status: 405, kind: errMethod, msg: fmt.Sprintf("method %s not allowed; use %s %s", r.Method, want, p)}, nil)
		return false
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if a == apiAnthropic {
		parts = parts[3:] // after v1/messages/batches
		switch {
		case len(parts) == 0:
			if method(http.MethodPost) {
				s.createAnthropicBatch(w, r)
			}
		case len(parts) == 1 && method(http.MethodGet):
			s.showBatch(w, a, parts[0], false)
		case len(parts) == 2 && parts[1] == "results" && method(http.MethodGet):
			s.anthropicResults(w, parts[0])
		case len(parts) == 2 && parts[1] == "cancel" && method(http.MethodPost):
			s.showBatch(w, a, parts[0], true)
		case len(parts) > 2 || (len(parts) == 2 && parts[1] != "results" && parts[1] != "cancel"):
			notFound()
		}
		return true
	}
	switch {
	case parts[1] == "files" && len(parts) == 2:
		if method(http.MethodPost) {
			s.uploadFile(w, r)
		}
	case parts[1] == "files" && len(parts) == 4 && parts[3] == "content":
		if method(http.MethodGet) {
			s.fileContent(w, parts[2])
		}
	case parts[1] == "files" && len(parts) == 3:
		if method(http.MethodDelete) {
			s.deleteFile(w, parts[2])
		}
	case parts[1] == "batches" && len(parts) == 2:
		if method(http.MethodPost) {
			s.createOpenAIBatch(w, r)
		}
	case parts[1] == "batches" && len(parts) == 3:
		if method(http.MethodGet) {
			s.showBatch(w, a, parts[2], false)
		}
	case parts[1] == "batches" && len(parts) == 4 && parts[3] == "cancel":
		if method(http.MethodPost) {
			s.showBatch(w, a, parts[2], true)
		}
	default:
		notFound()
	}
	return true
}

func (s *Server) sendJSON(w http.ResponseWriter, a api, v any) {
	var buf bytes.Buffer
	if err := marshal(&buf, v); err != nil {
		s.fail(w, a, &apiError{status: 500, kind: errServer, msg: "simulator could not encode its reply: " + err.Error()}, nil)
		return
	}
	s.send(w, http.StatusOK, "application/json", buf.Bytes(), nil, s.now())
}

// OpenAI files.

type openAIFile struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	Bytes     int    `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

func (f *simFile) object() *openAIFile {
	return &openAIFile{ID: f.id, Object: "file", Bytes: len(f.data), CreatedAt: f.created.Unix(), Filename: f.filename, Purpose: f.purpose}
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		s.fail(w, apiOpenAI, invalid("send the file as multipart/form-data with the fields purpose and file"), nil)
		return
	}
	mr := multipart.NewReader(io.LimitReader(r.Body, maxOpenAIBatchFile+1<<20), params["boundary"])
	f := &simFile{created: s.now()}
	var gotFile bool
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.fail(w, apiOpenAI, invalid("could not read the multipart body: %v", err), nil)
			return
		}
		data, err := io.ReadAll(io.LimitReader(part, maxOpenAIBatchFile+1))
		if err != nil {
			s.fail(w, apiOpenAI, invalid("could not read the multipart body: %v", err), nil)
			return
		}
		switch part.FormName() {
		case "purpose":
			f.purpose = string(data)
		case "file":
			if len(data) > maxOpenAIBatchFile {
				s.fail(w, apiOpenAI, &apiError{status: 413, kind: errTooLarge, msg: fmt.Sprintf("File is too large: a batch input file may hold at most %d bytes", maxOpenAIBatchFile)}, nil)
				return
			}
			f.filename, f.data, gotFile = part.FileName(), data, true
		}
	}
	switch {
	case !gotFile:
		s.fail(w, apiOpenAI, invalid("'file' is a required property"), nil)
		return
	case f.purpose != "batch":
		s.fail(w, apiOpenAI, invalid("the simulator accepts files of purpose 'batch' only, not %q", f.purpose), nil)
		return
	}
	f.id = s.batches.id("file-sim")
	s.batches.mu.Lock()
	s.batches.files[f.id] = f
	s.batches.mu.Unlock()
	s.sendJSON(w, apiOpenAI, f.object())
}

func (s *Server) fileContent(w http.ResponseWriter, id string) {
	f := s.batches.file(id)
	if f == nil {
		s.fail(w, apiOpenAI, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("No such File object: %s", id)}, nil)
		return
	}
	s.send(w, http.StatusOK, "application/jsonl", f.data, nil, s.now())
}

func (s *Server) deleteFile(w http.ResponseWriter, id string) {
	s.batches.mu.Lock()
	_, ok := s.batches.files[id]
	delete(s.batches.files, id)
	s.batches.mu.Unlock()
	if !ok {
		s.fail(w, apiOpenAI, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("No such File object: %s", id)}, nil)
		return
	}
	s.sendJSON(w, apiOpenAI, map[string]any{"id": id, "object": "file", "deleted": true})
}

// Creating batches.

func (s *Server) createOpenAIBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputFileID      string `json:"input_file_id"`
		Endpoint         string `json:"endpoint"`
		CompletionWindow string `json:"completion_window"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		s.fail(w, apiOpenAI, invalid("could not read the request body: %v", err), nil)
		return
	}
	if aerr := decodeBody(body, &req); aerr != nil {
		s.fail(w, apiOpenAI, aerr, nil)
		return
	}
	switch {
	case req.Endpoint != "/v1/chat/completions":
		s.fail(w, apiOpenAI, invalid("the simulator batches endpoint /v1/chat/completions only, not %q", req.Endpoint), nil)
		return
	case req.CompletionWindow != "24h":
		s.fail(w, apiOpenAI, invalid("completion_window must be '24h', not %q", req.CompletionWindow), nil)
		return
	}
	f := s.batches.file(req.InputFileID)
	if f == nil || f.purpose != "batch" {
		s.fail(w, apiOpenAI, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("No such File object: %s", req.InputFileID)}, nil)
		return
	}
	b := &simBatch{a: apiOpenAI, created: s.now(), inputID: f.id}
	b.failure = s.readOpenAILines(b, f.data)
	s.enqueue(b)
	s.sendJSON(w, apiOpenAI, s.openAIBatchObject(b))
}

// readOpenAILines parses the input file into b's lines, or says why the
// batch fails validation.
func (s *Server) readOpenAILines(b *simBatch, data []byte) *batchFailure {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, maxOpenAIBatchFile)
	seen := map[string]bool{}
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return &batchFailure{code: "invalid_json_line", msg: fmt.Sprintf("This line is not parseable as valid JSON: %v", err), line: n}
		}
		var model struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(l.Body, &model)
		switch {
		case l.CustomID == "":
			return &batchFailure{code: "missing_required_parameter", msg: "custom_id is required", line: n}
		case seen[l.CustomID]:
			return &batchFailure{code: "duplicate_custom_id", msg: fmt.Sprintf("The custom_id %q for this request is a duplicate of another request. The custom_id parameter must be unique for each request in a batch.", l.CustomID), line: n}
		case l.Method != http.MethodPost || l.URL != "/v1/chat/completions":
			return &batchFailure{code: "mismatched_endpoint", msg: "The provided URL or method for this request does not match the endpoint of the batch (POST /v1/chat/completions).", line: n}
		case b.model != "" && model.Model != b.model:
			return &batchFailure{code: "mismatched_model", msg: fmt.Sprintf("Every request in a batch must use the same model; line %d uses %q, the batch %q.", n, model.Model, b.model), line: n}
		}
		seen[l.CustomID] = true
		b.model = model.Model
		b.lines = append(b.lines, batchLine{customID: l.CustomID, body: l.Body})
		b.tokens += tokens(len(l.Body))
	}
	switch {
	case sc.Err() != nil:
		return &batchFailure{code: "invalid_file", msg: "The input file could not be read: " + sc.Err().Error()}
	case len(b.lines) == 0:
		return &batchFailure{code: "empty_file", msg: "The batch input file is empty."}
	case len(b.lines) > maxOpenAIBatchLines:
		return &batchFailure{code: "too_many_requests", msg: fmt.Sprintf("The batch input file has %d requests; a batch may hold at most %d.", len(b.lines), maxOpenAIBatchLines)}
	}
	return nil
}

func (s *Server) createAnthropicBatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxAnthropicBatchBody+1))
	if err != nil {
		s.fail(w, apiAnthropic, invalid("could not read the request body: %v", err), nil)
		return
	}
	if len(body) > maxAnthropicBatchBody {
		s.fail(w, apiAnthropic, &apiError{status: 413, kind: errTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", maxAnthropicBatchBody)}, nil)
		return
	}
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if aerr := decodeBody(body, &req); aerr != nil {
		s.fail(w, apiAnthropic, aerr, nil)
		return
	}
	if n := len(req.Requests); n == 0 || n > maxAnthropicBatchLines {
		s.fail(w, apiAnthropic, invalid("requests: a batch holds 1 to %d requests, not %d", maxAnthropicBatchLines, n), nil)
		return
	}
	b := &simBatch{a: apiAnthropic, created: s.now()}
	seen := map[string]bool{}
	for i, rq := range req.Requests {
		if !validCustomID(rq.CustomID) || seen[rq.CustomID] {
			s.fail(w, apiAnthropic, invalid("requests.%d.custom_id: %q must be unique and match ^[a-zA-Z0-9_-]{1,64}$", i, rq.CustomID), nil)
			return
		}
		seen[rq.CustomID] = true
		var model struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(rq.Params, &model)
		b.model = model.Model
		b.lines = append(b.lines, batchLine{customID: rq.CustomID, body: rq.Params})
		b.tokens += tokens(len(rq.Params))
	}
	if !s.enqueue(b) {
		s.fail(w, apiAnthropic, &apiError{status: 429, kind: errRateLimit, scope: "tokens",
			msg: fmt.Sprintf("Number of enqueued batch tokens for %s exceeds the limit of %d; submit a smaller batch or wait for running batches to end.", b.model, s.prof.Batch.MaxEnqueuedTokens)}, nil)
		return
	}
	s.sendJSON(w, apiAnthropic, s.anthropicBatchObject(b))
}

func validCustomID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// enqueue checks the enqueued-token quota and registers b. An OpenAI batch
// over the quota is registered as failed (as OpenAI does); an Anthropic
// one is not registered and enqueue reports false.
func (s *Server) enqueue(b *simBatch) bool {
	s.batches.enqueue.Lock()
	defer s.batches.enqueue.Unlock()
	if limit := s.prof.Batch.MaxEnqueuedTokens; limit > 0 && b.failure == nil {
		running := 0
		s.batches.mu.Lock()
		others := make([]*simBatch, 0, len(s.batches.batches))
		for _, o := range s.batches.batches {
			if o.model == b.model {
				others = append(others, o)
			}
		}
		s.batches.mu.Unlock()
		now := s.now()
		for _, o := range others {
			if o.running(s, now) {
				running += o.tokens
			}
		}
		if running+b.tokens > limit {
			s.c.batchesRejected.Add(1)
			if b.a == apiAnthropic {
				return false
			}
			b.failure = &batchFailure{code: "token_limit_exceeded", msg: fmt.Sprintf(
				"Enqueued token limit reached for %s in organization org-sim. Limit: %d enqueued tokens. Please try submitting a smaller batch or wait for the running batches to complete.", b.model, limit)}
		}
	}
	prefix := "batch_sim"
	if b.a == apiAnthropic {
		prefix = "msgbatch_sim"
	}
	b.id = s.batches.id(prefix)
	s.batches.mu.Lock()
	s.batches.batches[b.id] = b
	s.batches.mu.Unlock()
	s.c.batches.Add(1)
	return true
}

// running reports whether b still holds enqueued tokens at now.
func (b *simBatch) running(s *Server, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.advance(b, now)
	return !b.ended && b.failure == nil
}

// phase is a running batch's OpenAI status by elapsed time.
func (s *Server) phase(b *simBatch, now time.Time) string {
	d, el := s.prof.Batch.Delay, now.Sub(b.created)
	switch {
	case el < d/10:
		return "validating"
	case el < d*9/10:
		return "in_progress"
	}
	return "finalizing"
}

// advance ends b when its time has come; b.mu is held.
func (s *Server) advance(b *simBatch, now time.Time) {
	if b.ended || b.failure != nil {
		return
	}
	if !b.canceledAt.IsZero() {
		// Requests the batch reached before the cancel keep their answers.
		done := len(b.lines)
		if d := s.prof.Batch.Delay; d > 0 {
			done = int(float64(len(b.lines)) * min(1, float64(b.canceledAt.Sub(b.created))/float64(d)))
		}
		s.finish(b, done, b.canceledAt)
		return
	}
	if now.Sub(b.created) >= s.prof.Batch.Delay {
		s.finish(b, len(b.lines), b.created.Add(s.prof.Batch.Delay))
	}
}

// finish answers the first n lines and cancels the rest; b.mu is held.
func (s *Server) finish(b *simBatch, n int, at time.Time) {
	b.results = make([]lineResult, len(b.lines))
	for i, l := range b.lines {
		if i >= n {
			b.results[i] = lineResult{customID: l.customID, outcome: lineCanceled}
			continue
		}
		b.results[i] = s.answerLine(b.a, l, at)
	}
	b.ended, b.endedAt = true, at
	if b.a == apiOpenAI {
		var out, errs bytes.Buffer
		for i := range b.results {
			r := &b.results[i]
			dst := &out
			if r.outcome != lineSucceeded {
				dst = &errs
			}
			_ = marshal(dst, openAIResultLine(b.id, i, r))
		}
		for _, f := range []struct {
			buf *bytes.Buffer
			id  *string
		}{{&out, &b.outputID}, {&errs, &b.errorID}} {
			if f.buf.Len() == 0 {
				continue
			}
			file := &simFile{id: s.batches.id("file-sim"), purpose: "batch_output", filename: b.id + ".jsonl", data: f.buf.Bytes(), created: at}
			*f.id = file.id
			s.batches.mu.Lock()
			s.batches.files[file.id] = file
			s.batches.mu.Unlock()
		}
	}
}

// answerLine answers one request of a batch as the chat route would.
func (s *Server) answerLine(a api, l batchLine, now time.Time) lineResult {
	res := lineResult{customID: l.customID, outcome: lineErrored}
	s.c.batchRequests.Add(1)
	var req *chatRequest
	var aerr *apiError
	if a == apiAnthropic {
		req, aerr = parseAnthropic(l.body)
	} else {
		req, aerr = parseOpenAI(l.body, &s.raws)
	}
	var g *generated
	if aerr == nil {
		// A batch is answered in the background, owned by no caller.
		aerr = s.readMedia(context.Background(), req)
	}
	if aerr == nil {
		g, aerr = s.generate(a, req)
	}
	if aerr != nil {
		res.status, res.body = aerr.httpStatus(a), s.errorJSON(a, aerr)
		return res
	}
	defer s.commitTry(g)
	u := newRNG(mix(g.key, batchSalt), g.try).unit()
	switch bp := s.prof.Batch; {
	case u < bp.Expire:
		s.c.batchExpired.Add(1)
		res.outcome = lineExpired
		return res
	case u < bp.Expire+bp.Fail:
		s.c.batchFailed.Add(1)
		e := &apiError{status: 500, kind: errServer, msg: "The server had an error while processing your request. Sorry about that!"}
		res.status, res.body = 500, s.errorJSON(a, e)
		return res
	}
	if f := g.d.transport; f != numFaults {
		// A transport fault of the chat route fails this line instead.
		s.c.faults[f].Add(1)
		e := map[faultID]*apiError{
			fStatus500: {status: 500, kind: errServer, msg: "The server had an error while processing your request. Sorry about that!"},
			fStatus503: {status: 503, kind: errUnavailable, msg: "The service is temporarily unavailable."},
			fStatus529: {status: 529, kind: errOverloaded, msg: "Overloaded"},
			fTimeout:   {status: 504, kind: errTimeout, msg: "The model did not answer in time."},
			fDrop:      {status: 500, kind: errServer, msg: "The connection to the model was lost."},
		}[f]
		res.status, res.body = e.httpStatus(a), s.errorJSON(a, e)
		return res
	}
	s.countAnswer(a, req, g)
	var buf bytes.Buffer
	body := openAIBody(g.reply(req, now))
	if a == apiAnthropic {
		body = anthropicBody(g.reply(req, now))
	}
	if err := marshal(&buf, body); err != nil {
		e := &apiError{status: 500, kind: errServer, msg: "simulator could not encode its reply: " + err.Error()}
		res.status, res.body = 500, s.errorJSON(a, e)
		return res
	}
	res.outcome, res.status, res.body = lineSucceeded, http.StatusOK, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return res
}

func (s *Server) errorJSON(a api, e *apiError) []byte {
	var buf bytes.Buffer
	_ = marshal(&buf, errorBody(a, e, 0))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Reading batches.

func (s *Server) showBatch(w http.ResponseWriter, a api, id string, cancel bool) {
	b := s.batches.batch(id, a)
	if b == nil {
		s.fail(w, a, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("No such batch: %s", id)}, nil)
		return
	}
	if cancel {
		b.mu.Lock()
		s.advance(b, s.now())
		if b.ended || b.failure != nil {
			b.mu.Unlock()
			s.fail(w, a, invalid("batch %s has ended and cannot be canceled", id), nil)
			return
		}
		b.canceledAt = s.now()
		b.mu.Unlock()
	}
	if a == apiAnthropic {
		s.sendJSON(w, a, s.anthropicBatchObject(b))
		return
	}
	s.sendJSON(w, a, s.openAIBatchObject(b))
}

type openAIBatchObject struct {
	ID               string         `json:"id"`
	Object           string         `json:"object"`
	Endpoint         string         `json:"endpoint"`
	Errors           any            `json:"errors"`
	InputFileID      string         `json:"input_file_id"`
	CompletionWindow string         `json:"completion_window"`
	Status           string         `json:"status"`
	OutputFileID     *string        `json:"output_file_id"`
	ErrorFileID      *string        `json:"error_file_id"`
	CreatedAt        int64          `json:"created_at"`
	ExpiresAt        int64          `json:"expires_at"`
	CompletedAt      *int64         `json:"completed_at"`
	FailedAt         *int64         `json:"failed_at"`
	ExpiredAt        *int64         `json:"expired_at"`
	CancelledAt      *int64         `json:"cancelled_at"`
	RequestCounts    map[string]int `json:"request_counts"`
	Metadata         map[string]any `json:"metadata"`
}

func (s *Server) openAIBatchObject(b *simBatch) *openAIBatchObject {
	now := s.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	// Cancelling shows until the first look after the cancel.
	cancelling := !b.canceledAt.IsZero() && !b.ended
	s.advance(b, now)
	o := &openAIBatchObject{
		ID: b.id, Object: "batch", Endpoint: "/v1/chat/completions", InputFileID: b.inputID, CompletionWindow: "24h",
		CreatedAt: b.created.Unix(), ExpiresAt: b.created.Add(24 * time.Hour).Unix(),
		RequestCounts: map[string]int{"total": len(b.lines), "completed": 0, "failed": 0}, Metadata: map[string]any{},
	}
	at := func(t time.Time) *int64 { u := t.Unix(); return &u }
	switch {
	case b.failure != nil:
		o.Status, o.FailedAt = "failed", at(b.created)
		d := map[string]any{"code": b.failure.code, "message": b.failure.msg, "param": nil, "line": nil}
		if b.failure.line > 0 {
			d["line"] = b.failure.line
		}
		o.Errors = map[string]any{"object": "list", "data": []any{d}}
		o.RequestCounts["total"] = 0
	case cancelling:
		o.Status = "cancelling"
	case !b.ended:
		o.Status = s.phase(b, now)
	default:
		expired, canceled := false, false
		for _, r := range b.results {
			switch r.outcome {
			case lineSucceeded:
				o.RequestCounts["completed"]++
			default:
				o.RequestCounts["failed"]++
			}
			expired = expired || r.outcome == lineExpired
			canceled = canceled || r.outcome == lineCanceled
		}
		switch {
		case !b.canceledAt.IsZero():
			o.Status, o.CancelledAt = "cancelled", at(b.endedAt)
		case expired:
			o.Status, o.ExpiredAt = "expired", at(b.endedAt)
		default:
			o.Status, o.CompletedAt = "completed", at(b.endedAt)
		}
		if b.outputID != "" {
			o.OutputFileID = &b.outputID
		}
		if b.errorID != "" {
			o.ErrorFileID = &b.errorID
		}
	}
	return o
}

func openAIResultLine(batchID string, i int, r *lineResult) any {
	line := map[string]any{"id": fmt.Sprintf("batch_req_%s_%d", batchID, i), "custom_id": r.customID, "response": nil, "error": nil}
	switch r.outcome {
	case lineSucceeded, lineErrored:
		line["response"] = map[string]any{"status_code": r.status, "request_id": fmt.Sprintf("req_%s_%d", batchID, i), "body": json.RawMessage(r.body)}
	case lineExpired:
		line["error"] = map[string]any{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}
	case lineCanceled:
		line["error"] = map[string]any{"code": "batch_cancelled", "message": "This request was not executed because the batch was cancelled."}
	}
	return line
}

type anthropicBatchObject struct {
	ID                string         `json:"id"`
	Type              string         `json:"type"`
	ProcessingStatus  string         `json:"processing_status"`
	RequestCounts     map[string]int `json:"request_counts"`
	EndedAt           *string        `json:"ended_at"`
	CreatedAt         string         `json:"created_at"`
	ExpiresAt         string         `json:"expires_at"`
	ArchivedAt        *string        `json:"archived_at"`
	CancelInitiatedAt *string        `json:"cancel_initiated_at"`
	ResultsURL        *string        `json:"results_url"`
}

func (s *Server) anthropicBatchObject(b *simBatch) *anthropicBatchObject {
	now := s.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	canceling := !b.canceledAt.IsZero() && !b.ended
	s.advance(b, now)
	ts := func(t time.Time) *string { v := t.UTC().Format(time.RFC3339Nano); return &v }
	o := &anthropicBatchObject{
		ID: b.id, Type: "message_batch", ProcessingStatus: "in_progress",
		RequestCounts: map[string]int{"processing": len(b.lines), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
		CreatedAt:     *ts(b.created), ExpiresAt: *ts(b.created.Add(24 * time.Hour)),
	}
	if !b.canceledAt.IsZero() {
		o.CancelInitiatedAt = ts(b.canceledAt)
	}
	switch {
	case canceling:
		o.ProcessingStatus = "canceling"
	case b.ended:
		o.ProcessingStatus, o.EndedAt = "ended", ts(b.endedAt)
		o.RequestCounts["processing"] = 0
		for _, r := range b.results {
			o.RequestCounts[[...]string{"succeeded", "errored", "expired", "canceled"}[r.outcome]]++
		}
		u := "/v1/messages/batches/" + b.id + "/results"
		o.ResultsURL = &u
	}
	return o
}

func (s *Server) anthropicResults(w http.ResponseWriter, id string) {
	b := s.batches.batch(id, apiAnthropic)
	if b == nil {
		s.fail(w, apiAnthropic, &apiError{status: 404, kind: errNotFound, msg: fmt.Sprintf("No such batch: %s", id)}, nil)
		return
	}
	b.mu.Lock()
	s.advance(b, s.now())
	if !b.ended {
		b.mu.Unlock()
		s.fail(w, apiAnthropic, invalid("batch %s is still in progress; its results are available once it has ended", id), nil)
		return
	}
	var buf bytes.Buffer
	for _, r := range b.results {
		res := map[string]any{"type": [...]string{"succeeded", "errored", "expired", "canceled"}[r.outcome]}
		switch r.outcome {
		case lineSucceeded:
			res["message"] = json.RawMessage(r.body)
		case lineErrored:
			res["error"] = json.RawMessage(r.body)
		}
		_ = marshal(&buf, map[string]any{"custom_id": r.customID, "result": res})
	}
	b.mu.Unlock()
	s.send(w, http.StatusOK, "application/binary", buf.Bytes(), nil, s.now())
}
