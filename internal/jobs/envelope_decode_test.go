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
// Envelope), from the smallest to every field set, then long ones.
func envelopesForDecode() []Envelope {
	at := time.Date(2026, 11, 26, 6, 30, 1, 123456789, time.UTC)
	long := strings.Repeat("x", 300)
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
		// Short-string fields longer than the decode's shared buffer, plain
		// and escaped, and more of them than it keeps.
		{V: 1, JobID: long, DocumentID: "d", Text: "t", Provider: "p"},
		{V: 1, JobID: "j", DocumentID: long + `"\` + long, Text: "t", Provider: "p", Model: strings.Repeat("é", 100)},
		{V: 1, JobID: strings.Repeat("j", 250), DocumentID: `a"b`, Text: "t", Provider: strings.Repeat("p", 10), Pool: "q",
			Original: &ObjectRef{Bucket: "b", Name: "n"}, TextRef: &ObjectRef{Bucket: "b2", Name: "n2"}, Pictures: &ObjectRef{Bucket: "b3", Name: "n3"},
			Options: Options{Mode: "m", RepairPolicy: "r", Chunking: "c", Input: "i"}, Run: "r", DocumentHash: "h", OriginalHash: "o", Reader: "rd",
			Schema: SchemaRef{Name: "s", Fingerprint: "f"}, Model: "m", Resubmission: "x"},
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
	// As the fleet writes a job: ids, hashes and the fingerprint at their
	// real lengths (most of the fields above are one or two bytes).
	fleet := fleetEnvelope()
	fleet.Text = env.Text
	fleetBody, _ := json.Marshal(fleet)
	b.Run("fast-fleet-ids", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeEnvelope(fleetBody); err != nil {
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

// TestDecodeEnvelopeShortStringsShareAllocation checks that the
// envelope's short strings (ids, names, options) cost one allocation
// between them: the fleet's envelope decoded in 4 (the envelope, its
// text, the short strings, the options' temperature), where each string
// was one of its own and the submission time made one only to check it
// had no escapes.
func TestDecodeEnvelopeShortStringsShareAllocation(t *testing.T) {
	body, err := json.Marshal(fleetEnvelope())
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := DecodeEnvelope(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Errorf("DecodeEnvelope made %.0f allocations, want at most 4", allocs)
	}
}

// fleetEnvelope is a job as the fleet submits it: ids, hashes and the
// schema's fingerprint at their real lengths.
func fleetEnvelope() Envelope {
	env := envelopesForDecode()[0]
	env.JobID, env.DocumentID = "01JQ3Z8Y7X6W5V4T3S2R1Q0P9N", "invoices/2026/0001.pdf"
	env.DocumentHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	env.Schema = SchemaRef{Name: "invoice", Version: 3, Fingerprint: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
	env.Provider, env.Model, env.Pool = "openai:gpt-4o-mini", "gpt-4o-mini", "openai"
	env.Run, env.Options.Mode, env.Options.Temperature = "nightly", "tools", ptr(0.0)
	return env
}
