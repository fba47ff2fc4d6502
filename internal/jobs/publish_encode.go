package jobs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/extractq/extractq/internal/jsonx"
)

// appendEnvelope appends env encoded as json.Marshal encodes it, byte for
// byte (TestAppendEnvelopeIsJSONMarshal), without reflection for the
// fields every job has: submit encodes one envelope per document. The
// fields a plain text job leaves empty (text_ref, metadata, original,
// pages, scanned, pictures, options) are encoded by json.Marshal when set.
func appendEnvelope(dst []byte, env *Envelope) ([]byte, error) {
	dst, err := appendEnvelopeHead(dst, env)
	return appendEnvelopeTail(dst, env, err)
}

// appendEnvelopeHead appends env's fields up to its schema: the ones of
// the document. appendEnvelopeTail appends the rest, the same for every
// job of a submission (MessageBatch encodes it once).
func appendEnvelopeHead(dst []byte, env *Envelope) ([]byte, error) {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(env.V), 10)
	dst = appendStringField(dst, "job_id", env.JobID)
	if env.Run != "" {
		dst = appendStringField(dst, "run", env.Run)
	}
	dst = appendStringField(dst, "document_id", env.DocumentID)
	dst = appendStringField(dst, "document_hash", env.DocumentHash)
	if env.Text != "" {
		dst = appendStringField(dst, "text", env.Text)
	}
	var err error
	if env.TextRef != nil {
		dst, err = appendValueField(dst, "text_ref", env.TextRef, err)
	}
	if len(env.Metadata) > 0 {
		dst, err = appendValueField(dst, "metadata", env.Metadata, err)
	}
	if env.Original != nil {
		dst, err = appendValueField(dst, "original", env.Original, err)
	}
	if env.OriginalHash != "" {
		dst = appendStringField(dst, "original_hash", env.OriginalHash)
	}
	if env.Reader != "" {
		dst = appendStringField(dst, "reader", env.Reader)
	}
	if len(env.Pages) > 0 {
		dst, err = appendValueField(dst, "pages", env.Pages, err)
	}
	if len(env.Scanned) > 0 {
		dst, err = appendValueField(dst, "scanned", env.Scanned, err)
	}
	if env.Pictures != nil {
		dst, err = appendValueField(dst, "pictures", env.Pictures, err)
	}
	return dst, err
}

// appendEnvelopeTail appends env's fields from its schema on and the
// closing brace, keeping err if set.
func appendEnvelopeTail(dst []byte, env *Envelope, err error) ([]byte, error) {
	dst = append(dst, `,"schema":{"name":`...)
	dst = jsonx.AppendString(dst, env.Schema.Name, true)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(env.Schema.Version), 10)
	dst = appendStringField(dst, "fingerprint", env.Schema.Fingerprint)
	dst = append(dst, '}')
	dst = appendStringField(dst, "provider", env.Provider)
	dst = appendStringField(dst, "model", env.Model)
	dst = appendStringField(dst, "pool", env.Pool)
	if env.Options != (Options{}) {
		dst, err = appendValueField(dst, "options", env.Options, err)
	}
	if t := env.SubmittedAt; t.Location() == time.UTC && t.Year() >= 0 && t.Year() <= 9999 {
		dst = append(dst, `,"submitted_at":"`...)
		dst = t.AppendFormat(dst, time.RFC3339Nano)
		dst = append(dst, '"')
	} else {
		dst, err = appendValueField(dst, "submitted_at", t, err)
	}
	if env.Resubmission != "" {
		dst = appendStringField(dst, "resubmission", env.Resubmission)
	}
	return append(dst, '}'), err
}

// appendStringField appends `,"name":` and s as a JSON string.
func appendStringField(dst []byte, name, s string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return jsonx.AppendString(dst, s, true)
}

// appendValueField appends `,"name":` and v as json.Marshal encodes it,
// keeping the first error.
func appendValueField(dst []byte, name string, v any, err error) ([]byte, error) {
	b, merr := json.Marshal(v)
	if merr != nil && err == nil {
		err = fmt.Errorf("json: field %s: %w", name, merr)
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return append(dst, b...), err
}
