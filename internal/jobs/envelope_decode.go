package jobs

import (
	"encoding/json"

	"github.com/extractq/extractq/internal/jsonx"
)

// decodeFast reads a job body as encoding/json would into a zero e, without
// reflection: envelope decoding was a tenth of the worker's NATS share of
// CPU per job. It handles the envelopes Publish writes: every field known,
// each once, no nulls, numbers as the fields' types take them. Anything
// else (an unknown or misspelt key, a duplicate, a null, a lone surrogate,
// invalid UTF-8, bad JSON) makes it return false, and DecodeEnvelope reads
// the body with encoding/json instead, whose result and errors stand. So it
// decides nothing on its own: TestDecodeFastMatchesJSON and
// FuzzDecodeEnvelope check that whenever it returns true e is what
// json.Unmarshal makes.
func decodeFast(data []byte, e *Envelope) bool {
	d := &jsonx.Scanner{B: data}
	// The short strings share one allocation; the text has its own, so
	// that none of them keeps the text alive.
	var ss jsonx.Strings
	ok := d.Fields(func(key []byte) (int, bool) {
		switch string(key) {
		case "v":
			return d.IntInto(0, &e.V)
		case "job_id":
			return d.StrOnto(&ss, 1, &e.JobID)
		case "run":
			return d.StrOnto(&ss, 2, &e.Run)
		case "document_id":
			return d.StrOnto(&ss, 3, &e.DocumentID)
		case "document_hash":
			return d.StrOnto(&ss, 4, &e.DocumentHash)
		case "text":
			return d.StrInto(5, &e.Text)
		case "text_ref":
			e.TextRef = new(ObjectRef)
			return 6, objectRef(d, &ss, e.TextRef)
		case "metadata":
			raw, ok := d.Raw()
			e.Metadata = json.RawMessage(append([]byte(nil), raw...))
			return 7, ok
		case "original":
			e.Original = new(ObjectRef)
			return 8, objectRef(d, &ss, e.Original)
		case "original_hash":
			return d.StrOnto(&ss, 9, &e.OriginalHash)
		case "reader":
			return d.StrOnto(&ss, 10, &e.Reader)
		case "pages":
			e.Pages = []Page{}
			return 11, d.Array(func() bool {
				var p Page
				ok := d.Fields(func(key []byte) (int, bool) {
					switch string(key) {
					case "n":
						return d.IntInto(0, &p.N)
					case "start":
						return d.IntInto(1, &p.Start)
					case "end":
						return d.IntInto(2, &p.End)
					case "label":
						return d.StrInto(3, &p.Label)
					}
					return -1, false
				})
				e.Pages = append(e.Pages, p)
				return ok
			})
		case "scanned":
			e.Scanned = []int{}
			return 12, d.Array(func() bool {
				n, ok := d.Int()
				e.Scanned = append(e.Scanned, n)
				return ok
			})
		case "schema":
			return 13, d.Fields(func(key []byte) (int, bool) {
				switch string(key) {
				case "name":
					return d.StrOnto(&ss, 0, &e.Schema.Name)
				case "version":
					return d.IntInto(1, &e.Schema.Version)
				case "fingerprint":
					return d.StrOnto(&ss, 2, &e.Schema.Fingerprint)
				}
				return -1, false
			})
		case "provider":
			return d.StrOnto(&ss, 14, &e.Provider)
		case "model":
			return d.StrOnto(&ss, 15, &e.Model)
		case "pool":
			return d.StrOnto(&ss, 16, &e.Pool)
		case "options":
			return 17, options(d, &ss, &e.Options)
		case "submitted_at":
			// As encoding/json does: the time's own UnmarshalJSON on the
			// literal, quotes included (a time never has escapes; one
			// with escapes or other bytes PlainKey does not take is left
			// to encoding/json). PlainKey makes no string to throw away.
			start := d.I
			_, ok := d.PlainKey()
			return 18, ok && e.SubmittedAt.UnmarshalJSON(d.B[start:d.I]) == nil
		case "resubmission":
			return d.StrOnto(&ss, 19, &e.Resubmission)
		case "pictures":
			e.Pictures = new(ObjectRef)
			return 20, objectRef(d, &ss, e.Pictures)
		}
		return -1, false
	})
	d.Ws()
	if !ok || d.I != len(d.B) {
		return false
	}
	ss.Done()
	return true
}

func objectRef(d *jsonx.Scanner, ss *jsonx.Strings, r *ObjectRef) bool {
	return d.Fields(func(key []byte) (int, bool) {
		switch string(key) {
		case "bucket":
			return d.StrOnto(ss, 0, &r.Bucket)
		case "name":
			return d.StrOnto(ss, 1, &r.Name)
		case "size":
			n, ok := d.Int()
			r.Size = int64(n)
			return 2, ok
		}
		return -1, false
	})
}

func options(d *jsonx.Scanner, ss *jsonx.Strings, o *Options) bool {
	intp := func(n int, p **int) (int, bool) {
		*p = new(int)
		return d.IntInto(n, *p)
	}
	return d.Fields(func(key []byte) (int, bool) {
		switch string(key) {
		case "max_reasks":
			return intp(0, &o.MaxReasks)
		case "mode":
			return d.StrOnto(ss, 1, &o.Mode)
		case "max_tokens":
			return intp(2, &o.MaxTokens)
		case "token_budget":
			return intp(3, &o.TokenBudget)
		case "temperature":
			f, ok := d.Float()
			o.Temperature = &f
			return 4, ok
		case "repair_policy":
			return d.StrOnto(ss, 5, &o.RepairPolicy)
		case "chunking":
			return d.StrOnto(ss, 6, &o.Chunking)
		case "input":
			return d.StrOnto(ss, 7, &o.Input)
		}
		return -1, false
	})
}
