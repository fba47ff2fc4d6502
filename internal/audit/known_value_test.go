package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/extractq/extractq/llm"
)

// TestAttemptRowsSameWithKnownValue checks toPending's skip of the JSON
// check of an attempt value equal to the record's (already checked) value:
// the attempt rows of a final ok record are byte for byte those of the
// same record written as not final, where no value is known and every
// attempt value is checked.
func TestAttemptRowsSameWithKnownValue(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tc := range []struct {
		name  string
		value json.RawMessage
	}{
		{"equal to the result", nil}, // set below to the record's value
		{"other valid JSON", json.RawMessage(`{"total":1}`)},
		{"invalid JSON", json.RawMessage(`{"total":`)},
		{"a prefix of the result", json.RawMessage(`{"total":12.5,`)},
		{"with a credential", json.RawMessage(`{"note":"api_key=abcdefgh12345"}`)},
		{"with NUL", json.RawMessage(`{"a":"x\u0000y"}`)},
	} {
		rec := testRecord("job-1", "doc-1", 1, 2, llm.OutcomeOK)
		last := &rec.Attempts[len(rec.Attempts)-1]
		last.Value = tc.value
		if tc.value == nil {
			last.Value = append(json.RawMessage(nil), rec.Value...)
		}
		final, err := toPending(rec, now)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		retrying := *rec
		retrying.Final = false
		checked, err := toPending(&retrying, now)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if final.result == nil || checked.result != nil {
			t.Fatalf("%s: the final record should have a result row and the retrying one none", tc.name)
		}
		if !bytes.Equal(final.attempts, checked.attempts) {
			t.Errorf("%s: attempt rows differ:\nfinal    %q\nretrying %q", tc.name, final.attempts, checked.attempts)
		}
	}
}
