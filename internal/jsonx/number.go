package jsonx

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// humanNumber is a number as people write it ("$1,234.50", "1 234,50 €",
// "12,5", "1'000"), read by readHumanNumber.
type humanNumber struct {
	neg      bool
	intPart  string // digits, grouping removed
	frac     string // digits after the decimal mark, "" when there is none
	mark     byte   // the decimal mark the text shows ('.' or ','), 0 when none
	group    byte   // the grouping separator it shows (',', '.', ' ', '\''), 0 when none
	currency string // the currency sign or code around it, if any
	percent  bool   // a trailing "%"
	// ambiguous is ',' or '.' for a lone separator followed by exactly
	// three digits ("1,234", "2.500"): a decimal mark in one convention and
	// a thousands separator in the other. intPart and frac then hold the
	// digits before and after it.
	ambiguous byte
}

// convention returns the decimal mark the number shows to be the
// writer's, '.' or ',', or 0 when it shows none: a decimal mark shows
// itself, a ',' or '.' used for grouping shows the other one.
func (h humanNumber) convention() byte {
	switch {
	case h.ambiguous != 0:
		return 0
	case h.mark != 0:
		return h.mark
	case h.group == ',':
		return '.'
	case h.group == '.':
		return ','
	}
	return 0
}

// reading returns the number as JSON text, taking an ambiguous separator
// as the decimal mark when dec is true and as grouping otherwise.
func (h humanNumber) reading(dec bool) string {
	ip, frac := h.intPart, h.frac
	if h.ambiguous != 0 && !dec {
		ip, frac = ip+frac, ""
	}
	s := ip
	if frac != "" {
		s += "." + frac
	}
	if h.neg {
		s = "-" + s
	}
	return s
}

// currencySymbols are the signs a price may carry; currencyCodes the ISO
// 4217 codes written before or after an amount.
var (
	currencySymbols = []string{"US$", "R$", "A$", "C$", "$", "€", "£", "¥", "₹", "₩", "₽", "₺", "₪", "₫", "₱", "₴", "₦", "฿", "₡", "₲", "₵", "₸", "₼", "₾", "¢", "zł", "Kč", "kr", "Fr."}
	currencyCodes   = map[string]bool{
		"USD": true, "EUR": true, "GBP": true, "JPY": true, "CNY": true, "RMB": true, "CHF": true, "CAD": true,
		"AUD": true, "NZD": true, "SEK": true, "NOK": true, "DKK": true, "PLN": true, "CZK": true, "HUF": true,
		"INR": true, "BRL": true, "MXN": true, "ZAR": true, "RUB": true, "TRY": true, "KRW": true, "SGD": true,
		"HKD": true, "ILS": true, "AED": true, "SAR": true, "THB": true, "IDR": true, "MYR": true, "PHP": true,
		"VND": true, "TWD": true, "ARS": true, "CLP": true, "COP": true, "PEN": true, "NGN": true, "EGP": true,
		"UAH": true, "RON": true, "BGN": true, "ISK": true,
	}
)

// isNumSpace reports whether r may separate digit groups or a number from
// its currency: a space, a no-break space, a narrow or thin space.
func isNumSpace(r rune) bool {
	return r == ' ' || r == '\u00A0' || r == '\u202F' || r == '\u2009'
}

// trimNumSpace trims spaces (isNumSpace) and other white space.
func trimNumSpace(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return isNumSpace(r) || unicode.IsSpace(r) })
}

// cutCurrency removes a currency sign or code at the start (front) or end
// of s, and the space beside it.
func cutCurrency(s string, front bool) (rest, cur string) {
	for _, sym := range currencySymbols {
		if front && strings.HasPrefix(s, sym) {
			return trimNumSpace(s[len(sym):]), sym
		}
		if !front && strings.HasSuffix(s, sym) {
			return trimNumSpace(s[:len(s)-len(sym)]), sym
		}
	}
	if len(s) > 3 {
		code, rest := s[:3], s[3:]
		if !front {
			code, rest = s[len(s)-3:], s[:len(s)-3]
		}
		if currencyCodes[code] {
			// The code must stand apart from the digits or touch them
			// directly: "EUR 12", "12EUR", never a word such as "EURO12".
			return trimNumSpace(rest), code
		}
	}
	return s, ""
}

