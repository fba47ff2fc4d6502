package jobs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// envelopesForDecode are bodies as Publish writes them (json.Marshal of an
// Envelope), from the smallest to every field set.
func envelopesForDecode() []Envelope {
	at := time.Date(2026, 11, 26, 6, 30, 1, 123456789, time.UTC)
	return []Envelope{
		{V: 1, JobID: "j1", DocumentID: "d1", DocumentHash: "h", Text: "hello", Schema: SchemaRef{Name: "s", Version: 1, Fingerprint: "fp"}, Provider: "sim:clean", Model: "m", Pool: "p", SubmittedAt: at},
		{V: 1, JobID: "j2", Run: "run-1", DocumentID: "dé 1", DocumentHash: "h", Text: "line 1\nline \"2\"\t<b>&amp;</b> \u2028 é 😀 \x01 \\ /",
			Metadata: json.RawMessage(`{"a": [1, 2.5, "x\"y", {"b": null}], "c": true}`),
			Original: &ObjectRef{Bucket: "b", Name: "n", Size: 1 << 40}, OriginalHash: "oh", Reader: "pdf/3",
			Pages: []Page{{N: 1, Start: 0, End: 3, Label: "iv"}, {N: 2, Start: 3, End: 6}}, Scanned: []int{2},
			Pictures: &ObjectRef{Bucket: "b", Name: "pics", Size: 12},
			Schema:   SchemaRef{Name: "invoice", Version: 12, Fingerprint: "abc"}, Provider: "openai:gpt", Model: "gpt", Pool: "openai",
			Options:     Options{MaxReasks: ptr(0), Mode: "tools", MaxTokens: ptr(4096), TokenBudget: ptr(-1), Temperature: ptr(0.25), RepairPolicy: "coerce", Chunking: "4000", Input: "native"},
			SubmittedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 3600)), Resubmission: "dlq:7"},
		{V: 1, JobID: "j3", DocumentID: "d3", TextRef: &ObjectRef{Bucket: "EXTRACTQ_DOCS", Name: "x", Size: 10}, Metadata: json.RawMessage(`"s"`),
			Pages: []Page{}, Scanned: []int{}, Options: Options{Temperature: ptr(1e-300)}},
	}
}

// TestDecodeFastMatchesJSON checks that the fast path takes what Publish
// writes and reads it as encoding/json does, and leaves everything
// unusual to encoding/json.
func TestDecodeFastMatchesJSON(t *testing.T) {
	t.Parallel()
	for i, env := range envelopesForDecode() {
		body, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		var want, got Envelope
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatal(err)
		}
		if !decodeFast(body, &got) {
			t.Errorf("envelope %d: the fast path refused what Publish writes:\n%s", i, body)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("envelope %d: fast path read\n%+v\nencoding/json\n%+v", i, got, want)
		}
	}
	for _, body := range []string{
		`{"v":1,"job_id":"j","JOB_ID":"k"}`,          // keys match case-insensitively there
		`{"v":1,"job_id":"j","job_id":"k"}`,          // the last wins there
		`{"v":1,"job_id":null}`,                      // null leaves the field
		`{"v":1,"metadata":null}`,                    // null is a RawMessage's value
		`{"v":1,"unknown":1}`,                        // ignored there
		`{"v":1.0}`,                                  // not an int
		`{"v":1,"text":"\ud800"}`,                    // a lone surrogate becomes U+FFFD
		"{\"v\":1,\"text\":\"\xff\"}",                // invalid UTF-8 becomes U+FFFD
		`{"v":1,"schema":{"name":"s","extra":true}}`, // ignored there
		`{"v":1,"pages":[{"n":1,"n":2}]}`,
		`{"v":1,}`,
		`{"v":1} x`,
		`{"v":1,"metadata":{"a":]}`,
		`{"v":1,"submitted_at":"2026-01-02T03:04:05\u005a"}`,
	} {
		var e Envelope
		if decodeFast([]byte(body), &e) {
			t.Errorf("fast path took %s; encoding/json must read it", body)
		}
	}
}

// FuzzDecodeEnvelope checks that whenever the fast path takes a body,
// encoding/json takes it too and reads the same envelope.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, env := range envelopesForDecode() {
		body, _ := json.Marshal(env)
		f.Add(body)
	}
	f.Add([]byte(`{"v":1,"text":"a\ud83d\ude00b\u00e9","scanned":[1,-0,3]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast Envelope
		if !decodeFast(body, &fast) {
			return
		}
		var want Envelope
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("fast path took %q, encoding/json refused it: %v", body, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q: fast path read\n%+v\nencoding/json\n%+v", body, fast, want)
		}
	})
}

// BenchmarkDecodeEnvelope compares the fast path with encoding/json on a
// job as the fleet bench submits it.
func BenchmarkDecodeEnvelope(b *testing.B) {
	env := envelopesForDecode()[0]
	env.Text = strings.Repeat("Invoice INV-2291\nTotal: 1,204.50 EUR <due 2026-12-01>\n", 8)
	body, _ := json.Marshal(env)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeEnvelope(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Envelope
			if err := json.Unmarshal(body, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
