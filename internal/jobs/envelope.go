package jobs

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/extractq/extractq"
	"github.com/extractq/extractq/llm"
)

// EnvelopeVersion is the version of the job envelope this build writes.
// Workers refuse (and dead-letter) envelopes of a newer version.
const EnvelopeVersion = 1

// Envelope is one job on EXTRACTQ_JOBS: which document to extract with which
// schema, provider and engine options. The schema body is not carried: the
// worker resolves Schema.Fingerprint through the EXTRACTQ_SCHEMAS bucket
// once and caches it.
type Envelope struct {
	V     int    `json:"v"`
	JobID string `json:"job_id"`
	Run   string `json:"run,omitempty"`

	DocumentID string `json:"document_id"`
	// DocumentHash is the document's identity, sha256 hex: of the original
	// bytes when the job has an original (a PDF, an e-mail), so that a
	// re-read with a newer reader is the same document; else of the text.
	DocumentHash string `json:"document_hash"`
	// Text is the document inline; empty when TextRef is set.
	Text string `json:"text,omitempty"`
	// TextRef names the Object Store object holding a large document.
	TextRef  *ObjectRef      `json:"text_ref,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`

	// The fields below describe a document a format reader made (PDF,
	// e-mail, office file); a plain text job has none, and a worker that
	// predates them extracts from Text alone, so the version stays 1.

	// Original names the input's bytes in the Object Store, stored under
	// their sha256 (OriginalHash): what a worker re-reads for a scan's page
	// pictures or to send a PDF whole, and `submit resubmit --reread`
	// after a reader upgrade.
	Original     *ObjectRef `json:"original,omitempty"`
	OriginalHash string     `json:"original_hash,omitempty"`
	// Reader is the reader that made Text, "name/version" ("pdf/3").
	Reader string `json:"reader,omitempty"`
	// Pages are the document's pages as ranges of Text, so that a result's
	// sources carry the page.
	Pages []Page `json:"pages,omitempty"`
	// Scanned lists the pages without a text layer: the worker shows their
	// pictures (read from Original) to a model that reads images, and sends
	// the PDF whole for those the reader could not read (Page.Unreadable).
	Scanned []int `json:"scanned,omitempty"`
	// Pictures names an object of the Object Store holding the pictures
	// of the document's pages (PagePicture, JSON), stored by submit when
	// the original was read with a password: jobs carry none, so a worker
	// could not read the original again. A worker shows these instead of
	// reading it; submit stores them only for a job whose original need
	// not go whole to the model (an encrypted PDF that would is refused at
	// submit). A worker that predates the field ignores it and reads the
	// original, as before it; the version stays 1.
	Pictures *ObjectRef `json:"pictures,omitempty"`

	Schema   SchemaRef `json:"schema"`
	Provider string    `json:"provider"` // e.g. "openai:gpt-4o-mini"
	Model    string    `json:"model"`
	Pool     string    `json:"pool"`
	Options  Options   `json:"options,omitzero"`

	SubmittedAt time.Time `json:"submitted_at"`
	// Resubmission, when set, says what this job re-queues (e.g.
	// "dlq:1234"); it salts the message id so a resubmission is not
	// swallowed by the duplicate window of the original.
	Resubmission string `json:"resubmission,omitempty"`
}

// Page is one page of a job's document: its number, its byte range of the
// text and its own label ("iv", a sheet's name).
type Page struct {
	N     int    `json:"n"`
	Start int    `json:"start"`
	End   int    `json:"end"`
	Label string `json:"label,omitempty"`
}

// PagePicture is one page's picture as submit read it: what a worker
// shows the model for a page without text (Envelope.Pictures).
type PagePicture struct {
	N int `json:"n"` // the page's number
	// MediaType and Data are the encoded picture (document.Image), Width
	// and Height its size in pixels.
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	// PageWidth and PageHeight are the page's size in points, 0 when the
	// format has none.
	PageWidth  float64 `json:"page_width,omitempty"`
	PageHeight float64 `json:"page_height,omitempty"`
}

// SchemaRef names a registered schema.
type SchemaRef struct {
	Name        string `json:"name"`
	Version     int    `json:"version"`
	Fingerprint string `json:"fingerprint"`
}