// readHumanNumber reads s as one number written for people. It accepts a
// sign ("-", "+", "−"), one currency sign or code before or after, a
// trailing "%", digits grouped by ',', '.', spaces or apostrophes in groups
// of three (or the Indian 2-2-3 with ','), and a decimal mark ',' or '.'.
// When both ',' and '.' appear, the last one is the decimal mark and must
// appear once. A lone ',' or '.' is the decimal mark unless exactly three
// digits follow it and one to three (not starting with 0) precede it: then
// it is ambiguous (see humanNumber). It reports false for anything else:
// words, units, dates, several numbers, leading zeros ("007").
func readHumanNumber(s string) (humanNumber, bool) {
	var h humanNumber
	s = trimNumSpace(s)
	sign := func() {
		switch {
		case strings.HasPrefix(s, "-"), strings.HasPrefix(s, "+"):
			h.neg = s[0] == '-'
			s = trimNumSpace(s[1:])
		case strings.HasPrefix(s, "−"):
			h.neg = true
			s = trimNumSpace(s[len("−"):])
		}
	}
	sign()
	if rest, cur := cutCurrency(s, true); cur != "" {
		s, h.currency = rest, cur
		if !h.neg {
			sign() // "$-5"
		}
	}
	if strings.HasSuffix(s, "%") {
		h.percent = true
		s = trimNumSpace(s[:len(s)-1])
	}
	if rest, cur := cutCurrency(s, false); cur != "" {
		if h.currency != "" {
			return h, false
		}
		s, h.currency = rest, cur
	}
	if h.percent && h.currency != "" || s == "" || !isDigit(s[0]) || !isDigit(s[len(s)-1]) {
		return h, false
	}
	// Split into digit groups and the separators between them.
	var groups []string
	var seps []byte
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if isDigit(c) {
			i++
			continue
		}
		var sep byte
		size := 1
		switch {
		case c == ',' || c == '.' || c == '\'' || c == ' ':
			sep = c
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			switch {
			case isNumSpace(r):
				sep = ' '
			case r == '’':
				sep = '\''
			default:
				return h, false
			}
			size = n
		}
		if i == start { // two separators in a row
			return h, false
		}
		groups = append(groups, s[start:i])
		seps = append(seps, sep)
		i += size
		start = i
	}
	groups = append(groups, s[start:])
	if len(seps) == 0 {
		h.intPart = s
		return h, validLead(h.intPart)
	}
	last := seps[len(seps)-1]
	kinds := 0
	var other byte
	for _, c := range seps {
		if c != last {
			if other != 0 && c != other {
				return h, false // three kinds of separator
			}
			other = c
		}
	}
	if other != 0 {
		kinds = 2
	} else {
		kinds = 1
	}
	switch {
	case kinds == 2:
		// 1.234,56 or 1,234.56 or 1 234,56: the last separator is the
		// decimal mark, once, after every grouping separator.
		if last != ',' && last != '.' {
			return h, false
		}
		for _, c := range seps[:len(seps)-1] {
			if c == last {
				return h, false
			}
		}
		if !validGroups(groups[:len(groups)-1], other) {
			return h, false
		}
		h.mark, h.group = last, other
		h.intPart = strings.Join(groups[:len(groups)-1], "")
		h.frac = groups[len(groups)-1]
	case last == ' ' || last == '\'' || len(seps) > 1:
		// Grouping only: 1 234 567, 1'000, 1,234,567, 1.234.567.
		if !validGroups(groups, last) {
			return h, false
		}
		h.group = last
		h.intPart = strings.Join(groups, "")
	default:
		// One ',' or '.'.
		a, b := groups[0], groups[1]
		if !validLead(a) {
			return h, false
		}
		h.intPart, h.frac = a, b
		if len(b) == 3 && len(a) <= 3 && a[0] != '0' {
			h.ambiguous = last
		} else {
			h.mark = last
		}
	}
	return h, true
}

// validLead reports whether digits may start a number: no leading zero
// unless the integer part is "0".
func validLead(digits string) bool {
	return digits != "" && (digits[0] != '0' || digits == "0")
}

