package jobs

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestAppendEnvelopeIsJSONMarshal: the hand-written encoder writes the
// envelope exactly as json.Marshal does, so the wire format workers decode
// cannot drift from the struct's tags.
func TestAppendEnvelopeIsJSONMarshal(t *testing.T) {
	t.Parallel()
	three, half := 3, 0.5
	base := func() Envelope {
		return Envelope{V: 1, JobID: "j1", DocumentID: "d1", DocumentHash: "h", Text: "plain text",
			Schema: SchemaRef{Name: "invoice", Version: 2, Fingerprint: "fp"}, Provider: "openai:gpt-4o-mini", Model: "gpt-4o-mini",
			Pool: "openai_gpt-4o-mini", SubmittedAt: time.Date(2026, 11, 26, 6, 0, 0, 123456789, time.UTC)}
	}
	cases := map[string]func(*Envelope){
		"plain":            func(*Envelope) {},
		"run and resubmit": func(e *Envelope) { e.Run, e.Resubmission = "nightly", "dlq:12" },
		"escapes":          func(e *Envelope) { e.Text = "a\"b\\c\n\r\t\b\f\x00\x1f<tag>&amp; \u2028\u2029 é 😀" },
		"invalid utf-8":    func(e *Envelope) { e.Text, e.DocumentID = "bad \xff\xfe end \xe2\x82", "id\xc3" },
		"no text, a ref":   func(e *Envelope) { e.Text, e.TextRef = "", &ObjectRef{Bucket: "B", Name: "n<>", Size: 1 << 40} },
		"metadata":         func(e *Envelope) { e.Metadata = json.RawMessage(`{ "a" : "<b>&" , "n": [1, 2] }`) },
		"original, pages": func(e *Envelope) {
			e.Original, e.OriginalHash, e.Reader = &ObjectRef{Bucket: "B", Name: "o", Size: 7}, "o", "pdf/3"
			e.Pages, e.Scanned = []Page{{N: 1, Start: 0, End: 5, Label: "iv"}, {N: 2, Start: 5, End: 9}}, []int{2}
		},
		"pictures": func(e *Envelope) {
			e.Original, e.Scanned, e.Pictures = &ObjectRef{Bucket: "B", Name: "o", Size: 7}, []int{1}, &ObjectRef{Bucket: "B", Name: "p", Size: 70}
		},
		"options": func(e *Envelope) {
			e.Options = Options{MaxReasks: &three, Temperature: &half, Mode: "json", Chunking: "off"}
		},
		"zero options set": func(e *Envelope) { zero := 0; e.Options = Options{MaxReasks: &zero} },
		"zero time":        func(e *Envelope) { e.SubmittedAt = time.Time{} },
		"local time":       func(e *Envelope) { e.SubmittedAt = e.SubmittedAt.In(time.FixedZone("X", 5*3600+1800)) },
		"empty strings":    func(e *Envelope) { e.JobID, e.DocumentID, e.Provider, e.Schema = "", "", "", SchemaRef{} },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := base()
			edit(&env)
			want, werr := json.Marshal(&env)
			got, gerr := appendEnvelope(nil, &env)
			if (werr != nil) != (gerr != nil) || (werr == nil && !bytes.Equal(got, want)) {
				t.Errorf("got  %s (%v)\nwant %s (%v)", got, gerr, want, werr)
			}
		})
	}
	t.Run("bad metadata", func(t *testing.T) {
		env := base()
		env.Metadata = json.RawMessage(`{"a":`)
		if _, err := appendEnvelope(nil, &env); err == nil {
			t.Error("invalid metadata encoded without an error")
		}
	})
	t.Run("random strings", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		alphabet := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\x01", "\x7f", "é", "\u2028", "\u2029", "😀", "\xff", "\xe2\x80", "\ufffd"}
		for range 2000 {
			var b strings.Builder
			for range r.IntN(40) {
				b.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			env := base()
			env.Text, env.DocumentID = b.String(), b.String()
			want, _ := json.Marshal(&env)
			got, _ := appendEnvelope(nil, &env)
			if !bytes.Equal(got, want) {
				t.Fatalf("text %q:\ngot  %s\nwant %s", env.Text, got, want)
			}
		}
	})
}
