package llm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// BatchLimits are what one provider batch may hold. The zero value means
// the provider has no batch API.
type BatchLimits struct {
	// MaxRequests is the most request lines in one batch (OpenAI 50,000,
	// Anthropic 100,000).
	MaxRequests int `json:"max_requests"`
	// MaxBytes is the largest input one batch may be: the uploaded file
	// (OpenAI, 200 MB) or the request body (Anthropic, 256 MB).
	MaxBytes int64 `json:"max_bytes"`
}

// Supported reports whether the provider has a batch API.
func (l BatchLimits) Supported() bool { return l.MaxRequests > 0 }

// BatchRequest is one request of a batch: the same Request an online call
// sends, under a custom id that finds its result again (BatchCustomID).
type BatchRequest struct {
	CustomID string
	Request  Request
}

// BatchID is a provider's id of a batch ("batch_…", "msgbatch_…").
type BatchID string

// BatchState is a batch's provider status, normalised across APIs.
type BatchState string

// Batch states. Only BatchRunning is not final; the results of a final
// batch can be read (a failed batch has none: see BatchStatus.Failure).
const (
	BatchRunning  BatchState = "running"  // validating, in progress, finalizing, cancelling
	BatchEnded    BatchState = "ended"    // every request has a result (succeeded or not)
	BatchExpired  BatchState = "expired"  // the window passed; unfinished requests expired
	BatchCanceled BatchState = "canceled" // canceled; unfinished requests canceled
	BatchFailed   BatchState = "failed"   // refused as a whole; no request ran
)

// Final reports whether the batch will not change any more.
func (s BatchState) Final() bool { return s != BatchRunning && s != "" }

// BatchCounts are a batch's requests by outcome, as the provider reports
// them (OpenAI reports only completed and failed; expired ones count as
// failed there until the results are read).
type BatchCounts struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Errored   int `json:"errored"`
	Expired   int `json:"expired"`
	Canceled  int `json:"canceled"`
}

// BatchStatus is what the provider says about a batch.
type BatchStatus struct {
	ID    BatchID
	State BatchState
	// ProviderStatus is the provider's own status word ("finalizing",
	// "in_progress", "ended"), for operators.
	ProviderStatus string
	Counts         BatchCounts
	CreatedAt      time.Time
	// Failure says why a BatchFailed batch was refused. Type
	// "token_limit_exceeded" (class ClassRateLimited) means the batch was
	// too large for the enqueued-token quota: split it, or wait for running
	// batches to end, and submit again.
	Failure *Error
}

// BatchResult is the outcome of one request of a batch. Exactly one of
// Response and Err is set. Err is an *Error: a line the provider answered
// with an error status is classified as the online call would be; an
// expired or canceled line is ClassBatchExpired or ClassBatchCanceled,
// both retryable (send it again in a later batch; it never spends a re-ask).
type BatchResult struct {
	CustomID string
	Response *Response
	Err      error
}

// BatchLine is one result line of a final batch as the provider wrote it:
// stored as it is, it can be parsed later, by any process, with
// Batcher.ParseBatchLine and the request it answers.
type BatchLine struct {
	CustomID string
	Raw      []byte
}

// Batcher is implemented by providers with a batch API (OpenAI Batch API,
// Anthropic Message Batches): requests are queued and answered within
// hours at a discount. Check Limits().Supported() before use: an adapter
// may implement Batcher for an API family whose server (a compatible
// endpoint) has no batch API.
//
// Reading results is two steps so that a batch outlives the process that
// submitted it: BatchOutput needs only the batch id (whoever polls the
// batch stores the lines), ParseBatchLine needs the request a line answers
// (whoever holds that job parses it). BatchResults does both at once.
type Batcher interface {
	// BatchLimits are the most one batch may hold.
	BatchLimits() BatchLimits
	// SplitBatch groups reqs into batches within BatchLimits, in order,
	// measuring each request as SubmitBatch encodes it. A request that
	// cannot be sent (bad custom id, a mode the model lacks, larger than a
	// whole batch) fails the split with an *Error naming its custom id.
	SplitBatch(reqs []BatchRequest) ([][]BatchRequest, error)
	// SubmitBatch uploads and creates one batch, each request carrying the
	// body an online Chat call would send. reqs must fit BatchLimits
	// (SplitBatch); errors are *Error.
	SubmitBatch(ctx context.Context, reqs []BatchRequest) (BatchID, error)
	// BatchStatus polls a batch.
	BatchStatus(ctx context.Context, id BatchID) (BatchStatus, error)
	// BatchOutput reads the result lines of a final batch (OpenAI's output
	// and error files, Anthropic's results), one per request the provider
	// reports on, with the batch's final status.
	BatchOutput(ctx context.Context, id BatchID) (BatchStatus, []BatchLine, error)
	// ParseBatchLine turns the line answering req into its result, the
	// answer parsed as Chat parses an online one and marked Response.Batch.
	// A nil raw line (the provider reported nothing for req) is judged by
	// final, the batch's final status: see BatchResult.
	ParseBatchLine(req BatchRequest, raw []byte, final BatchStatus) BatchResult
	// CancelBatch asks the provider to cancel a batch; requests already
	// answered keep their results.
	CancelBatch(ctx context.Context, id BatchID) (BatchStatus, error)
}

// BatchResults reads the results of a final batch: one per request of sent
// (the requests the batch was submitted with), in that order. A request
// the provider reports nothing for gets an error result.
func BatchResults(ctx context.Context, b Batcher, id BatchID, sent []BatchRequest) ([]BatchResult, error) {
	st, lines, err := b.BatchOutput(ctx, id)
	if err != nil {
		return nil, err
	}
	byID := make(map[string][]byte, len(lines))
	for _, l := range lines {
		byID[l.CustomID] = l.Raw
	}
	out := make([]BatchResult, len(sent))
	for i, req := range sent {
		out[i] = b.ParseBatchLine(req, byID[req.CustomID], st)
	}
	return out, nil
}

// Error classes of batch request lines (retryable: the request goes into a
// later batch, without spending a re-ask).
const (
	ClassBatchExpired  ErrorClass = "batch_expired"  // not run before the batch's window ended
	ClassBatchCanceled ErrorClass = "batch_canceled" // not run because the batch was canceled
)

// BatchCustomID is the custom id of a job's request in a re-ask round:
// "JOBID-rROUND". It fits every provider's rule (Anthropic: 1 to 64 of
// [a-zA-Z0-9_-]) when the job id does (extractq's job ids are 32 hex digits).
func BatchCustomID(jobID string, round int) string {
	return jobID + "-r" + strconv.Itoa(round)
}

// ParseBatchCustomID splits a custom id made by BatchCustomID.
func ParseBatchCustomID(id string) (jobID string, round int, ok bool) {
	i := strings.LastIndex(id, "-r")
	if i <= 0 {
		return "", 0, false
	}
	round, err := strconv.Atoi(id[i+2:])
	if err != nil || round < 1 {
		return "", 0, false
	}
	return id[:i], round, true
}

// ValidBatchCustomID reports why id cannot be a custom id, or nil.
func ValidBatchCustomID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("custom id %q: must be 1 to 64 characters", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("custom id %q: only letters, digits, _ and - are allowed", id)
		}
	}
	return nil
}
