package jobs

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

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
	d := scanner{b: data}
	ok := d.fields(func(key []byte) (int, bool) {
		switch string(key) {
		case "v":
			return d.intInto(0, &e.V)
		case "job_id":
			return d.strInto(1, &e.JobID)
		case "run":
			return d.strInto(2, &e.Run)
		case "document_id":
			return d.strInto(3, &e.DocumentID)
		case "document_hash":
			return d.strInto(4, &e.DocumentHash)
		case "text":
			return d.strInto(5, &e.Text)
		case "text_ref":
			e.TextRef = new(ObjectRef)
			return 6, d.objectRef(e.TextRef)
		case "metadata":
			raw, ok := d.raw()
			e.Metadata = json.RawMessage(append([]byte(nil), raw...))
			return 7, ok
		case "original":
			e.Original = new(ObjectRef)
			return 8, d.objectRef(e.Original)
		case "original_hash":
			return d.strInto(9, &e.OriginalHash)
		case "reader":
			return d.strInto(10, &e.Reader)
		case "pages":
			e.Pages = []Page{}
			return 11, d.array(func() bool {
				var p Page
				ok := d.fields(func(key []byte) (int, bool) {
					switch string(key) {
					case "n":
						return d.intInto(0, &p.N)
					case "start":
						return d.intInto(1, &p.Start)
					case "end":
						return d.intInto(2, &p.End)
					case "label":
						return d.strInto(3, &p.Label)
					}
					return -1, false
				})
				e.Pages = append(e.Pages, p)
				return ok
			})
		case "scanned":
			e.Scanned = []int{}
			return 12, d.array(func() bool {
				n, ok := d.int()
				e.Scanned = append(e.Scanned, n)
				return ok
			})
		case "schema":
			return 13, d.fields(func(key []byte) (int, bool) {
				switch string(key) {
				case "name":
					return d.strInto(0, &e.Schema.Name)
				case "version":
					return d.intInto(1, &e.Schema.Version)
				case "fingerprint":
					return d.strInto(2, &e.Schema.Fingerprint)
				}
				return -1, false
			})
		case "provider":
			return d.strInto(14, &e.Provider)
		case "model":
			return d.strInto(15, &e.Model)
		case "pool":
			return d.strInto(16, &e.Pool)
		case "options":
			return 17, d.options(&e.Options)
		case "submitted_at":
			// As encoding/json does: the time's own UnmarshalJSON on the
			// literal, quotes included (a time never has escapes).
			start := d.i
			s, ok := d.str()
			return 18, ok && d.i-start == len(s)+2 && e.SubmittedAt.UnmarshalJSON(d.b[start:d.i]) == nil
		case "resubmission":
			return d.strInto(19, &e.Resubmission)
		}
		return -1, false
	})
	d.ws()
	return ok && d.i == len(d.b)
}

func (d *scanner) objectRef(r *ObjectRef) bool {
	return d.fields(func(key []byte) (int, bool) {
		switch string(key) {
		case "bucket":
			return d.strInto(0, &r.Bucket)
		case "name":
			return d.strInto(1, &r.Name)
		case "size":
			n, ok := d.int()
			r.Size = int64(n)
			return 2, ok
		}
		return -1, false
	})
}

func (d *scanner) options(o *Options) bool {
	intp := func(n int, p **int) (int, bool) {
		*p = new(int)
		return d.intInto(n, *p)
	}
	return d.fields(func(key []byte) (int, bool) {
		switch string(key) {
		case "max_reasks":
			return intp(0, &o.MaxReasks)
		case "mode":
			return d.strInto(1, &o.Mode)
		case "max_tokens":
			return intp(2, &o.MaxTokens)
		case "token_budget":
			return intp(3, &o.TokenBudget)
		case "temperature":
			f, ok := d.float()
			o.Temperature = &f
			return 4, ok
		case "repair_policy":
			return d.strInto(5, &o.RepairPolicy)
		case "chunking":
			return d.strInto(6, &o.Chunking)
		case "input":
			return d.strInto(7, &o.Input)
		}
		return -1, false
	})
}

// scanner reads JSON from b at i. Every method returns false for input
// it does not take (see decodeFast), leaving i anywhere.
type scanner struct {
	b []byte
	i int
}

