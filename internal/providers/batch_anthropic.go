package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/extractq/extractq/llm"
)

// Anthropic Message Batches: the requests go up in one body (POST
// /v1/messages/batches), the batch is polled (GET …/{id}) and its results
// are read as JSONL (GET …/{id}/results). Each request's params are exactly
// what Chat sends online.

var _ llm.Batcher = (*anthropicProvider)(nil)

type antBatchRequest struct {
	CustomID string      `json:"custom_id"`
	Params   *antRequest `json:"params"`
}

type antBatch struct {
	ID                string  `json:"id"`
	Type              string  `json:"type"`
	ProcessingStatus  string  `json:"processing_status"`
	CreatedAt         string  `json:"created_at"`
	CancelInitiatedAt *string `json:"cancel_initiated_at"`
	ResultsURL        *string `json:"results_url"`
	RequestCounts     struct {
		Processing int `json:"processing"`
		Succeeded  int `json:"succeeded"`
		Errored    int `json:"errored"`
		Canceled   int `json:"canceled"`
		Expired    int `json:"expired"`
	} `json:"request_counts"`
}

type antBatchResultLine struct {
	CustomID string `json:"custom_id"`
	Result   struct {
		Type    string          `json:"type"` // succeeded, errored, canceled, expired
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	} `json:"result"`
}

// antErrorStatus is the HTTP status an online call gets for each error
// type, so an errored batch line is classified as that call would be.
var antErrorStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
	"not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
	"timeout_error": 504, "overloaded_error": 529,
}

// BatchLimits are the limits of one batch.
func (p *anthropicProvider) BatchLimits() llm.BatchLimits { return p.caps.Batch }

func (p *anthropicProvider) headers() http.Header {
	hdr := http.Header{}
	hdr.Set("anthropic-version", anthropicVersion)
	if p.apiKey != "" {
		hdr.Set("x-api-key", p.apiKey)
	}
	return hdr
}

func (p *anthropicProvider) batchEntry(r llm.BatchRequest) ([]byte, error) {
	body, _, err := p.buildRequest(r.Request, p.learn.snapshot())
	if err != nil {
		return nil, err
	}
	return marshal(&antBatchRequest{CustomID: r.CustomID, Params: body})
}

// SplitBatch groups reqs into batches within the limits (entries plus the
// commas between them).
func (p *anthropicProvider) SplitBatch(reqs []llm.BatchRequest) ([][]llm.BatchRequest, error) {
	return p.splitBatch(reqs, p.caps.Batch, 1, p.batchEntry)
}

// SubmitBatch creates the batch.
func (p *anthropicProvider) SubmitBatch(ctx context.Context, reqs []llm.BatchRequest) (llm.BatchID, error) {
	var body bytes.Buffer
	body.WriteString(`{"requests":[`)
	for i, r := range reqs {
		entry, err := p.batchEntry(r)
		if err != nil {
			return "", batchLineError(err, r.CustomID)
		}
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(entry)
	}
	body.WriteString(`]}`)
	if err := p.checkBatch(len(reqs), int64(body.Len()), p.caps.Batch); err != nil {
		return "", err
	}
	r, err := p.send(ctx, p.baseURL+"/v1/messages/batches", p.headers(), "application/json", body.Bytes())
	if err != nil {
		return "", err
	}
	_, st, err := p.batchStatus(r)
	return st.ID, err
}

func (p *anthropicProvider) batchStatus(r *reply) (*antBatch, llm.BatchStatus, error) {
	var b antBatch
	if err := json.Unmarshal(r.body, &b); err != nil || b.ID == "" || b.Type != "message_batch" {
		return nil, llm.BatchStatus{}, p.badResponse(r, "the answer is not a message batch", err)
	}
	c := b.RequestCounts
	st := llm.BatchStatus{
		ID: llm.BatchID(b.ID), ProviderStatus: b.ProcessingStatus,
		Counts: llm.BatchCounts{Total: c.Processing + c.Succeeded + c.Errored + c.Canceled + c.Expired,
			Succeeded: c.Succeeded, Errored: c.Errored, Expired: c.Expired, Canceled: c.Canceled},
	}
	st.CreatedAt, _ = time.Parse(time.RFC3339Nano, b.CreatedAt)
	switch {
	case b.ProcessingStatus != "ended":
		st.State = llm.BatchRunning
	case b.CancelInitiatedAt != nil:
		st.State = llm.BatchCanceled
	case c.Expired > 0:
		st.State = llm.BatchExpired
	default:
		st.State = llm.BatchEnded
	}
	return &b, st, nil
}

