package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/extractq/extractq/llm"
)

// Published batch limits (OpenAI Batch API guide; Anthropic Message Batches
// guide), per batch.
var (
	openAIBatchLimits    = llm.BatchLimits{MaxRequests: 50_000, MaxBytes: 200 << 20}
	anthropicBatchLimits = llm.BatchLimits{MaxRequests: 100_000, MaxBytes: 256 << 20}
)

// OpenAIBatchLimits are the OpenAI Batch API's limits, for OpenAI-compatible
// servers that implement it (the simulator registers them for its family).
func OpenAIBatchLimits() llm.BatchLimits { return openAIBatchLimits }

// batchFamilies are the families whose official endpoint has a batch API.
// Other OpenAI-compatible presets are left out until their batch APIs are
// checked against the OpenAI one.
var batchFamilies = struct {
	sync.RWMutex
	m map[string]llm.BatchLimits
}{m: map[string]llm.BatchLimits{"openai": openAIBatchLimits, "anthropic": anthropicBatchLimits}}

// RegisterBatchLimits declares that a registered family serves a batch API
// with these limits (its providers report them in Capabilities().Batch).
func RegisterBatchLimits(family string, l llm.BatchLimits) {
	batchFamilies.Lock()
	defer batchFamilies.Unlock()
	batchFamilies.m[strings.ToLower(family)] = l
}

// BatchLimitsFor returns the batch limits of a provider family; ok is false
// for a family without a batch API.
func BatchLimitsFor(family string) (l llm.BatchLimits, ok bool) {
	batchFamilies.RLock()
	defer batchFamilies.RUnlock()
	l, ok = batchFamilies.m[strings.ToLower(family)]
	return l, ok && l.Supported()
}

// BatchFamilies lists the families with a batch API, for error messages.
func BatchFamilies() []string {
	batchFamilies.RLock()
	defer batchFamilies.RUnlock()
	out := make([]string, 0, len(batchFamilies.m))
	for f := range batchFamilies.m {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// maxBatchResultBytes caps a downloaded results file. A full OpenAI batch
// (50,000 answers of a few KiB) stays well below it.
const maxBatchResultBytes = 1 << 30

// splitBatchLines cuts a JSONL results body into lines keyed by their
// custom_id, the bytes kept as received.
func splitBatchLines(body []byte) ([]llm.BatchLine, error) {
	var out []llm.BatchLine
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var l struct {
			CustomID string `json:"custom_id"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, err
		}
		if l.CustomID == "" {
			return nil, errors.New("a result line has no custom_id")
		}
		out = append(out, llm.BatchLine{CustomID: l.CustomID, Raw: line})
	}
	return out, nil
}

// splitBatch groups reqs in order so that no group holds more than
// l.MaxRequests requests or more than l.MaxBytes encoded bytes (each
// request costs its encoded size plus overhead bytes: a newline, a comma).
func (b *base) splitBatch(reqs []llm.BatchRequest, l llm.BatchLimits, overhead int64, encode func(llm.BatchRequest) ([]byte, error)) ([][]llm.BatchRequest, error) {
	if !l.Supported() {
		return nil, b.localError(b.name + " has no batch API; use an online pool")
	}
	var out [][]llm.BatchRequest
	start, size := 0, int64(0)
	seen := make(map[string]bool, len(reqs))
	for i, r := range reqs {
		if err := llm.ValidBatchCustomID(r.CustomID); err != nil {
			return nil, b.localError("batch request " + err.Error())
		}
		if seen[r.CustomID] {
			return nil, b.localError(fmt.Sprintf("batch request custom id %q appears twice; each request needs its own", r.CustomID))
		}
		seen[r.CustomID] = true
		line, err := encode(r)
		if err != nil {
			return nil, batchLineError(err, r.CustomID)
		}
		n := int64(len(line)) + overhead
		if n > l.MaxBytes {
			return nil, b.localError(fmt.Sprintf("batch request %s is %d bytes, more than a whole batch may hold (%d); send it online", r.CustomID, n, l.MaxBytes))
		}
		if i-start == l.MaxRequests || size+n > l.MaxBytes {
			out = append(out, reqs[start:i:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(reqs) {
		out = append(out, reqs[start:])
	}
	return out, nil
}

// batchLineError names the request a local error is about.
func batchLineError(err error, customID string) error {
	if e, ok := err.(*llm.Error); ok {
		c := *e
		c.Message = "batch request " + customID + ": " + c.Message
		return &c
	}
	return fmt.Errorf("batch request %s: %w", customID, err)
}

// checkBatch refuses a batch SubmitBatch cannot send as one.
func (b *base) checkBatch(n int, size int64, l llm.BatchLimits) error {
	switch {
	case !l.Supported():
		return b.localError(b.name + " has no batch API; use an online pool")
	case n == 0:
		return b.localError("the batch has no requests")
	case n > l.MaxRequests || size > l.MaxBytes:
		return &llm.Error{Provider: b.name, Class: llm.ClassTooLarge, Message: fmt.Sprintf(
			"the batch has %d requests and %d bytes; one batch holds at most %d requests and %d bytes: split it with SplitBatch",
			n, size, l.MaxRequests, l.MaxBytes)}
	}
	return nil
}

// get fetches url with the credentials in hdr, body capped at limit.
func (b *base) get(ctx context.Context, url string, hdr http.Header, limit int64) (*reply, error) {
	return b.exchange(ctx, ctx, http.MethodGet, url, hdr, "", nil, limit)
}

// send posts payload (already encoded, of contentType) to url.
func (b *base) send(ctx context.Context, url string, hdr http.Header, contentType string, payload []byte) (*reply, error) {
	return b.exchange(ctx, ctx, http.MethodPost, url, hdr, contentType, payload, b.maxBody)
}

// missingResult is the result of a request the provider reported nothing
// for: the batch's failure when it was refused as a whole, expired or
// canceled with its batch, else a server-side loss.
func (b *base) missingResult(customID string, st llm.BatchStatus) llm.BatchResult {
	if st.State == llm.BatchFailed && st.Failure != nil {
		e := *st.Failure
		return llm.BatchResult{CustomID: customID, Err: &e}
	}
	e := &llm.Error{Provider: b.name, Class: llm.ClassServer, Message: "the batch ended without a result for this request"}
	switch st.State {
	case llm.BatchExpired:
		e.Class, e.Message = llm.ClassBatchExpired, "the batch expired before this request ran"
	case llm.BatchCanceled:
		e.Class, e.Message = llm.ClassBatchCanceled, "the batch was canceled before this request ran"
	}
	return llm.BatchResult{CustomID: customID, Err: e}
}

// BatchPrice is the share of the list price a batch request costs: OpenAI's
// Batch API and Anthropic's Message Batches both bill half the standard
// input and output prices.
const BatchPrice = 0.5

// EstimateBatchCost estimates the list price of one batch request: the
// online price (EstimateCost) times BatchPrice.
func EstimateBatchCost(model string, u llm.Usage) (usd float64, known bool) {
	usd, known = EstimateCost(model, u)
	return usd * BatchPrice, known
}