// ObjectRef names an object in an Object Store bucket.
type ObjectRef struct {
	Bucket string `json:"bucket"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
}

// Options are the extraction settings a submitter chose for a job, as they
// travel in the envelope. A number is a pointer so that zero is a choice
// ("--max-reasks 0": ask once) and nil, absent from the JSON, means the
// worker's default; a string is unset when empty, since no setting's valid
// value is empty. ExtractOptions turns them into the library's options.
// Envelopes written when the numbers were plain (omitted when zero) decode
// the same way, so the version stays 1.
type Options struct {
	MaxReasks   *int     `json:"max_reasks,omitempty"`
	Mode        string   `json:"mode,omitempty"` // an llm.Mode
	MaxTokens   *int     `json:"max_tokens,omitempty"`
	TokenBudget *int     `json:"token_budget,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	// RepairPolicy is an extractq.RepairPolicy.
	RepairPolicy string `json:"repair_policy,omitempty"`
	// Chunking is an extractq.Chunking: "off" or a chunk size in tokens
	// ("4000"). Empty, as in every envelope written before it existed, is
	// auto: split only when the model's context window needs it. A worker
	// that predates the field ignores it (auto); the version stays 1.
	Chunking string `json:"chunking,omitempty"`
	// Input is an extractq.Input: how the document reaches the model
	// (auto, text, native). Empty is auto.
	Input string `json:"input,omitempty"`
}

// ExtractOptions maps the job's options to extractq options: the one place
// a job's settings become the library's. An unset field adds nothing, so
// the worker's own options (given before these) stand; a set one, zero
// included, overrides them. A mode, repair policy or chunking the library
// does not know, or a negative number, makes extractq.New fail with
// ErrConfig, which dead-letters the job.
func (o Options) ExtractOptions() []extractq.Option {
	var out []extractq.Option
	if o.MaxReasks != nil {
		out = append(out, extractq.WithMaxReasks(*o.MaxReasks))
	}
	if o.Mode != "" {
		out = append(out, extractq.WithMode(llm.Mode(o.Mode)))
	}
	if o.MaxTokens != nil {
		out = append(out, extractq.WithMaxTokens(*o.MaxTokens))
	}
	if o.TokenBudget != nil {
		out = append(out, extractq.WithTokenBudget(*o.TokenBudget))
	}
	if o.Temperature != nil {
		out = append(out, extractq.WithTemperature(*o.Temperature))
	}
	if o.RepairPolicy != "" {
		out = append(out, extractq.WithRepair(extractq.RepairPolicy(o.RepairPolicy)))
	}
	if o.Chunking != "" {
		out = append(out, extractq.WithChunking(extractq.Chunking(o.Chunking)))
	}
	if o.Input != "" {
		out = append(out, extractq.WithInput(extractq.Input(o.Input)))
	}
	return out
}

// ErrEnvelope is matched by every error decoding a job that can never be
// processed (bad JSON, unknown version, missing fields): such jobs go
// straight to the dead-letter stream.
var ErrEnvelope = errors.New("invalid job envelope")

// ErrNoDocumentText is Validate's error (with ErrEnvelope) for a job that
// carries no text, inline or by reference, and no original; Validate
// returns it only when every other field is valid. A dead letter trimmed
// to fit the server's max payload is such a job, its text in the audit.
var ErrNoDocumentText = errors.New("no document text, text_ref or original")

// HashText is the content hash extractq uses for documents: sha256, hex.
func HashText(text string) string {
	var dst [2 * sha256.Size]byte // on the stack: the string is the one allocation
	return string(AppendHashText(dst[:0], text))
}

// HashBytes is HashText of an original's bytes.
func HashBytes(b []byte) string {
	var dst [2 * sha256.Size]byte
	return string(AppendHashBytes(dst[:0], b))
}

// AppendHashText appends HashText(text) to dst.
func AppendHashText(dst []byte, text string) []byte {
	// The text is hashed where it is: []byte(text) copied every text
	// longer than 32 bytes to the heap. sha256.Sum256 only reads it.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text)))
	return appendHex(dst, sum[:])
}

// AppendHashBytes appends HashBytes(b) to dst.
func AppendHashBytes(dst, b []byte) []byte {
	sum := sha256.Sum256(b)
	return appendHex(dst, sum[:])
}

