package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, in := range []string{
		``, ` `, `{}`, ` { } `, `[]`, `[ ]`, `{"a":1}`, `{"a" : [1, 2.5e-3, -0, true, false, null, "x"]}`,
		`{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`,
		`"\u00e9\n\"\\\/\b\f\r\t"`, `"\u00g0"`, `"\u00e"`, `"\x"`, "\"a\tb\"", "\"\xff\xfe\"", "\"\x7f\"",
		`01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `1E-2`, `+1`, `0x1`, `1.5.5`, `-a`,
		`tru`, `true`, `truex`, `nul`, `null `, `nulll`, `falsy`, `"abc`, `"abc"x`, `{"a":1}}`, `[[]`,
		"\ufeff{}", "{}\x00", " \t\r\n1\n", "\v1", `[1]]`, `{"a":{"b":[{"c":{}}]}}`,
		deep(10000), deep(10001), deep(9999) + "x",
	} {
		if got, want := Valid([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("Valid(%.40q) = %v, encoding/json says %v", in, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\u12ab"`, `-1.5e+3`, `[true,false]`, `{"a":1,}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"invoice_number":"INV-2024-00017","date":"2024-03-05","vendor":{"name":"Acme GmbH","vat":"DE123456789"},` +
		`"lines":[{"description":"Widget \"large\"","quantity":3,"unit_price":19.99},{"description":"Shipping","quantity":1,"unit_price":4.5e0}],` +
		`"total":64.47,"currency":"EUR","paid":false,"notes":null}`)
	for _, c := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonx", Valid}, {"encoding-json", json.Valid}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if !c.valid(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
