package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"time"

	"github.com/extractq/extractq/llm"
)

// The OpenAI Batch API: the request lines go up as a JSONL file (POST
// /files, purpose "batch"), a batch is created from it (POST /batches,
// completion window 24h), polled (GET /batches/{id}), and its output and
// error files are read back (GET /files/{id}/content). Each line's body is
// exactly what Chat sends online, so an answer means the same either way.

var _ llm.Batcher = (*openAIProvider)(nil)

// openAIBatchEndpoint is the endpoint every line addresses.
const openAIBatchEndpoint = "/v1/chat/completions"

type oaiBatchLine struct {
	CustomID string      `json:"custom_id"`
	Method   string      `json:"method"`
	URL      string      `json:"url"`
	Body     *oaiRequest `json:"body"`
}

type oaiBatch struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	OutputFileID string `json:"output_file_id"`
	ErrorFileID  string `json:"error_file_id"`
	CreatedAt    int64  `json:"created_at"`
	Errors       *struct {
		Data []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Line    *int   `json:"line"`
		} `json:"data"`
	} `json:"errors"`
	RequestCounts struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"request_counts"`
}

type oaiBatchResultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// BatchLimits are the limits of one batch (zero when the server has none).
func (p *openAIProvider) BatchLimits() llm.BatchLimits { return p.caps.Batch }

func (p *openAIProvider) authHeader() http.Header {
	hdr := http.Header{}
	if p.apiKey != "" {
		hdr.Set("Authorization", "Bearer "+p.apiKey)
	}
	return hdr
}

// batchLine encodes one request line, without its newline.
func (p *openAIProvider) batchLine(r llm.BatchRequest) ([]byte, error) {
	body, _, err := p.buildRequest(r.Request, p.learn.snapshot())
	if err != nil {
		return nil, err
	}
	return marshal(&oaiBatchLine{CustomID: r.CustomID, Method: http.MethodPost, URL: openAIBatchEndpoint, Body: body})
}

// SplitBatch groups reqs into batches within the limits (lines plus newlines).
func (p *openAIProvider) SplitBatch(reqs []llm.BatchRequest) ([][]llm.BatchRequest, error) {
	return p.splitBatch(reqs, p.caps.Batch, 1, p.batchLine)
}

// SubmitBatch uploads the lines and creates the batch.
func (p *openAIProvider) SubmitBatch(ctx context.Context, reqs []llm.BatchRequest) (llm.BatchID, error) {
	var file bytes.Buffer
	for _, r := range reqs {
		line, err := p.batchLine(r)
		if err != nil {
			return "", batchLineError(err, r.CustomID)
		}
		file.Write(line)
		file.WriteByte('\n')
	}
	if err := p.checkBatch(len(reqs), int64(file.Len()), p.caps.Batch); err != nil {
		return "", err
	}
	fileID, err := p.upload(ctx, file.Bytes())
	if err != nil {
		return "", err
	}
	payload, err := marshal(map[string]any{"input_file_id": fileID, "endpoint": openAIBatchEndpoint, "completion_window": "24h"})
	if err != nil {
		return "", p.localError("cannot encode the batch: " + err.Error())
	}
	r, err := p.send(ctx, p.baseURL+"/batches", p.authHeader(), "application/json", payload)
	if err != nil {
		return "", err
	}
	var b oaiBatch
	if err := json.Unmarshal(r.body, &b); err != nil || b.ID == "" {
		return "", p.badResponse(r, "the answer is not a batch", err)
	}
	return llm.BatchID(b.ID), nil
}

// upload sends the JSONL file (purpose "batch") and returns its id.
func (p *openAIProvider) upload(ctx context.Context, jsonl []byte) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.WriteField("purpose", "batch"); err != nil {
		return "", p.localError("cannot encode the upload: " + err.Error())
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="extractq-batch.jsonl"`)
	h.Set("Content-Type", "application/jsonl")
	fw, err := mw.CreatePart(h)
	if err == nil {
		_, err = fw.Write(jsonl)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", p.localError("cannot encode the upload: " + err.Error())
	}
	r, err := p.send(ctx, p.baseURL+"/files", p.authHeader(), mw.FormDataContentType(), body.Bytes())
	if err != nil {
		return "", err
	}
	var f struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.body, &f); err != nil || f.ID == "" {
		return "", p.badResponse(r, "the answer is not a file object", err)
	}
	return f.ID, nil
}

func (p *openAIProvider) batch(ctx context.Context, id llm.BatchID) (*oaiBatch, llm.BatchStatus, error) {
	r, err := p.get(ctx, p.baseURL+"/batches/"+url.PathEscape(string(id)), p.authHeader(), p.maxBody)
	if err != nil {
		return nil, llm.BatchStatus{}, err
	}
	return p.batchStatus(r)
}

