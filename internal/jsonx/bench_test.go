package jsonx

import (
	"strconv"
	"strings"
	"testing"
)

// messyAnswer is a ~2 KB answer with the habits of real models: prose, a
// reasoning block, a fence, comments, single quotes, Python literals,
// trailing commas, an unescaped quote, a raw newline and an ellipsis.
var messyAnswer = `<think>
The user wants the invoice fields. The vendor is "Northwind Traders" and the total is 1,250.50 EUR.
I will list the line items as they appear. Draft: {"vendor": "Northwind"}. Fine.
</think>
Sure! Here is the extracted invoice, following the schema you gave:

` + "```json" + `
{
  // header fields
  "invoice_number": "INV-2024-0042",
  "vendor": {'name': 'Northwind Traders', 'vat': 'DE123456789', 'address': "12 Main Street
Springfield"},
  "issued": "2024-03-18",
  "due": None,
  "paid": False,
  "currency": "EUR",
  "total": "1250.50",
  "note": "Customer said "urgent" twice",
  "line_items": [
    {"sku": "CH-01", "description": "Chai, 24 bags", "quantity": 10, "unit_price": 18.00, "discount": NaN,},
    {"sku": "CO-02", "description": "Coffee beans, 1 kg", "quantity": 4, "unit_price": 21.50,},
    {"sku": "SU-07", "description": "Sugar cubes", "quantity": 12, "unit_price": 3.25,},
    {"sku": "TE-11", "description": "Green tea, 50 bags", "quantity": 6, "unit_price": 9.90,},
    {"sku": "MU-03", "description": "Mugs, ceramic", "quantity": 24, "unit_price": 4.75,},
    {"sku": "SP-19", "description": "Teaspoons, steel", "quantity": 24, "unit_price": 1.20,},
    {"sku": "NA-04", "description": "Napkins, 500 pack", "quantity": 3, "unit_price": 6.40,},
    {"sku": "FI-08", "description": "Coffee filters #4", "quantity": 5, "unit_price": 2.95,},
    ...
  ],
  /* totals */
  "subtotal": 1190.00,
  "tax": 60.50,
  "tags": ['food', 'office', 'recurring',],
}
` + "```" + `

A few notes on the extraction:
- The total was written as "1.250,50 €" in the document; I normalised it.
- The due date was not stated, so it is null.
- The VAT number appears in the footer of page 2, next to the bank details.
- Only the first eight line items are shown [1]; the rest follow the same pattern.
- Quantities are taken from the "Qty" column; unit prices exclude VAT.
Let me know if you need the remaining items or a different format!
`

func BenchmarkFindRepair(b *testing.B) {
	b.SetBytes(int64(len(messyAnswer)))
	b.ReportAllocs()
	for b.Loop() {
		cs := Find(messyAnswer, PolicyCoerce)
		if len(cs) == 0 || !strings.HasPrefix(string(cs[0].JSON), `{"invoice_number"`) {
			b.Fatalf("unexpected result %v", cs)
		}
	}
}

// BenchmarkFindHostile runs inputs built to trigger every lookahead and
// re-scan, with scalar candidates asked for; ns/op should grow linearly
// with the size (MB/s about the same for 16 and 256 KiB).
func BenchmarkFindHostile(b *testing.B) {
	units := map[string]string{
		"braces":      `{[{"a` + "\n",
		"quotes":      `{"a": "x" y "z" ` + "\n",
		"escaped":     `{\"a\": \"`,
		"commas":      `[1,,"a", b, {"c": "d`,
		"prose-brace": `see {x} and [y] {"k": `,
		"newlines":    "{\"a\": \"line\n\n\n   \n",
		"triple":      "{\"a\": \"\"\"x\" ''' ",
		"ticks":       "{\"a\": ```x\n[```, ",
		"keys":        `{"a": "x", é: "y", 2.5: "z" `,
		"scalars":     "Answer: 1\nyes 2 ```\n3\n```\n<think>4</think>",
	}
	for name, unit := range units {
		for _, size := range []int{16 << 10, 256 << 10} {
			text := strings.Repeat(unit, size/len(unit))
			b.Run(name+"/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					FindWith(text, FindOptions{Policy: PolicySyntax, Scalars: AnyScalar})
				}
			})
		}
	}
}
