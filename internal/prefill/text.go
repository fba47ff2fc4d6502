package prefill

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/extractq/extractq/internal/jsonx"
)

// Stop sequences per value kind (at most four: OpenAI's completion API
// takes no more). A literal ends at the next separator; a string at its
// closing quote. A number is never stopped at a bare comma, which may be
// its own thousands separator ("12,500.00"): as an object's member it ends
// where the next key starts (`,"` or `, "`), at "}" or a line break; as an
// array's element at ", ", "]" or a line break. numberText then reads the
// number from what came back.
var (
	stopScalar        = []string{",", "}", "]", "\n"}
	stopString        = []string{`"`}
	stopNumberMember  = []string{`,"`, `, "`, "}", "\n"}
	stopNumberElement = []string{", ", "]", "}", "\n"}
)

// numberStops are the stops for a number, as an array's element (inList)
// or otherwise.
func numberStops(inList bool) []string {
	if inList {
		return stopNumberElement
	}
	return stopNumberMember
}

// cutAtStop cuts text at the first stop sequence, as the server should have
// (some servers and models run past a stop; cutting again is harmless). In a
// string a quote preceded by an odd number of backslashes is escaped and
// does not end it. cut reports that a stop was found.
func cutAtStop(text string, stops []string, inString bool) (out string, cut bool) {
	best := -1
	for _, s := range stops {
		from := 0
		for {
			i := strings.Index(text[from:], s)
			if i < 0 {
				break
			}
			i += from
			if inString && s == `"` && escaped(text[:i]) {
				from = i + 1
				continue
			}
			if best < 0 || i < best {
				best = i
			}
			break
		}
	}
	if best < 0 {
		return text, false
	}
	return text[:best], true
}