// appendHex appends src in lower-case hex, as hex.AppendEncode does,
// four bytes at a time: each byte's nibbles are spread into the two bytes
// of a 16-bit lane and turned into digits together. hex.AppendEncode's
// byte-by-byte loop cost about 20 instructions a byte, and submit
// encodes 48 bytes per document (its hash and job id). TestAppendHex
// compares them.
func appendHex(dst, src []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(src))[:n+2*len(src)]
	out := dst[n:]
	for len(src) >= 4 && len(out) >= 8 {
		x := uint64(binary.LittleEndian.Uint32(src))
		// Byte k of x to the low byte of lane k (bits 16k to 16k+7).
		y := x&0xff | (x&0xff00)<<8 | (x&0xff0000)<<16 | (x&0xff000000)<<24
		// In each lane: the high nibble in its low byte (written first),
		// the low nibble in its high byte.
		const nib = 0x000f000f000f000f
		v := (y>>4)&nib | (y&nib)<<8
		// A nibble of 10 or more gets 'a'-'0'-10 more: v+6 reaches 16
		// exactly then. No byte carries into the next.
		ten := ((v + 0x0606060606060606) >> 4) & 0x0101010101010101
		binary.LittleEndian.PutUint64(out, v+0x3030303030303030+ten*('a'-'0'-10))
		src, out = src[4:], out[8:]
	}
	const digits = "0123456789abcdef"
	for i, c := range src {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xf]
	}
	return dst
}

// MsgID is the Nats-Msg-Id of a job, and its job id: a hash of the
// document id, the hash of its text, the schema fingerprint, the model and
// the resubmission tag. The same document submitted twice is queued once;
// the same text under two ids is two jobs (each id gets its result), and a
// new text under the same id is a new job.
//
// It hashes the fields, each followed by a zero byte, in one buffer on the
// stack (a heap one only for very long fields), and allocates the id
// alone: a submission computes one per document and keeps them all in its
// summary, so the id holds its own 32 bytes, not a 64-byte hex string it
// was cut from.
func MsgID(documentID, documentHash, schemaFingerprint, model, resubmission string) string {
	sum := msgIDSum(documentID, documentHash, schemaFingerprint, model, resubmission)
	var id [32]byte
	return string(appendHex(id[:0], sum[:16]))
}

// AppendMsgID appends MsgID(documentID, …) to dst: a submitter computing
// the ids of a batch puts them into one allocation.
func AppendMsgID(dst []byte, documentID, documentHash, schemaFingerprint, model, resubmission string) []byte {
	sum := msgIDSum(documentID, documentHash, schemaFingerprint, model, resubmission)
	return appendHex(dst, sum[:16])
}

// msgIDSum is the sha256 MsgID is cut from.
func msgIDSum(documentID, documentHash, schemaFingerprint, model, resubmission string) [sha256.Size]byte {
	var buf [256]byte
	b := buf[:0]
	for _, s := range [...]string{documentID, documentHash, schemaFingerprint, model, resubmission} {
		b = append(b, s...)
		b = append(b, 0)
	}
	return sha256.Sum256(b)
}

// Seal fills the derived fields (version, hash, job id) from the rest and
// returns the message id. text is the document, inline or not; the hash is
// the original's when the job has one.
func (e *Envelope) Seal(text string) string {
	e.V = EnvelopeVersion
	e.DocumentHash = e.OriginalHash
	if e.DocumentHash == "" {
		e.DocumentHash = HashText(text)
	}
	id := MsgID(e.DocumentID, e.DocumentHash, e.Schema.Fingerprint, e.Model, e.Resubmission)
	e.JobID = id
	return id
}

// Validate checks the fields every worker needs.
func (e *Envelope) Validate() error {
	switch {
	case e.V > EnvelopeVersion:
		return fmt.Errorf("%w: version %d is newer than this worker (%d): upgrade the worker", ErrEnvelope, e.V, EnvelopeVersion)
	case e.V < 1:
		return fmt.Errorf("%w: missing version", ErrEnvelope)
	case e.JobID == "":
		return fmt.Errorf("%w: missing job_id", ErrEnvelope)
	case e.DocumentID == "":
		return fmt.Errorf("%w: missing document_id", ErrEnvelope)
	case e.Schema.Fingerprint == "":
		return fmt.Errorf("%w: missing schema fingerprint", ErrEnvelope)
	case e.Provider == "":
		return fmt.Errorf("%w: missing provider", ErrEnvelope)
	case e.Text == "" && e.TextRef == nil && e.Original == nil: // last: see ErrNoDocumentText
		return fmt.Errorf("%w: %w", ErrEnvelope, ErrNoDocumentText)
	}
	return nil
}

// DecodeEnvelope parses and validates a job message body.
func DecodeEnvelope(data []byte) (*Envelope, error) {
	var e Envelope
	if !decodeFast(data, &e) {
		e = Envelope{}
		if err := json.Unmarshal(data, &e); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrEnvelope, err)
		}
	}
	if err := e.Validate(); err != nil {
		return &e, err
	}
	return &e, nil
}
