// Package invoices is a user's extraction code: an invoice schema, a rule
// the schema cannot say (the total is the sum of the lines), and a function
// the rest of the program calls.
package invoices

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/llm"
	"github.com/extractq/extractq/schema"
)

// Invoice is what is extracted.
type Invoice struct {
	Vendor string  `json:"vendor"`
	Lines  []Line  `json:"lines"`
	Total  float64 `json:"total"`
}

// Line is one invoice line.
type Line struct {
	Item   string  `json:"item"`
	Amount float64 `json:"amount"`
}

// Schema is the invoice's JSON Schema.
var Schema = mustCompile(`{
  "type": "object",
  "properties": {
    "vendor": {"type": "string", "minLength": 1},
    "lines": {"type": "array", "minItems": 1, "items": {"type": "object",
      "properties": {"item": {"type": "string"}, "amount": {"type": "number"}},
      "required": ["item", "amount"], "additionalProperties": false}},
    "total": {"type": "number"}
  },
  "required": ["vendor", "lines", "total"],
  "additionalProperties": false
}`)

func mustCompile(src string) *schema.Schema {
	s, err := schema.Compile([]byte(src))
	if err != nil {
		panic(err)
	}
	return s
}

// TotalIsSum is a validator: the total must equal the sum of the lines.
func TotalIsSum(_ context.Context, value json.RawMessage) []llm.Violation {
	var inv Invoice
	if err := json.Unmarshal(value, &inv); err != nil {
		return []llm.Violation{{Message: "not an invoice: " + err.Error()}}
	}
	sum := 0.0
	for _, l := range inv.Lines {
		sum += l.Amount
	}
	if math.Abs(sum-inv.Total) > 0.005 {
		return []llm.Violation{{Pointer: "/total", Keyword: "sum", Message: fmt.Sprintf("is %.2f but the lines add up to %.2f", inv.Total, sum)}}
	}
	return nil
}

// NewExtractor is the program's extractor: the schema's rules plus ours.
func NewExtractor(p llm.Provider, opts ...extractq.Option) (*extractq.Extractor, error) {
	return extractq.New(append([]extractq.Option{extractq.WithProvider(p), extractq.WithValidator(TotalIsSum)}, opts...)...)
}

// Extract extracts one invoice.
func Extract(ctx context.Context, x *extractq.Extractor, document string) (Invoice, *llm.Result, error) {
	var inv Invoice
	res, err := x.Extract(ctx, document, Schema)
	if err != nil {
		return inv, res, err
	}
	return inv, res, res.Decode(&inv)
}
