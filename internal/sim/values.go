package sim

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// rng draws the simulator's random choices from a PCG stream whose seed
// says what the draw is about, so that choices never depend on the order in
// which requests arrive.
type rng struct{ p rand.PCG }

func newRNG(a, b uint64) *rng {
	r := &rng{}
	r.p.Seed(a, b)
	return r
}

// unit returns a float in [0, 1).
func (r *rng) unit() float64 { return float64(r.p.Uint64()>>11) / (1 << 53) }

// intn returns an int in [0, n); n must be positive.
func (r *rng) intn(n int) int { return int(r.p.Uint64() % uint64(n)) }

// mix combines two 64-bit values into a well-spread seed (splitmix64).
func mix(a, b uint64) uint64 {
	z := a ^ (b + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2))
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// textKind is what a string field looks like it should hold, judged by its
// name, so that answers read like extractions rather than noise.
type textKind uint8

const (
	kindPhrase textKind = iota
	kindEmail
	kindDate
	kindDateTime
	kindURL
	kindPhone
	kindName
	kindCurrency
	kindCode
)

func kindOf(field string) textKind {
	f := strings.ToLower(field)
	switch {
	case strings.Contains(f, "email"):
		return kindEmail
	case strings.HasSuffix(f, "_at") || strings.Contains(f, "timestamp") || strings.Contains(f, "datetime"):
		return kindDateTime
	case strings.Contains(f, "date") || strings.HasSuffix(f, "_on") || f == "dob" || strings.Contains(f, "birthday") || strings.Contains(f, "deadline"):
		return kindDate
	case strings.Contains(f, "url") || strings.Contains(f, "website") || strings.Contains(f, "link"):
		return kindURL
	case strings.Contains(f, "phone") || strings.Contains(f, "fax") || f == "tel":
		return kindPhone
	case strings.Contains(f, "name") || f == "author" || f == "vendor" || f == "customer" || f == "company":
		return kindName
	case strings.Contains(f, "currency"):
		return kindCurrency
	case f == "id" || strings.HasSuffix(f, "_id") || strings.HasSuffix(f, "number") || strings.HasSuffix(f, "code") || f == "sku":
		return kindCode
	}
	return kindPhrase
}

// docText makes a plausible string of that kind, taken from the document
// where the document has one.
func docText(k textKind, doc string, r *rng) string {
	switch k {
	case kindEmail:
		if e := firstEmail(doc); e != "" {
			return e
		}
		return fmt.Sprintf("%s@example.com", strings.ToLower(asciiWord(doc, r, "contact")))
	case kindDate:
		if d := firstDate(doc); d != "" {
			return d
		}
		return fmt.Sprintf("%04d-%02d-%02d", 2000+r.intn(30), 1+r.intn(12), 1+r.intn(28))
	case kindDateTime:
		d := firstDate(doc)
		if d == "" {
			d = fmt.Sprintf("%04d-%02d-%02d", 2000+r.intn(30), 1+r.intn(12), 1+r.intn(28))
		}
		return fmt.Sprintf("%sT%02d:%02d:00Z", d, r.intn(24), r.intn(60))
	case kindURL:
		return fmt.Sprintf("https://%s.example.com/", strings.ToLower(asciiWord(doc, r, "www")))
	case kindPhone:
		return fmt.Sprintf("+1-555-%03d-%04d", r.intn(1000), r.intn(10000))
	case kindName:
		return capitalised(doc, r)
	case kindCurrency:
		return [...]string{"USD", "EUR", "GBP", "JPY", "CHF"}[r.intn(5)]
	case kindCode:
		w := strings.ToUpper(asciiWord(doc, r, "ID"))
		return fmt.Sprintf("%s-%05d", w[:min(3, len(w))], r.intn(100000))
	}
	return phrase(doc, r, 6)
}

