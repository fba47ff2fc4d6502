package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/extractqtest"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/jobs"
	"github.com/extractq/extractq/internal/jobs/jobstest"
)

func setup(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := jobstest.Connect(t, jobstest.Server(t))
	if err := jobs.EnsureStreams(context.Background(), js); err != nil {
		t.Fatalf("EnsureStreams: %v", err)
	}
	return js
}

func TestEnsureStreamsIdempotentAndConfigured(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	if err := jobs.EnsureStreams(ctx, js); err != nil {
		t.Fatalf("second EnsureStreams: %v", err)
	}
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		subject   string
	}{
		{jobs.JobsStream, jetstream.WorkQueuePolicy, "extractq.jobs.>"},
		{jobs.DLQStream, jetstream.LimitsPolicy, "extractq.dlq.>"},
	} {
		s, err := js.Stream(ctx, tc.name)
		if err != nil {
			t.Fatalf("stream %s: %v", tc.name, err)
		}
		cfg := s.CachedInfo().Config
		if cfg.Retention != tc.retention || cfg.Storage != jetstream.FileStorage || len(cfg.Subjects) != 1 || cfg.Subjects[0] != tc.subject {
			t.Errorf("%s: retention %v storage %v subjects %v", tc.name, cfg.Retention, cfg.Storage, cfg.Subjects)
		}
	}
}

func TestEnsureStreamsConflicts(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		existing jetstream.StreamConfig
		wantErr  string // "" means updated in place
		check    func(jetstream.StreamConfig) bool
	}{
		{
			name:     "retention cannot change",
			existing: jetstream.StreamConfig{Name: jobs.JobsStream, Subjects: []string{"extractq.jobs.>"}, Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage},
			wantErr:  "retention is Limits, want WorkQueue",
		},
		{
			name:     "duplicate window and subjects are updated",
			existing: jetstream.StreamConfig{Name: jobs.JobsStream, Subjects: []string{"extractq.jobs.a"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: time.Minute},
			check: func(c jetstream.StreamConfig) bool {
				return c.Duplicates == 24*time.Hour && len(c.Subjects) == 1 && c.Subjects[0] == "extractq.jobs.>"
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, js := jobstest.Connect(t, jobstest.Server(t))
			if _, err := js.CreateStream(ctx, tc.existing); err != nil {
				t.Fatal(err)
			}
			err := jobs.EnsureStreams(ctx, js)
			if tc.wantErr != "" {
				var ce *jobs.ConfigConflictError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want a ConfigConflictError mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, _ := js.Stream(ctx, tc.existing.Name)
			if !tc.check(s.CachedInfo().Config) {
				t.Errorf("not updated: %+v", s.CachedInfo().Config)
			}
		})
	}
}

func envelope(doc, model string) *jobs.Envelope {
	return &jobs.Envelope{
		DocumentID: doc, Run: "r1", Provider: "sim:" + model, Model: model, Pool: "sim_" + model,
		Schema:      jobs.SchemaRef{Name: "invoice", Version: 1, Fingerprint: "sha256:abc"},
		SubmittedAt: time.Now().UTC(),
	}
}

func TestPublishDeduplicates(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	p := jobs.NewPublisher(js)
	tests := []struct {
		name, doc, text, model, resub string
		wantDup                       bool
	}{
		{"first", "d1", "hello", "m1", "", false},
		{"same document again", "d1", "hello", "m1", "", true},
		{"same text under another id", "d1-copy", "hello", "m1", "", false},
		{"new text under the same id", "d1", "hello again", "m1", "", false},
		{"other model", "d1", "hello", "m2", "", false},
		{"other text", "d2", "world", "m1", "", false},
		{"resubmission", "d1", "hello", "m1", "dlq:7", false},
		{"resubmission again", "d1", "hello", "m1", "dlq:7", true},
	}
	for _, tc := range tests {
		env := envelope(tc.doc, tc.model)
		env.Resubmission = tc.resub
		ack, err := p.Publish(ctx, env, tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if ack.Duplicate != tc.wantDup {
			t.Errorf("%s: duplicate = %v, want %v", tc.name, ack.Duplicate, tc.wantDup)
		}
	}
}

func TestLargeDocumentsGoToObjectStore(t *testing.T) {
	ctx := context.Background()
	js := setup(t)
	p := jobs.NewPublisher(js, jobs.WithInlineLimit(1024), jobs.WithMaxDocument(1<<20))
	docs := jobs.NewDocuments(js)
	tests := []struct {
		name    string
		size    int
		wantRef bool
		wantErr error
	}{
		{"inline", 1024, false, nil},
		{"object store", 4096, true, nil},
		{"too large", 1<<20 + 1, false, jobs.ErrDocumentTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Repeat("x", tc.size-1) + tc.name[:1]
			msg, err := p.Message(ctx, envelope(tc.name, "m"), text)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			env, err := jobs.DecodeEnvelope(msg.Data)
			if err != nil {
				t.Fatal(err)
			}
			if (env.TextRef != nil) != tc.wantRef || (len(msg.Data) < tc.size) != tc.wantRef {
				t.Fatalf("text_ref = %v with a %d-byte message", env.TextRef, len(msg.Data))
			}
			got, err := docs.Text(ctx, env)
			if err != nil || got != text {
				t.Fatalf("Text: %d bytes, %v; want the %d bytes submitted", len(got), err, len(text))
			}
		})
	}
}

func TestSchemas(t *testing.T) {
	ctx := context.Background()
	s := jobs.NewSchemas(setup(t))
	want := jobs.SchemaBody{Name: "invoice", Version: 2, Fingerprint: "sha256:00ff", Body: []byte(`{"type":"object"}`)}
	if err := s.Put(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, want.Fingerprint)
	if err != nil || got.Name != want.Name || got.Version != 2 || string(got.Body) != string(want.Body) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, "sha256:missing"); !errors.Is(err, jobs.ErrSchemaNotFound) {
		t.Fatalf("missing schema: err = %v, want ErrSchemaNotFound", err)
	}
}

