package prefill

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// Stop sequences per value kind. A scalar ends at the next separator; a
// string at its closing quote.
var (
	stopScalar = []string{",", "}", "]", "\n"}
	stopString = []string{`"`}
)

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

// numberValue parses a generated number: surrounding quotes (an auto-quoted
// value), a leading "+", a bare leading or trailing decimal point are
// normalised; anything else (words, units, thousands separators) is an
// error the model is told about. integer demands an integral value.
func numberValue(text string, integer bool) (string, string, bool) {
	t := strings.TrimSpace(text)
	norm := ""
	if len(t) >= 2 && (t[0] == '"' && t[len(t)-1] == '"' || t[0] == '\'' && t[len(t)-1] == '\'') {
		t, norm = strings.TrimSpace(t[1:len(t)-1]), "unquoted"
	}
	t = strings.TrimPrefix(t, "+")
	if strings.HasPrefix(t, ".") {
		t = "0" + t
	} else if strings.HasPrefix(t, "-.") {
		t = "-0" + t[1:]
	}
	t = strings.TrimSuffix(t, ".")
	if !jsonNumber.MatchString(t) {
		if t == "" {
			return "", "the value is empty: write the number in digits", false
		}
		return "", "write the number in digits only (like 1234.5), without words, units or thousands separators", false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return "", "the number is out of range", false
	}
	if integer {
		if f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
			return "", "write a whole number (an integer)", false
		}
		return strconv.FormatInt(int64(f), 10), norm, true
	}
	return t, norm, true
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