// validGroups reports whether digit groups are thousands groups: the first
// of one to three digits (no leading zero), the others of three, or with
// ',' the Indian grouping (two-digit groups before the last three).
func validGroups(groups []string, sep byte) bool {
	if len(groups) < 2 || len(groups[0]) > 3 || !validLead(groups[0]) || groups[0] == "0" {
		return false
	}
	three := true
	for _, g := range groups[1:] {
		if len(g) != 3 {
			three = false
		}
	}
	if three {
		return true
	}
	if sep != ',' || len(groups[len(groups)-1]) != 3 || len(groups[0]) > 2 {
		return false
	}
	for _, g := range groups[1 : len(groups)-1] {
		if len(g) != 2 {
			return false
		}
	}
	return true
}

// finiteNumber reports whether JSON number text fits a float64.
func finiteNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// NumberHint returns a short instruction, for the model, on writing a
// value that should have been a number: raw is the offending value, as
// JSON (the Value of a schema.Violation, e.g. `"1,234"`) or as plain
// text. It names the plain reading when there is exactly one, says when
// the text could be read two ways, and always says the form that is
// wanted: a plain JSON number, "." as the decimal mark, no thousands
// separators, currency or unit.
func NumberHint(raw string) string {
	const form = `a plain JSON number: digits, "-" for a negative, "." as the decimal mark, no quotes, thousands separators, currency or unit`
	s := strings.TrimSpace(raw)
	var str string
	if json.Unmarshal([]byte(s), &str) == nil {
		s = str
	}
	quoted := strconv.Quote(clip(s))
	h, ok := readHumanNumber(s)
	switch {
	case !ok:
		return "write " + quoted + " as " + form
	case h.percent:
		return "write " + quoted + " without the percent sign, as " + h.reading(true) + " (or as a fraction if the field wants one), " + form
	case h.ambiguous != 0:
		return quoted + " can be read as " + h.reading(false) + " or as " + h.reading(true) + ": write the one you mean as " + form
	}
	return "write " + quoted + " as " + h.reading(true) + ", " + form
}

// NumberForm is how a number written for people uses its separators, as
// ReadNumberForm found them.
type NumberForm struct {
	// Mark is the decimal mark the text shows ('.' or ','), 0 when none.
	Mark byte
	// Group is the grouping separator it shows (',', '.', ' ', '\''), 0
	// when none.
	Group byte
	// Ambiguous is ',' or '.' for a lone separator followed by exactly
	// three digits ("1,234"): a decimal mark in one convention, a
	// thousands separator in the other.
	Ambiguous byte
	// Convention is the decimal mark the number shows to be its writer's
	// ('.' or ','), 0 when it shows none (see Coerce).
	Convention byte
}

// ReadNumberForm reports whether s reads as one number written for people
// by the rule Coerce documents ("12,500.00", "1.234,56", "12 500", "$5",
// "1,234"), and how it uses its separators. A plain JSON number reads too,
// with no separators but a decimal point (Mark '.', or Ambiguous '.' for
// "1.234").
func ReadNumberForm(s string) (NumberForm, bool) {
	h, ok := readHumanNumber(s)
	if !ok {
		return NumberForm{}, false
	}
	return NumberForm{Mark: h.mark, Group: h.group, Ambiguous: h.ambiguous, Convention: h.convention()}, true
}

// ReadNumber reads s, text written where a number is wanted, by the rule
// Coerce applies to strings: a JSON number as it is, a number written for
// people when its reading is unambiguous. convention is the decimal mark
// ('.' or ',') the writer's other numbers show, 0 when they show none, and
// conflict says they show both; integer says only an integer is wanted
// (then a lone separator before three digits is read as grouping when no
// convention settles it). It returns the JSON number text and a note on
// what was interpreted ("" when s was plain JSON), or ok false: s is no
// number, or it could be read two ways; NumberHint says what to write.
func ReadNumber(s string, integer bool, convention byte, conflict bool) (out, note string, ok bool) {
	return numbers{convention: convention, conflict: conflict}.read(strings.TrimSpace(s), integer, !integer)
}