func (d *scanner) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *scanner) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads {"key": value, …}: member reads each value after its key
// (a key without escapes, else false).
func (d *scanner) object(member func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		d.ws()
		key, ok := d.plainKey()
		if !ok || !d.next(':') {
			return false
		}
		d.ws()
		if !member(key) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// fields reads an object with member, which reads the value after a key
// and returns the key's number among its object's keys (-1 for one it
// does not know) and whether the value read well. A key it does not know
// or has seen before ends the fast path.
func (d *scanner) fields(member func(key []byte) (n int, ok bool)) bool {
	var seen uint64
	return d.object(func(key []byte) bool {
		n, ok := member(key)
		if n < 0 || seen&(1<<n) != 0 {
			return false
		}
		seen |= 1 << n
		return ok
	})
}

// strInto reads a string into s; n passes through, for fields.
func (d *scanner) strInto(n int, s *string) (int, bool) {
	v, ok := d.str()
	*s = v
	return n, ok
}

// intInto reads an int into p; n passes through, for fields.
func (d *scanner) intInto(n int, p *int) (int, bool) {
	v, ok := d.int()
	*p = v
	return n, ok
}

// array reads [value, …], item reading each value.
func (d *scanner) array(item func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		d.ws()
		if !item() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}

// plainKey reads a string without escapes and returns its bytes.
func (d *scanner) plainKey() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	for j := d.i + 1; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			key := d.b[d.i+1 : j]
			d.i = j + 1
			return key, true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string: valid UTF-8, escapes decoded, a surrogate only in a
// pair.
func (d *scanner) str() (string, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return "", false
	}
	start := d.i + 1
	ascii := true
	j := start
	for ; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			return d.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if j == len(d.b) {
		return "", false
	}
	s := d.b[start:j]
	if !ascii && !utf8.Valid(s) {
		return "", false
	}
	d.i = j + 1
	return string(s), true
}

// escaped reads the rest of a string that has escapes, from its first
// byte at start (after the opening quote): it finds the closing quote,
// refusing raw control characters as encoding/json does, and decodes the
// literal with jsonx.UnquoteStrict. Invalid UTF-8 and lone surrogates are
// left to encoding/json, which replaces them.
func (d *scanner) escaped(start int) (string, bool) {
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '\\':
			j++ // the escaped byte; Unquote checks the escape
		case c == '"':
			s, ok := jsonx.UnquoteStrict(d.b[start-1 : j+1])
			if !ok || !utf8.ValidString(s) {
				return "", false
			}
			d.i = j + 1
			return s, true
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number reads a JSON number literal; integral says it has no fraction
// or exponent.
func (d *scanner) number() (lit []byte, integral, ok bool) {
	start, j := d.i, d.i
	digits := func() int {
		k := j
		for j < len(d.b) && '0' <= d.b[j] && d.b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	if j < len(d.b) && d.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false, false
	}
	integral = true
	if j < len(d.b) && d.b[j] == '.' {
		j++
		integral = false
		if digits() == 0 {
			return nil, false, false
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		integral = false
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false, false
		}
	}
	d.i = j
	return d.b[start:j], integral, true
}

func (d *scanner) int() (int, bool) {
	lit, integral, ok := d.number()
	if !ok || !integral {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, strconv.IntSize)
	return int(n), err == nil
}

func (d *scanner) float() (float64, bool) {
	lit, _, ok := d.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	return f, err == nil
}

// raw reads a value of any kind and returns its bytes, checked with
// json.Valid as encoding/json checks a RawMessage's.
func (d *scanner) raw() ([]byte, bool) {
	start, depth := d.i, 0
	for d.i < len(d.b) {
		switch c := d.b[d.i]; c {
		case '"':
			j := d.i + 1
			for j < len(d.b) && d.b[j] != '"' {
				if d.b[j] == '\\' {
					j++
				}
				j++
			}
			d.i = j + 1
		case '{', '[':
			depth++
			d.i++
		case '}', ']':
			if depth == 0 {
				return d.rawEnd(start)
			}
			depth--
			d.i++
		case ',':
			if depth == 0 {
				return d.rawEnd(start)
			}
			d.i++
		default:
			d.i++
		}
	}
	return d.rawEnd(start)
}

func (d *scanner) rawEnd(start int) ([]byte, bool) {
	if d.i > len(d.b) {
		return nil, false
	}
	v := d.b[start:d.i]
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\n' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	if len(v) == 0 || string(v) == "null" || !json.Valid(v) {
		return nil, false
	}
	return v, true
}
