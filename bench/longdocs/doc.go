package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Item is one known line item of a synthetic document.
type Item struct {
	SKU, Description string
	Quantity         int
	Price            string
	Line             [2]int // byte offsets of its line in the document
}

// Schema is the benchmark's schema: a document number and line items.
const Schema = `{"type":"object","required":["invoice_number","items"],"properties":{
"invoice_number":{"type":"string"},
"items":{"type":"array","minItems":1,"x-merge-key":"sku","items":{"type":"object","required":["sku","description","quantity","unit_price"],"properties":{
"sku":{"type":"string"},"description":{"type":"string"},"quantity":{"type":"integer"},"unit_price":{"type":"number"}}}}}}`

var words = strings.Fields(`the supplier agrees to deliver goods according to schedule and terms of
this agreement including warranty inspection acceptance payment invoices shipping insurance liability
notice termination confidentiality dispute resolution governing law force majeure assignment amendment`)

// Document builds a document of about tokens tokens (four characters a
// token) with items line items scattered through filler paragraphs.
func Document(seed uint64, tokens, items int) (string, []Item) {
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("Invoice number: INV-2026-0042\n\n")
	target := tokens * 4
	every := max(1, target/(items+1))
	var out []Item
	next := every
	sec := 0
	for b.Len() < target || len(out) < items {
		if b.Len() >= next && len(out) < items {
			it := Item{SKU: fmt.Sprintf("SKU-%05d", len(out)+1), Description: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + " kit",
				Quantity: 1 + r.IntN(50), Price: fmt.Sprintf("%d.%02d", 1+r.IntN(500), r.IntN(100))}
			start := b.Len()
			fmt.Fprintf(&b, "Item: sku=%s; description=%s; quantity=%d; unit_price=%s\n", it.SKU, it.Description, it.Quantity, it.Price)
			it.Line = [2]int{start, b.Len() - 1}
			out = append(out, it)
			next += every
			continue
		}
		if r.IntN(6) == 0 {
			sec++
			fmt.Fprintf(&b, "\n## Section %d\n\n", sec)
		}
		n := 8 + r.IntN(14)
		for i := range n {
			w := words[r.IntN(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			if i < n-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString(". ")
		if r.IntN(5) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String(), out
}