// escaped reports whether text ends with an odd number of backslashes, so
// that the character after it is escaped.
func escaped(text string) bool {
	n := 0
	for i := len(text) - 1; i >= 0 && text[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// stringValue turns a string's generated content into its JSON text. The
// content is taken as JSON string content when it is that (the model wrote
// \n or \" itself), else as raw text that the program escapes.
func stringValue(content string) string {
	var s string
	if err := json.Unmarshal([]byte(`"`+content+`"`), &s); err != nil {
		s = content
	}
	b, _ := json.Marshal(s)
	return string(b)
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// numberText finds the number at the start of a continuation cut at a
// number's stops. A comma followed by a digit may be part of the number
// ("12,500.00", "1.234,56"); any other comma ends it, as does the closing
// quote of a quoted number. In a list (inList) a comma followed by a digit
// is also JSON's element separator, so "12,500.00" there is either one
// number or the elements 12 and 500.00: when the text up to a comma reads
// as one number whose comma is a thousands separator (by jsonx's rule;
// "1,5" and "2019,2020" do not, so [1,5] stays a list), num is that
// number, parts holds the other reading's elements and the caller re-asks
// rather than guess. ended reports that the number's end was seen (a
// separator or a closing quote), so that a call cut at its token limit
// still gave the whole number.
func numberText(text string, inList bool) (num string, parts []string, ended bool) {
	t := strings.TrimSpace(text)
	if t != "" && (t[0] == '"' || t[0] == '\'') {
		if j := strings.IndexByte(t[1:], t[0]); j >= 0 {
			return t[:j+2], nil, true
		}
		return t, nil, false
	}
	for i := 0; i < len(t); i++ {
		if t[i] == ',' && (i+1 == len(t) || !isDigit(t[i+1])) {
			t, ended = strings.TrimSpace(t[:i]), true
			break
		}
	}
	if !inList {
		return t, nil, ended
	}
	first, _, found := strings.Cut(t, ",")
	if !found {
		return t, nil, ended
	}
	// The longest run of elements that reads as one grouped number.
	for k := len(t); k > len(first); k = strings.LastIndexByte(t[:k], ',') {
		p := t[:k]
		if f, ok := jsonx.ReadNumberForm(p); ok && (f.Group != 0 || f.Ambiguous == ',') {
			return p, strings.Split(p, ","), false
		}
	}
	return strings.TrimSpace(first), nil, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scalarRead is a scalar read from the model's text.
type scalarRead struct {
	value string // JSON text
	// from and note: the text of a number written for people and how it
	// was read ("" for plain JSON), recorded as a repair on the attempt.
	from, note string
	// mark is the decimal mark that number shows to be the writer's ('.'
	// or ','), 0 when it shows none: it settles later ambiguous numbers.
	mark byte
}

// numberValue reads a generated number (numberText's num). Surrounding
// quotes (an auto-quoted value), a leading "+", a bare leading or trailing
// decimal point are normalised; an unquoted JSON number is taken as it is;
// anything else is read by jsonx's rule for numbers written for people
// (jsonx.ReadNumber, the rule Coerce applies in the other modes):
// "12,500.00", "12 500", "1.234,56", "$5" are read, "1,234" only when mark
// (the decimal mark the writer's earlier numbers showed) or an integer
// field settles it, and none with a ',' or '.' when conflict (they showed
// both) or when this one shows the other convention. An
// integer field takes a fraction of zeros ("2024.0", "12,500.00" when the
// text shows its decimal mark). What cannot be read is an error for the
// model: words, units, or both readings of an ambiguous number.
func numberValue(text string, integer bool, mark byte, conflict bool) (scalarRead, string, bool) {
	t := strings.TrimSpace(text)
	quoted := false
	if len(t) >= 2 && (t[0] == '"' && t[len(t)-1] == '"' || t[0] == '\'' && t[len(t)-1] == '\'') {
		t, quoted = strings.TrimSpace(t[1:len(t)-1]), true
	}
	t = strings.TrimPrefix(t, "+")
	if strings.HasPrefix(t, ".") {
		t = "0" + t
	} else if strings.HasPrefix(t, "-.") {
		t = "-0" + t[1:]
	}
	t = strings.TrimSuffix(t, ".")
	if t == "" {
		return scalarRead{}, "the value is empty: write the number in digits", false
	}
	var r scalarRead
	if !quoted && jsonNumber.MatchString(t) {
		r.value = t
	} else {
		// A quoted "1.234" is text, as in the other modes: ambiguous.
		form, human := jsonx.ReadNumberForm(t)
		if human && form.Convention != 0 && mark != 0 && form.Convention != mark {
			conflict = true // this number and the earlier ones show both
		}
		out, note, ok := jsonx.ReadNumber(t, integer, mark, conflict)
		if !ok && integer && human && form.Convention != 0 {
			// The text shows its decimal mark, so a fraction of zeros is
			// no guess; the integer check below takes it.
			out, note, ok = jsonx.ReadNumber(t, false, mark, conflict)
		}
		switch {
		case ok:
			r.value, r.from, r.note, r.mark = out, strings.TrimSpace(text), note, form.Convention
		case human || jsonNumber.MatchString(t):
			return scalarRead{}, jsonx.NumberHint(t), false
		default:
			return scalarRead{}, "write the number in digits only (like 1234.5), without words, units or thousands separators", false
		}
	}
	f, err := strconv.ParseFloat(r.value, 64)
	if err != nil {
		return scalarRead{}, "the number is out of range", false
	}
	if integer {
		if f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
			return scalarRead{}, "write a whole number (an integer)", false
		}
		r.value = strconv.FormatInt(int64(f), 10)
	}
	return r, "", true
}

// matchLiteral finds the allowed literal the model meant: its text exactly,
// the same text without quotes, Python-style True/False/None, or, when a
// stop sequence cut a quoted literal short (a comma inside it), the one
// literal starting with what was written. It returns -1 when none fits.
func matchLiteral(text string, literals []string, cut bool) int {
	t := strings.TrimSpace(text)
	cands := []string{t}
	switch t {
	case "True":
		cands = append(cands, "true")
	case "False":
		cands = append(cands, "false")
	case "None":
		cands = append(cands, "null")
	}
	if t != "" && t[0] != '"' {
		b, _ := json.Marshal(t)
		cands = append(cands, string(b))
	}
	if len(t) >= 2 && t[0] == '\'' && t[len(t)-1] == '\'' {
		b, _ := json.Marshal(t[1 : len(t)-1])
		cands = append(cands, string(b))
	}
	for _, c := range cands {
		for i, l := range literals {
			if c == l {
				return i
			}
		}
	}
	if cut && len(t) > 1 && t[0] == '"' && !strings.HasSuffix(t, `"`) {
		found := -1
		for i, l := range literals {
			if strings.HasPrefix(l, t) {
				if found >= 0 {
					return -1 // ambiguous
				}
				found = i
			}
		}
		return found
	}
	return -1
}

// listLiterals renders allowed values for feedback, bounded.
func listLiterals(literals []string) string {
	const max = 40
	if len(literals) <= max {
		return strings.Join(literals, ", ")
	}
	return strings.Join(literals[:max], ", ") + ", …"
}