func (p *anthropicProvider) batchURL(id llm.BatchID) string {
	return p.baseURL + "/v1/messages/batches/" + url.PathEscape(string(id))
}

// BatchStatus polls a batch.
func (p *anthropicProvider) BatchStatus(ctx context.Context, id llm.BatchID) (llm.BatchStatus, error) {
	r, err := p.get(ctx, p.batchURL(id), p.headers(), p.maxBody)
	if err != nil {
		return llm.BatchStatus{}, err
	}
	_, st, err := p.batchStatus(r)
	return st, err
}

// CancelBatch asks for the batch to be canceled.
func (p *anthropicProvider) CancelBatch(ctx context.Context, id llm.BatchID) (llm.BatchStatus, error) {
	r, err := p.send(ctx, p.batchURL(id)+"/cancel", p.headers(), "", nil)
	if err != nil {
		return llm.BatchStatus{}, err
	}
	_, st, err := p.batchStatus(r)
	return st, err
}

// BatchOutput reads the result lines of an ended batch.
func (p *anthropicProvider) BatchOutput(ctx context.Context, id llm.BatchID) (llm.BatchStatus, []llm.BatchLine, error) {
	st, err := p.BatchStatus(ctx, id)
	if err != nil {
		return st, nil, err
	}
	if !st.State.Final() {
		return st, nil, p.localError("batch " + string(id) + " is still " + st.ProviderStatus + "; poll until it has ended")
	}
	r, err := p.get(ctx, p.batchURL(id)+"/results", p.headers(), maxBatchResultBytes)
	if err != nil {
		return st, nil, err
	}
	lines, err := splitBatchLines(r.body)
	if err != nil {
		return st, nil, p.badResponse(r, "a line of the batch results is not a batch result", err)
	}
	return st, lines, nil
}

// ParseBatchLine parses the result line answering req.
func (p *anthropicProvider) ParseBatchLine(req llm.BatchRequest, raw []byte, final llm.BatchStatus) llm.BatchResult {
	if raw == nil {
		return p.missingResult(req.CustomID, final)
	}
	var l antBatchResultLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return llm.BatchResult{CustomID: req.CustomID, Err: &llm.Error{Provider: p.name, Class: llm.ClassBadResponse, Message: "the batch result line is not JSON: " + err.Error()}}
	}
	return p.batchResult(req, l)
}

func (p *anthropicProvider) batchResult(req llm.BatchRequest, l antBatchResultLine) llm.BatchResult {
	res := llm.BatchResult{CustomID: req.CustomID}
	switch l.Result.Type {
	case "succeeded":
		body, wrapped, err := p.buildRequest(req.Request, p.learn.snapshot())
		if err != nil {
			res.Err = err
			return res
		}
		res.Response, res.Err = p.parseResponse(&reply{status: http.StatusOK, body: p.red.Bytes(l.Result.Message)}, body, wrapped)
		if res.Response != nil {
			res.Response.Batch = true
		}
	case "errored":
		raw := p.red.Bytes(l.Result.Error)
		ae := parseAPIError(raw)
		status, ok := antErrorStatus[ae.Type]
		if !ok {
			status = http.StatusInternalServerError
		}
		res.Err = p.learnFromLine(&llm.Error{Provider: p.name, Class: classifyStatus(status, ae), Status: status, Type: p.red.String(ae.Type),
			Message: p.red.String(ae.Message), Raw: raw})
	case "expired":
		res.Err = &llm.Error{Provider: p.name, Class: llm.ClassBatchExpired, Type: "expired", Message: "the batch expired before this request ran"}
	case "canceled":
		res.Err = &llm.Error{Provider: p.name, Class: llm.ClassBatchCanceled, Type: "canceled", Message: "the batch was canceled before this request ran"}
	default:
		res.Err = &llm.Error{Provider: p.name, Class: llm.ClassBadResponse, Message: "unknown batch result type " + l.Result.Type}
	}
	return res
}
