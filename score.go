package extractq

import (
	"encoding/json"

	"github.com/extractq/extractq/eval"
	"github.com/extractq/extractq/schema"
)

// Score compares an extracted value with its label (the value a correct
// extraction gives) field by field, with the rules `extractq eval` uses:
// numbers by value (within a schema node's x-eval tolerance), dates as
// dates, strings with case and white space folded, enums exactly, arrays of
// objects item by item aligned by x-merge-key or best match. got may be nil
// (no valid value). Package eval sums scores into accuracy per field and
// cost per correct document.
func Score(expected, got json.RawMessage, s *schema.Schema) (*eval.DocScore, error) {
	return eval.Score(expected, got, s, eval.Options{})
}