func TestDLQ(t *testing.T) {
	ctx := context.Background()
	dlq := jobs.NewDLQ(setup(t))
	var seqs []uint64
	for i, run := range []string{"a", "b", "a"} {
		env := envelope("doc"+string(rune('0'+i)), "m")
		env.Run = run
		env.Seal("text" + run + string(rune('0'+i)))
		dl := &jobs.DeadLetter{Job: *env, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid", Attempts: []llm.Attempt{{N: 1, Raw: "{"}}}}
		seq, err := dlq.Publish(ctx, dl)
		if err != nil {
			t.Fatal(err)
		}
		again, err := dlq.Publish(ctx, dl)
		if err != nil || again != seq {
			t.Fatalf("republishing the same job's letter: seq %d, %v; want %d", again, err, seq)
		}
		seqs = append(seqs, seq)
	}
	count := func(f jobs.ListFilter) int {
		n := 0
		if err := dlq.List(ctx, f, func(l *jobs.Letter) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(jobs.ListFilter{}); n != 3 {
		t.Fatalf("list all = %d, want 3", n)
	}
	if n := count(jobs.ListFilter{Run: "a"}); n != 2 {
		t.Fatalf("list run a = %d, want 2", n)
	}
	l, err := dlq.Get(ctx, seqs[1])
	if err != nil || l.Job.Run != "b" || len(l.Attempts) != 1 || l.Attempts[0].Raw != "{" || l.Reason != "still invalid" {
		t.Fatalf("Get = %+v, %v", l, err)
	}
	for range 2 { // deleting twice is fine
		if err := dlq.Delete(ctx, seqs[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dlq.Get(ctx, seqs[1]); !errors.Is(err, jobs.ErrLetterNotFound) {
		t.Fatalf("Get deleted: %v, want ErrLetterNotFound", err)
	}
	if n := count(jobs.ListFilter{}); n != 2 {
		t.Fatalf("list after delete = %d, want 2", n)
	}
}

func TestDecodeEnvelope(t *testing.T) {
	good := envelope("d", "m")
	good.Seal("text")
	good.Text = "text"
	tests := []struct {
		name   string
		mutate func(*jobs.Envelope)
		ok     bool
	}{
		{"valid", func(*jobs.Envelope) {}, true},
		{"newer version", func(e *jobs.Envelope) { e.V = jobs.EnvelopeVersion + 1 }, false},
		{"no document", func(e *jobs.Envelope) { e.DocumentID = "" }, false},
		{"no text", func(e *jobs.Envelope) { e.Text = "" }, false},
		{"no fingerprint", func(e *jobs.Envelope) { e.Schema.Fingerprint = "" }, false},
		{"no provider", func(e *jobs.Envelope) { e.Provider = "" }, false},
	}
	for _, tc := range tests {
		e := *good
		tc.mutate(&e)
		data, _ := json.Marshal(&e)
		_, err := jobs.DecodeEnvelope(data)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, jobs.ErrEnvelope)) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
	if _, err := jobs.DecodeEnvelope([]byte("{")); !errors.Is(err, jobs.ErrEnvelope) {
		t.Errorf("bad JSON: err = %v", err)
	}
}

func TestConsumerSettings(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*jobs.ConsumerSettings)
		wantErr string
	}{
		{"defaults", func(*jobs.ConsumerSettings) {}, ""},
		{"short ack wait", func(s *jobs.ConsumerSettings) { s.AckWait = time.Millisecond }, "ack_wait"},
		{"no deliveries", func(s *jobs.ConsumerSettings) { s.MaxDeliver = 0 }, "max_deliver"},
		{"backoff too long", func(s *jobs.ConsumerSettings) { s.MaxDeliver = 2 }, "backoff"},
	}
	for _, tc := range tests {
		s := jobs.DefaultConsumerSettings()
		tc.mutate(&s)
		err := s.Validate()
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
	if got := jobs.DefaultConsumerSettings().ProgressInterval(); got != 10*time.Second {
		t.Errorf("progress interval = %s, want 10s", got)
	}
}

func TestSupportsTermReason(t *testing.T) {
	for v, want := range map[string]bool{"2.9.10": false, "2.10.3": false, "2.10.4": true, "2.11.0": true, "3.0.0": true, "": false} {
		if got := jobs.SupportsTermReason(v); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

func TestPoolNames(t *testing.T) {
	for in, want := range map[string]string{"openai:gpt-4o-mini": "openai_gpt-4o-mini", "ollama:llama3.1:8b": "ollama_llama3_1_8b", "": "default"} {
		if got := jobs.PoolFor(in); got != want || jobs.ValidatePool(got) != nil {
			t.Errorf("PoolFor(%q) = %q, want %q", in, got, want)
		}
	}
	if jobs.ValidatePool("a.b") == nil || jobs.ValidatePool("") == nil {
		t.Error("ValidatePool accepted a name with a dot or an empty name")
	}
}

// TestDeadLettersFitMaxPayload: a letter over the server's max payload (8
// MiB here) was refused, and its job never became final. Raw answers are
// capped per attempt, keeping head and tail; a letter still too large
// loses its inline text, then its attempts, then (last) its metadata, and
// says so.
func TestDeadLettersFitMaxPayload(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dlq := jobs.NewDLQ(setup(t))
	huge := "HEAD" + strings.Repeat("x", 20<<20) + "TAIL" // a 20 MB answer
	many := make([]llm.Attempt, 600)                      // 600 capped answers still exceed 8 MiB
	for i := range many {
		many[i] = llm.Attempt{N: i + 1, Raw: strings.Repeat("y", 64<<10)}
	}
	meta := json.RawMessage(`{"customer":"ACME"}`)
	hugeMeta := json.RawMessage(`{"notes":"` + strings.Repeat("m", 9<<20) + `"}`)
	tests := []struct {
		name        string
		text        string
		meta        json.RawMessage
		attempts    []llm.Attempt
		wantTrimmed []string
		wantMeta    bool // the letter keeps the metadata
		wantRaw     bool // the letter keeps the attempts, capped
	}{
		{"small letter untouched", "text", meta, []llm.Attempt{{N: 1, Raw: "{"}}, nil, true, true},
		{"20 MB answer", "text", meta, []llm.Attempt{{N: 1, Raw: huge, Value: json.RawMessage(`[` + strings.Repeat(`1,`, 20000) + `1]`)}},
			[]string{"1 raw answer cut", "1 value over", "extractq history doc-20"}, true, true},
		{"64 MiB inline document", strings.Repeat("d", 64<<20), meta, []llm.Attempt{{N: 1, Raw: "{"}},
			[]string{"inline document text left out"}, true, true},
		{"9 MiB metadata", "text", hugeMeta, []llm.Attempt{{N: 1, Raw: "{"}},
			[]string{"inline document text left out", "minimal letter: 1 attempt left out", "metadata left out"}, false, false},
		{"too many attempts", "text", meta, many, []string{"600 raw answers cut", "minimal letter: 600 attempts left out", "job "}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := envelope("doc-"+strings.Fields(tc.name)[0], "m")
			env.Resubmission = tc.name // a job id per case: letters are deduplicated by it
			env.Seal(tc.text)
			env.Text, env.Metadata = tc.text, tc.meta
			failed := &jobs.ChunkFailure{Index: 2, Of: 5, Start: 100, End: 150, Reason: "no JSON"}
			dl := &jobs.DeadLetter{Job: *env, Deliveries: 1, Result: llm.Result{Outcome: llm.OutcomeExhausted, Reason: "still invalid", Attempts: tc.attempts},
				ChunkFailure: failed}
			seq, err := dlq.Publish(ctx, dl)
			if err != nil {
				t.Fatalf("publish: %v", err)
			}
			if len(dl.Attempts) != len(tc.attempts) || dl.Trimmed != "" || dl.Job.Text != tc.text {
				t.Fatal("Publish changed the caller's letter")
			}
			l, err := dlq.Get(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.wantTrimmed {
				if !strings.Contains(l.Trimmed, w) {
					t.Errorf("trimmed = %q, want it to say %q", l.Trimmed, w)
				}
			}
			if got := len(l.Job.Metadata) > 0; got != tc.wantMeta || got && string(l.Job.Metadata) != string(tc.meta) {
				t.Errorf("letter's metadata is %d bytes, want it kept %v", len(l.Job.Metadata), tc.wantMeta)
			}
			if len(tc.wantTrimmed) == 0 && l.Trimmed != "" {
				t.Errorf("trimmed = %q for a letter that fits", l.Trimmed)
			}
			if l.Job.JobID != env.JobID || l.Reason != "still invalid" || l.Outcome != llm.OutcomeExhausted {
				t.Errorf("letter lost the job or its outcome: %+v", l.Job)
			}
			if l.ChunkFailure == nil || *l.ChunkFailure != *failed {
				t.Errorf("letter's failed chunk = %+v, want %+v: even a minimal letter names it", l.ChunkFailure, failed)
			}
			if got := len(l.Attempts) > 0; got != tc.wantRaw {
				t.Fatalf("letter has %d attempts, want attempts %v", len(l.Attempts), tc.wantRaw)
			}
			for _, a := range l.Attempts {
				if len(a.Raw) > jobs.LetterRawCap+200 {
					t.Errorf("attempt %d raw is %d bytes, over the cap", a.N, len(a.Raw))
				}
			}
			if tc.name == "20 MB answer" {
				raw := l.Attempts[0].Raw
				if !strings.HasPrefix(raw, "HEAD") || !strings.HasSuffix(raw, "TAIL") || !strings.Contains(raw, "bytes of this answer cut") || l.Attempts[0].Value != nil {
					t.Errorf("capped answer lost its head, tail or note: %.80q … %.80q", raw, raw[max(0, len(raw)-80):])
				}
			}
		})
	}
}

func TestChunkFailureOf(t *testing.T) {
	t.Parallel()
	chunks := []llm.Span{{Index: 0, Start: 0, End: 500}, {Index: 1, Start: 450, End: 1000}, {Index: 2, Start: 950, End: 1200}}
	tests := []struct {
		name string
		res  *llm.Result
		want *jobs.ChunkFailure
	}{
		{"not chunked", &llm.Result{Outcome: llm.OutcomeExhausted, Reason: "4 attempts; still invalid"}, nil},
		{"chunked, merged value invalid", &llm.Result{Outcome: llm.OutcomeExhausted, Chunks: chunks, Reason: "the answers of 3 chunks merged into a value that is not valid"}, nil},
		{"a part failed", &llm.Result{Outcome: llm.OutcomeExhausted, Chunks: chunks, FailedChunk: &chunks[1],
			Reason: "chunk 2 of 3 (characters 450-1000) failed: 4 attempts; the last failed at /total: want number"},
			&jobs.ChunkFailure{Index: 1, Of: 3, Start: 450, End: 1000, Reason: "4 attempts; the last failed at /total: want number"}},
		{"after the worker's prefix", &llm.Result{Outcome: llm.OutcomeTransport, Chunks: chunks, FailedChunk: &chunks[2],
			Reason: "last delivery (3 of 3) failed: chunk 3 of 3 (characters 950-1200) failed: HTTP 503"},
			&jobs.ChunkFailure{Index: 2, Of: 3, Start: 950, End: 1200, Reason: "HTTP 503"}},
		{"a reason in another form is kept whole", &llm.Result{Outcome: llm.OutcomeFatal, Chunks: chunks, FailedChunk: &chunks[0], Reason: "HTTP 400"},
			&jobs.ChunkFailure{Index: 0, Of: 3, Start: 0, End: 500, Reason: "HTTP 400"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := jobs.ChunkFailureOf(tc.res)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("ChunkFailureOf = %+v, want %+v", got, tc.want)
			}
			if got != nil && !strings.HasPrefix(got.String(), fmt.Sprintf("chunk %d of %d (characters %d-%d): ", tc.want.Index+1, tc.want.Of, tc.want.Start, tc.want.End)) {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

// TestEnvelopeChunking: a job's chunking travels in the envelope under
// options.chunking and is absent when not set, and an envelope written
// before the field existed (version 1, no chunking) decodes as auto.
func TestEnvelopeChunking(t *testing.T) {
	t.Parallel()
	sealed := func(o jobs.Options) *jobs.Envelope {
		e := envelope("d", "m")
		e.Options = o
		e.Seal("text")
		e.Text = "text"
		return e
	}
	tests := []struct {
		name     string
		env      *jobs.Envelope
		json     string // the body, when not env marshalled
		inJSON   string // what the body must hold, "" for nothing
		chunking string
	}{
		{name: "with a chunk size", env: sealed(jobs.Options{Chunking: "300"}), inJSON: `"options":{"chunking":"300"}`, chunking: "300"},
		{name: "off", env: sealed(jobs.Options{MaxReasks: new(2), Chunking: "off"}), inJSON: `"options":{"max_reasks":2,"chunking":"off"}`, chunking: "off"},
		{name: "without", env: sealed(jobs.Options{MaxReasks: new(2)}), inJSON: `"options":{"max_reasks":2}`},
		{name: "no options at all", env: sealed(jobs.Options{})},
		{name: "written before the field", json: `{"v":1,"job_id":"j1","document_id":"d","document_hash":"h","text":"text",` +
			`"schema":{"name":"invoice","version":1,"fingerprint":"sha256:abc"},"provider":"sim:m","model":"m","pool":"sim_m",` +
			`"options":{"max_reasks":2,"mode":"json"},"submitted_at":"2026-01-02T03:04:05Z"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := []byte(tc.json)
			if tc.env != nil {
				var err error
				if data, err = json.Marshal(tc.env); err != nil {
					t.Fatal(err)
				}
			}
			if tc.inJSON != "" && !strings.Contains(string(data), tc.inJSON) {
				t.Errorf("body %s does not hold %s", data, tc.inJSON)
			}
			if tc.chunking == "" && strings.Contains(string(data), "chunking") {
				t.Errorf("body %s names chunking though the job has none", data)
			}
			got, err := jobs.DecodeEnvelope(data)
			if err != nil {
				t.Fatalf("decode %s: %v", data, err)
			}
			if got.V != jobs.EnvelopeVersion || got.Options.Chunking != tc.chunking {
				t.Errorf("decoded version %d chunking %q, want %d and %q", got.V, got.Options.Chunking, jobs.EnvelopeVersion, tc.chunking)
			}
			if tc.env != nil && !reflect.DeepEqual(got.Options, tc.env.Options) {
				t.Errorf("options after the round trip %+v, want %+v", got.Options, tc.env.Options)
			}
		})
	}
}

// TestOptionsChunking: ExtractOptions hands the job's chunking to the
// library: a chunk size splits a long document into parts (one call each),
// no chunking (auto, with a model whose window is unknown) and off send it
// whole, and a value the library does not know is a configuration error.
func TestOptionsChunking(t *testing.T) {
	t.Parallel()
	s, err := schema.Compile([]byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Repeat("The quick brown fox jumps over the lazy dog.\n\n", 300) // about 3,000 tokens
	tests := []struct {
		chunking  string
		minCalls  int
		maxCalls  int
		configErr bool
	}{
		{chunking: "", minCalls: 1, maxCalls: 1},
		{chunking: "off", minCalls: 1, maxCalls: 1},
		{chunking: "300", minCalls: 8, maxCalls: 30},
		{chunking: "banana", configErr: true},
	}
	for _, tc := range tests {
		t.Run("chunking="+tc.chunking, func(t *testing.T) {
			t.Parallel()
			p := extractqtest.New(nil, extractqtest.WithResponder(func(int, llm.Request) extractqtest.Reply {
				return extractqtest.Text(`{"n": 1}`)
			}))
			x, err := extractq.New(append(jobs.Options{Chunking: tc.chunking}.ExtractOptions(), extractq.WithProvider(p))...)
			if tc.configErr {
				if !errors.Is(err, extractq.ErrConfig) {
					t.Fatalf("New with chunking %q: %v, want ErrConfig", tc.chunking, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.Extract(t.Context(), doc, s); err != nil {
				t.Fatal(err)
			}
			if n := p.Calls(); n < tc.minCalls || n > tc.maxCalls {
				t.Errorf("chunking %q: %d calls, want %d..%d", tc.chunking, n, tc.minCalls, tc.maxCalls)
			}
		})
	}
}
