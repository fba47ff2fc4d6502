package jobs

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
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
	var seen uint64
	ok := d.object(func(key []byte) bool {
		f, known := envelopeFields[string(key)]
		if !known || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		return d.envelopeField(f, e)
	})
	d.ws()
	return ok && d.i == len(d.b)
}

// The envelope's keys, as Envelope's json tags name them.
const (
	fV = iota
	fJobID
	fRun
	fDocumentID
	fDocumentHash
	fText
	fTextRef
	fMetadata
	fOriginal
	fOriginalHash
	fReader
	fPages
	fScanned
	fSchema
	fProvider
	fModel
	fPool
	fOptions
	fSubmittedAt
	fResubmission
)

var envelopeFields = map[string]int{
	"v": fV, "job_id": fJobID, "run": fRun, "document_id": fDocumentID, "document_hash": fDocumentHash,
	"text": fText, "text_ref": fTextRef, "metadata": fMetadata, "original": fOriginal, "original_hash": fOriginalHash,
	"reader": fReader, "pages": fPages, "scanned": fScanned, "schema": fSchema, "provider": fProvider,
	"model": fModel, "pool": fPool, "options": fOptions, "submitted_at": fSubmittedAt, "resubmission": fResubmission,
}

func (d *scanner) envelopeField(f int, e *Envelope) bool {
	var ok bool
	switch f {
	case fV:
		e.V, ok = d.int()
	case fJobID:
		e.JobID, ok = d.str()
	case fRun:
		e.Run, ok = d.str()
	case fDocumentID:
		e.DocumentID, ok = d.str()
	case fDocumentHash:
		e.DocumentHash, ok = d.str()
	case fText:
		e.Text, ok = d.str()
	case fTextRef:
		e.TextRef = new(ObjectRef)
		ok = d.objectRef(e.TextRef)
	case fMetadata:
		var raw []byte
		if raw, ok = d.raw(); ok {
			e.Metadata = json.RawMessage(append([]byte(nil), raw...))
		}
	case fOriginal:
		e.Original = new(ObjectRef)
		ok = d.objectRef(e.Original)
	case fOriginalHash:
		e.OriginalHash, ok = d.str()
	case fReader:
		e.Reader, ok = d.str()
	case fPages:
		e.Pages = []Page{}
		ok = d.array(func() bool {
			var p Page
			var seen uint8
			ok := d.object(func(key []byte) bool {
				var bit uint8
				var ok bool
				switch string(key) {
				case "n":
					bit = 1
					p.N, ok = d.int()
				case "start":
					bit = 2
					p.Start, ok = d.int()
				case "end":
					bit = 4
					p.End, ok = d.int()
				case "label":
					bit = 8
					p.Label, ok = d.str()
				}
				if bit == 0 || seen&bit != 0 {
					return false
				}
				seen |= bit
				return ok
			})
			e.Pages = append(e.Pages, p)
			return ok
		})
	case fScanned:
		e.Scanned = []int{}
		ok = d.array(func() bool {
			n, ok := d.int()
			e.Scanned = append(e.Scanned, n)
			return ok
		})
	case fSchema:
		var seen uint8
		ok = d.object(func(key []byte) bool {
			var bit uint8
			var ok bool
			switch string(key) {
			case "name":
				bit = 1
				e.Schema.Name, ok = d.str()
			case "version":
				bit = 2
				e.Schema.Version, ok = d.int()
			case "fingerprint":
				bit = 4
				e.Schema.Fingerprint, ok = d.str()
			}
			if bit == 0 || seen&bit != 0 {
				return false
			}
			seen |= bit
			return ok
		})
	case fProvider:
		e.Provider, ok = d.str()
	case fModel:
		e.Model, ok = d.str()
	case fPool:
		e.Pool, ok = d.str()
	case fOptions:
		ok = d.options(&e.Options)
	case fResubmission:
		e.Resubmission, ok = d.str()
	case fSubmittedAt:
		// As encoding/json does: the time's own UnmarshalJSON on the
		// literal, quotes included (a time never has escapes).
		start := d.i
		var s string
		if s, ok = d.str(); ok && d.i-start == len(s)+2 {
			ok = e.SubmittedAt.UnmarshalJSON(d.b[start:d.i]) == nil
		} else {
			ok = false
		}
	}
	return ok
}

func (d *scanner) objectRef(r *ObjectRef) bool {
	var seen uint8
	return d.object(func(key []byte) bool {
		var bit uint8
		var ok bool
		switch string(key) {
		case "bucket":
			bit = 1
			r.Bucket, ok = d.str()
		case "name":
			bit = 2
			r.Name, ok = d.str()
		case "size":
			bit = 4
			var n int
			n, ok = d.int()
			r.Size = int64(n)
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
	})
}

func (d *scanner) options(o *Options) bool {
	var seen uint8
	return d.object(func(key []byte) bool {
		var bit uint8
		var ok bool
		intp := func() (*int, bool) {
			n, ok := d.int()
			return &n, ok
		}
		switch string(key) {
		case "max_reasks":
			bit = 1
			o.MaxReasks, ok = intp()
		case "mode":
			bit = 2
			o.Mode, ok = d.str()
		case "max_tokens":
			bit = 4
			o.MaxTokens, ok = intp()
		case "token_budget":
			bit = 8
			o.TokenBudget, ok = intp()
		case "temperature":
			bit = 16
			var f float64
			f, ok = d.float()
			o.Temperature = &f
		case "repair_policy":
			bit = 32
			o.RepairPolicy, ok = d.str()
		case "chunking":
			bit = 64
			o.Chunking, ok = d.str()
		case "input":
			bit = 128
			o.Input, ok = d.str()
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		return ok
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
// byte at start.
func (d *scanner) escaped(start int) (string, bool) {
	out := make([]byte, 0, len(d.b)-start)
	j := start
	for j < len(d.b) {
		k := j
		for k < len(d.b) && d.b[k] != '"' && d.b[k] != '\\' && d.b[k] >= 0x20 {
			k++
		}
		out = append(out, d.b[j:k]...)
		if j = k; j == len(d.b) {
			return "", false
		}
		switch c := d.b[j]; {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			d.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		}
		if j+1 >= len(d.b) {
			return "", false
		}
		switch e := d.b[j+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(d.b, j+2)
			if !ok {
				return "", false
			}
			j += 4
			if utf16.IsSurrogate(r) {
				lo, ok := rune(0), j+7 < len(d.b) && d.b[j+2] == '\\' && d.b[j+3] == 'u'
				if ok {
					lo, ok = hex4(d.b, j+4)
				}
				r = utf16.DecodeRune(r, lo)
				if !ok || r == utf8.RuneError {
					return "", false // a lone surrogate: encoding/json's U+FFFD
				}
				j += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
		j += 2
	}
	return "", false
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
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
