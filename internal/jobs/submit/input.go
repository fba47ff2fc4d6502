// Package submit queues documents as extraction jobs: it rejects bad input
// with a reason, registers the schema, stores the documents in the audit
// store (so failed or outdated ones can be resubmitted without the original
// files) and publishes the jobs asynchronously with bounded pending acks.
// It also resubmits dead letters and documents whose results were made
// under an older schema. Documents are read by package intake, the one
// reader `submit` and `extractq extract` share.
package submit

import (
	"fmt"

	"github.com/extractq/extractq/internal/intake"
)

// Doc is one input document, or the reason it was rejected.
type Doc = intake.Doc

// ErrBadInput is matched by the reasons input documents are rejected.
var ErrBadInput = intake.ErrBadInput

func reject(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadInput, fmt.Sprintf(format, a...))
}