func (p *openAIProvider) batchStatus(r *reply) (*oaiBatch, llm.BatchStatus, error) {
	var b oaiBatch
	if err := json.Unmarshal(r.body, &b); err != nil || b.ID == "" {
		return nil, llm.BatchStatus{}, p.badResponse(r, "the answer is not a batch", err)
	}
	st := llm.BatchStatus{
		ID: llm.BatchID(b.ID), ProviderStatus: b.Status, CreatedAt: time.Unix(b.CreatedAt, 0).UTC(),
		Counts: llm.BatchCounts{Total: b.RequestCounts.Total, Succeeded: b.RequestCounts.Completed, Errored: b.RequestCounts.Failed},
	}
	switch b.Status {
	case "completed":
		st.State = llm.BatchEnded
	case "expired":
		st.State = llm.BatchExpired
	case "cancelled":
		st.State = llm.BatchCanceled
	case "failed":
		st.State = llm.BatchFailed
		st.Failure = &llm.Error{Provider: p.name, Class: llm.ClassInvalidRequest, Message: "the batch failed validation"}
		if b.Errors != nil && len(b.Errors.Data) > 0 {
			d := b.Errors.Data[0]
			st.Failure.Type, st.Failure.Message = d.Code, p.red.String(d.Message)
			if d.Code == "token_limit_exceeded" {
				st.Failure.Class = llm.ClassRateLimited
			}
		}
	default: // validating, in_progress, finalizing, cancelling
		st.State = llm.BatchRunning
	}
	return &b, st, nil
}

// BatchStatus polls a batch.
func (p *openAIProvider) BatchStatus(ctx context.Context, id llm.BatchID) (llm.BatchStatus, error) {
	_, st, err := p.batch(ctx, id)
	return st, err
}

// CancelBatch asks for the batch to be cancelled.
func (p *openAIProvider) CancelBatch(ctx context.Context, id llm.BatchID) (llm.BatchStatus, error) {
	r, err := p.send(ctx, p.baseURL+"/batches/"+url.PathEscape(string(id))+"/cancel", p.authHeader(), "", nil)
	if err != nil {
		return llm.BatchStatus{}, err
	}
	_, st, err := p.batchStatus(r)
	return st, err
}

// BatchOutput reads the output and error files of a final batch.
func (p *openAIProvider) BatchOutput(ctx context.Context, id llm.BatchID) (llm.BatchStatus, []llm.BatchLine, error) {
	b, st, err := p.batch(ctx, id)
	if err != nil {
		return st, nil, err
	}
	if !st.State.Final() {
		return st, nil, p.localError("batch " + string(id) + " is still " + b.Status + "; poll until it is final")
	}
	var lines []llm.BatchLine
	for _, fileID := range []string{b.OutputFileID, b.ErrorFileID} {
		if fileID == "" {
			continue
		}
		r, err := p.get(ctx, p.baseURL+"/files/"+url.PathEscape(fileID)+"/content", p.authHeader(), maxBatchResultBytes)
		if err != nil {
			return st, nil, err
		}
		more, err := splitBatchLines(r.body)
		if err != nil {
			return st, nil, p.badResponse(r, "a line of batch file "+fileID+" is not a batch result", err)
		}
		lines = append(lines, more...)
	}
	return st, lines, nil
}

// ParseBatchLine parses the result line answering req.
func (p *openAIProvider) ParseBatchLine(req llm.BatchRequest, raw []byte, final llm.BatchStatus) llm.BatchResult {
	if raw == nil {
		return p.missingResult(req.CustomID, final)
	}
	var l oaiBatchResultLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return llm.BatchResult{CustomID: req.CustomID, Err: &llm.Error{Provider: p.name, Class: llm.ClassBadResponse, Message: "the batch result line is not JSON: " + err.Error()}}
	}
	return p.batchResult(req, l)
}

func (p *openAIProvider) batchResult(req llm.BatchRequest, l oaiBatchResultLine) llm.BatchResult {
	res := llm.BatchResult{CustomID: req.CustomID}
	switch {
	case l.Response != nil && l.Response.StatusCode >= 200 && l.Response.StatusCode <= 299:
		body, wrapped, err := p.buildRequest(req.Request, p.learn.snapshot())
		if err != nil {
			res.Err = err
			return res
		}
		res.Response, res.Err = p.parseResponse(&reply{status: l.Response.StatusCode, body: []byte(l.Response.Body)}, body.Tools, wrapped)
		if res.Response != nil {
			res.Response.Batch = true
		}
	case l.Response != nil:
		raw := []byte(l.Response.Body)
		ae := parseAPIError(raw)
		res.Err = p.learnFromLine(&llm.Error{Provider: p.name, Class: classifyStatus(l.Response.StatusCode, ae), Status: l.Response.StatusCode,
			Type: p.red.String(ae.Type), Message: p.red.String(ae.Message), Raw: raw})
	case l.Error != nil:
		e := &llm.Error{Provider: p.name, Class: llm.ClassServer, Type: l.Error.Code, Message: p.red.String(l.Error.Message)}
		switch l.Error.Code {
		case "batch_expired":
			e.Class = llm.ClassBatchExpired
		case "batch_cancelled":
			e.Class = llm.ClassBatchCanceled
		}
		res.Err = e
	default:
		res.Err = &llm.Error{Provider: p.name, Class: llm.ClassBadResponse, Message: "the batch result line has neither a response nor an error"}
	}
	return res
}