// phrase returns up to n words of the document starting at a seeded word.
func phrase(doc string, r *rng, n int) string {
	var b strings.Builder
	for _, from := range [2]int{wordStart(doc, r), 0} { // wrap to the start if the tail is blank
		k := 0
		for w := range strings.FieldsSeq(doc[from:]) {
			if k == n {
				break
			}
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			k++
		}
		if k > 0 {
			return strings.ToValidUTF8(b.String(), "")
		}
	}
	return "n/a"
}

// wordStart picks a seeded offset and moves it to the start of a word.
func wordStart(doc string, r *rng) int {
	if len(doc) == 0 {
		return 0
	}
	i := r.intn(len(doc))
	for i < len(doc) && doc[i] != ' ' && doc[i] != '\n' {
		i++
	}
	return i
}

// asciiWord returns a seeded all-letters ASCII word of the document, or def.
func asciiWord(doc string, r *rng, def string) string {
	for w := range strings.FieldsSeq(doc[wordStart(doc, r):]) {
		if len(w) >= 3 && isLetters(w) {
			return w
		}
	}
	return def
}

// capitalised returns one or two capitalised words of the document.
func capitalised(doc string, r *rng) string {
	prev := ""
	for w := range strings.FieldsSeq(doc[wordStart(doc, r):]) {
		isCap := len(w) >= 2 && w[0] >= 'A' && w[0] <= 'Z' && isLetters(w)
		switch {
		case prev != "" && isCap:
			return prev + " " + w
		case prev != "":
			return prev
		case isCap:
			prev = w
		}
	}
	if prev != "" {
		return prev
	}
	return "Jane Doe"
}

func isLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// firstEmail returns the first well-formed address of the document (one
// any email format check accepts).
func firstEmail(doc string) string {
	for off := 0; ; {
		at := strings.IndexByte(doc[off:], '@')
		if at < 0 {
			return ""
		}
		at += off
		i, j := at, at+1
		for i > 0 && isEmailByte(doc[i-1]) {
			i--
		}
		for j < len(doc) && (isEmailByte(doc[j]) && doc[j] != '+' && doc[j] != '_') {
			j++
		}
		for j > at+1 && doc[j-1] == '.' {
			j--
		}
		if wellFormedEmail(doc[i:at], doc[at+1:j]) {
			return doc[i:j]
		}
		off = at + 1
	}
}

func isEmailByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+'
}

func wellFormedEmail(local, domain string) bool {
	if local == "" || local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
	}
	return len(labels[len(labels)-1]) >= 2 && isLetters(labels[len(labels)-1])
}

// firstDate returns the first YYYY-MM-DD of the document.
func firstDate(doc string) string {
	for i := 0; i+10 <= len(doc); i++ {
		d := doc[i : i+10]
		if digits(d[0:4]) && d[4] == '-' && digits(d[5:7]) && d[7] == '-' && digits(d[8:10]) &&
			d[5:7] >= "01" && d[5:7] <= "12" && d[8:10] >= "01" && d[8:10] <= "28" {
			return d
		}
	}
	return ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// vary makes a new instance of the example's shape: same keys, same types,
// values taken from the document. Short lowercase words are kept as they
// are, since they are likely enum members the answer must repeat.
func vary(v any, field string, doc string, r *rng) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = vary(e, k, doc, r)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = vary(e, field, doc, r)
		}
		return out
	case string:
		if looksLikeEnum(x) {
			return x
		}
		k := kindOf(field)
		if k == kindPhrase {
			switch {
			case firstDate(x) == x:
				k = kindDate
			case firstEmail(x) == x:
				k = kindEmail
			}
		}
		return docText(k, doc, r)
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return json.Number(fmt.Sprint(r.intn(1000)))
		}
		return json.Number(fmt.Sprintf("%d.%02d", r.intn(1000), r.intn(100)))
	case bool:
		return r.intn(2) == 1
	}
	return v
}

func looksLikeEnum(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
