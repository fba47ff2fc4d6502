package retry

import (
	"testing"
)

// gateStrings are strings the elision and placeholder expressions match,
// or nearly match.
var gateStrings = []string{
	"...", "..", "…", "etc", "ETC.", " Etc ", "and so on", "AND MORE.", "[...]", "...]", " \t... ", "\f…",
	"<name>", "[email]", "{x}", " <a> ", "\n[…]", "and", "x", "", "GBP", "Jane Doe", "sand", "ünd", "Ǆ", "K", "ſo",
	"and ſo on", "ETC\u0130", ". .", "\u2026\u2026",
}

// checkGates fails when a cheap first test rules out what its expression
// matches: mayPlaceholder for placeholder, mayHoldElision (on the
// value's JSON) for elisions.
func checkGates(t *testing.T, s string) {
	t.Helper()
	if placeholder.MatchString(s) && !mayPlaceholder(s) {
		t.Fatalf("mayPlaceholder(%q) is false, but it is a placeholder", s)
	}
	v := map[string]any{"k": []any{s}}
	doc, err := marshalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(elisions(v, nil, nil, "")) > 0 && !mayHoldElision(doc) {
		t.Fatalf("mayHoldElision(%s) is false, but %q is an elision", doc, s)
	}
}

// TestCheapGates checks the cheap first tests against their expressions,
// and that they rule out the usual answer.
func TestCheapGates(t *testing.T) {
	for _, s := range gateStrings {
		checkGates(t, s)
	}
	clean := []byte(`{"currency":"GBP","invoice_number":"VEN-25594","items":[{"name":"Total","qty":512}],"paid":false,"total":901.58,"vendor":"Jane Doe"}`)
	if mayHoldElision(clean) || mayPlaceholder("GBP") {
		t.Error("the cheap tests do not rule out a clean answer")
	}
}

// FuzzCheapGates checks the cheap first tests on any string.
func FuzzCheapGates(f *testing.F) {
	for _, s := range gateStrings {
		f.Add(s)
	}
	f.Fuzz(checkGates)
}
