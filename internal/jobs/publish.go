package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/extractq/extractq/internal/tracing"
)

// Default document size limits.
const (
	// DefaultInlineLimit is the largest document carried inside the job
	// message; larger ones go to the EXTRACTQ_DOCS Object Store.
	DefaultInlineLimit = 512 << 10
	// DefaultMaxDocument is the largest document accepted at all.
	DefaultMaxDocument = 64 << 20
)

// ErrDocumentTooLarge is returned for a document above the configured
// maximum size.
var ErrDocumentTooLarge = errors.New("document too large")

// PublishOption configures a Publisher.
type PublishOption func(*Publisher)

// WithInlineLimit sets the size above which a document goes to the Object
// Store instead of the job message (default 512 KiB).
func WithInlineLimit(n int) PublishOption { return func(p *Publisher) { p.inlineLimit = n } }

// WithMaxDocument sets the largest document accepted (default 64 MiB).
func WithMaxDocument(n int64) PublishOption { return func(p *Publisher) { p.maxDocument = n } }

// Publisher queues jobs. It is safe for concurrent use. Bound the number of
// unacknowledged publishes with jetstream.WithPublishAsyncMaxPending on js.
type Publisher struct {
	js          jetstream.JetStream
	docs        *Documents
	inlineLimit int
	maxDocument int64
	lastPool    atomic.Pointer[poolSubject] // see subject
}

// NewPublisher returns a Publisher on js; EnsureStreams must have run.
func NewPublisher(js jetstream.JetStream, opts ...PublishOption) *Publisher {
	p := &Publisher{js: js, docs: NewDocuments(js), inlineLimit: DefaultInlineLimit, maxDocument: DefaultMaxDocument}
	for _, f := range opts {
		f(p)
	}
	return p
}

// PutOriginal stores a document's original bytes in the Object Store under
// their sha256 (Documents.PutOriginal).
func (p *Publisher) PutOriginal(ctx context.Context, data []byte) (*ObjectRef, string, error) {
	return p.docs.PutOriginal(ctx, data)
}

// PutPictures stores the pictures of a document's pages in the Object
// Store (Documents.PutPictures).
func (p *Publisher) PutPictures(ctx context.Context, originalHash string, pics []PagePicture) (*ObjectRef, error) {
	return p.docs.PutPictures(ctx, originalHash, pics)
}

// CheckSize reports ErrDocumentTooLarge for text above the maximum size.
func (p *Publisher) CheckSize(text string) error {
	if int64(len(text)) > p.maxDocument {
		return fmt.Errorf("%w: %d bytes, the limit is %d (raise it with the max document setting or split the document)", ErrDocumentTooLarge, len(text), p.maxDocument)
	}
	return nil
}

// Message seals env for text and builds the job message. A document above
// the inline limit is stored in the Object Store first (named by its hash,
// so storing it twice is harmless) and the job carries the reference.
func (p *Publisher) Message(ctx context.Context, env *Envelope, text string) (*nats.Msg, error) {
	if err := p.CheckSize(text); err != nil {
		return nil, err
	}
	env.Seal(text)
	return p.SealedMessage(ctx, env, text)
}

// SealedMessage is Message for an envelope whose derived fields (V,
// DocumentHash, JobID) are already set, as Seal sets them: a submitter that
// hashed the text for its audit lookups does not hash it again. The caller
// has checked the size (CheckSize).
func (p *Publisher) SealedMessage(ctx context.Context, env *Envelope, text string) (*nats.Msg, error) {
	subject, err := p.subject(env.Pool)
	if err != nil {
		return nil, err
	}
	if err := p.place(ctx, env, text); err != nil {
		return nil, err
	}
	body, err := appendEnvelope(make([]byte, 0, len(env.Text)+len(env.Metadata)+512), env)
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", env.JobID, err)
	}
	// The header is built by hand: the key is canonical already, and
	// nats.NewMsg and Header.Set would canonicalise it for every job.
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{jetstream.MsgIDHeader: []string{env.JobID}}}
	tracing.Inject(ctx, msg.Header) // the worker's job span continues the submitter's trace
	return msg, nil
}

// MessageBatch builds the messages of many sealed jobs, each what
// SealedMessage builds, from allocations they share: the bodies are cut
// from buffers of batchChunk bytes, the messages and their Nats-Msg-Id
// values from one slice each. Submitting a document then allocates about
// three objects fewer. A message keeps its buffer alive until it is
// dropped, so a batch's messages are meant to live about as long as each
// other (until their acks). A MessageBatch is used by one goroutine.
type MessageBatch struct {
	p    *Publisher
	buf  []byte // the unused end of the current chunk
	msgs []nats.Msg
	ids  []string
	// tail is the end of the last envelope encoded (appendEnvelopeTail)
	// and tailOf what it encodes: a submission's jobs share their schema,
	// provider, model, pool, options and time, so it is encoded once, not
	// escaped and formatted again for every job.
	tail   []byte
	tailOf envelopeTail
}

// envelopeTail is what appendEnvelopeTail encodes. Options holding a
// pointer are never cached: the value pointed to could change between
// two jobs while the pointer stays.
type envelopeTail struct {
	schema                SchemaRef
	provider, model, pool string
	options               Options
	submittedAt           time.Time
	resubmission          string
}

// tailOf returns env's envelopeTail, and false when it must not be cached.
func tailOf(env *Envelope) (envelopeTail, bool) {
	o := &env.Options
	if o.MaxReasks != nil || o.MaxTokens != nil || o.TokenBudget != nil || o.Temperature != nil {
		return envelopeTail{}, false
	}
	return envelopeTail{schema: env.Schema, provider: env.Provider, model: env.Model, pool: env.Pool,
		options: env.Options, submittedAt: env.SubmittedAt, resubmission: env.Resubmission}, true
}

// appendTail appends appendEnvelopeTail(env), from the cache when env's
// tail is the last one's.
func (b *MessageBatch) appendTail(dst []byte, env *Envelope, err error) ([]byte, error) {
	t, ok := tailOf(env)
	if !ok {
		return appendEnvelopeTail(dst, env, err)
	}
	// time.Time's == compares the instant's encoding and the location:
	// equal ones encode alike.
	if b.tail == nil || t != b.tailOf {
		tail, terr := appendEnvelopeTail(b.tail[:0], env, nil)
		if terr != nil {
			b.tail = nil
			return appendEnvelopeTail(dst, env, err)
		}
		b.tail, b.tailOf = tail, t
	}
	return append(dst, b.tail...), err
}

// batchChunk is the size of a MessageBatch's body buffers; a body above a
// quarter of it gets its own, so at most a quarter is left unused.
const batchChunk = 256 << 10

// NewMessageBatch returns a MessageBatch for about n messages; more are
// built one by one, as SealedMessage does.
func (p *Publisher) NewMessageBatch(n int) *MessageBatch {
	return &MessageBatch{p: p, msgs: make([]nats.Msg, n), ids: make([]string, n)}
}

// Sealed is SealedMessage(ctx, env, text), built from the batch's
// allocations (TestMessageBatchIsSealedMessage).
func (b *MessageBatch) Sealed(ctx context.Context, env *Envelope, text string) (*nats.Msg, error) {
	if len(b.msgs) == 0 {
		return b.p.SealedMessage(ctx, env, text)
	}
	subject, err := b.p.subject(env.Pool)
	if err != nil {
		return nil, err
	}
	if err := b.p.place(ctx, env, text); err != nil {
		return nil, err
	}
	size := len(env.Text) + len(env.Metadata) + 512
	buf := b.buf
	if size > batchChunk/4 {
		buf = make([]byte, 0, size)
	} else if cap(buf)-len(buf) < size {
		buf = make([]byte, 0, batchChunk)
	}
	body, err := appendEnvelopeHead(buf, env)
	body, err = b.appendTail(body, env, err)
	if err != nil {
		return nil, fmt.Errorf("encode job %s: %w", env.JobID, err)
	}
	if size <= batchChunk/4 {
		// The envelope may have outgrown its estimate, and append then
		// moved it: the rest of the chunk stays with whichever array has room.
		b.buf = body[len(body):]
	}
	body = body[:len(body):len(body)] // a reader appending to it must not write into the next body
	msg := &b.msgs[0]
	b.ids[0] = env.JobID
	*msg = nats.Msg{Subject: subject, Data: body, Header: nats.Header{jetstream.MsgIDHeader: b.ids[:1:1]}}
	b.msgs, b.ids = b.msgs[1:], b.ids[1:]
	tracing.Inject(ctx, msg.Header)
	return msg, nil
}

// place puts text into env, or above the inline limit into the Object
// Store (named by its hash, so storing it twice is harmless) and its
// reference into env.
func (p *Publisher) place(ctx context.Context, env *Envelope, text string) error {
	env.Text, env.TextRef = "", nil
	if len(text) <= p.inlineLimit {
		env.Text = text
		return nil
	}
	ref, err := p.docs.Put(ctx, env.DocumentHash, text)
	if err != nil {
		return err
	}
	env.TextRef = ref
	return nil
}

// subject validates pool (ValidatePool) and returns its job subject,
// remembering the last pool: a submission's jobs all have the same one.
func (p *Publisher) subject(pool string) (string, error) {
	if last := p.lastPool.Load(); last != nil && last.pool == pool {
		return last.subject, nil
	}
	if err := ValidatePool(pool); err != nil {
		return "", err
	}
	last := &poolSubject{pool: pool, subject: JobSubject(pool)}
	p.lastPool.Store(last)
	return last.subject, nil
}

type poolSubject struct{ pool, subject string }

// PublishAsync queues a job without waiting for the server's ack; it blocks
// while the JetStream context's pending-ack bound is reached.
func (p *Publisher) PublishAsync(ctx context.Context, env *Envelope, text string) (jetstream.PubAckFuture, error) {
	msg, err := p.Message(ctx, env, text)
	if err != nil {
		return nil, err
	}
	f, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return nil, fmt.Errorf("publish job %s: %w", env.JobID, err)
	}
	return f, nil
}

// Publish queues a job and waits for the server's ack.
func (p *Publisher) Publish(ctx context.Context, env *Envelope, text string) (*jetstream.PubAck, error) {
	msg, err := p.Message(ctx, env, text)
	if err != nil {
		return nil, err
	}
	ack, err := p.js.PublishMsg(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("publish job %s: %w", env.JobID, err)
	}
	return ack, nil
}

// Documents reads and writes large documents in the EXTRACTQ_DOCS bucket.
type Documents struct {
	js    jetstream.JetStream
	mu    sync.Mutex
	store jetstream.ObjectStore
}

// NewDocuments returns access to the document bucket on js.
func NewDocuments(js jetstream.JetStream) *Documents { return &Documents{js: js} }

func (d *Documents) bucket(ctx context.Context) (jetstream.ObjectStore, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.store != nil {
		return d.store, nil
	}
	s, err := d.js.ObjectStore(ctx, DocsBucket)
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w (run `worker migrate` or start a worker to create it)", DocsBucket, err)
	}
	d.store = s
	return s, nil
}

// Put stores text under name and returns its reference.
func (d *Documents) Put(ctx context.Context, name, text string) (*ObjectRef, error) {
	s, err := d.bucket(ctx)
	if err != nil {
		return nil, err
	}
	info, err := s.Put(ctx, jetstream.ObjectMeta{Name: name}, strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("store document %s in %s: %w", name, DocsBucket, err)
	}
	return &ObjectRef{Bucket: DocsBucket, Name: name, Size: int64(info.Size)}, nil
}

// PutOriginal stores a document's original bytes under their sha256 (the
// same name for the same bytes: storing twice is harmless) and returns the
// reference and the hash.
func (d *Documents) PutOriginal(ctx context.Context, data []byte) (*ObjectRef, string, error) {
	hash := HashBytes(data)
	s, err := d.bucket(ctx)
	if err != nil {
		return nil, "", err
	}
	info, err := s.Put(ctx, jetstream.ObjectMeta{Name: hash}, bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("store the original %s in %s: %w", hash, DocsBucket, err)
	}
	return &ObjectRef{Bucket: DocsBucket, Name: hash, Size: int64(info.Size)}, hash, nil
}

// PutPictures stores the pictures of the pages of the document whose
// original has sha256 originalHash as one object (PicturesName) and
// returns its reference, for Envelope.Pictures. A later reading of the
// same original (a re-read with a newer reader) replaces them.
func (d *Documents) PutPictures(ctx context.Context, originalHash string, pics []PagePicture) (*ObjectRef, error) {
	b, err := json.Marshal(pics)
	if err != nil {
		return nil, fmt.Errorf("encode page pictures: %w", err)
	}
	s, err := d.bucket(ctx)
	if err != nil {
		return nil, err
	}
	name := PicturesName(originalHash)
	info, err := s.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("store the page pictures %s in %s: %w", name, DocsBucket, err)
	}
	return &ObjectRef{Bucket: DocsBucket, Name: name, Size: int64(info.Size)}, nil
}

// PicturesName names the page pictures of the original with sha256
// originalHash in the document bucket.
func PicturesName(originalHash string) string { return originalHash + ".pictures" }

// PicturesOf returns the reference of the page pictures stored for the
// original with sha256 originalHash, or nil when there are none (it was
// not read with a password).
func (d *Documents) PicturesOf(ctx context.Context, originalHash string) (*ObjectRef, error) {
	s, err := d.bucket(ctx)
	if err != nil {
		return nil, err
	}
	name := PicturesName(originalHash)
	info, err := s.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up the page pictures %s in %s: %w", name, DocsBucket, err)
	}
	return &ObjectRef{Bucket: DocsBucket, Name: name, Size: int64(info.Size)}, nil
}

// Pictures returns the pictures of the job's pages stored at submit
// (Envelope.Pictures); an object that is missing or not pictures is
// ErrEnvelope.
func (d *Documents) Pictures(ctx context.Context, env *Envelope) ([]PagePicture, error) {
	if env.Pictures == nil {
		return nil, fmt.Errorf("%w: the job has no page pictures", ErrEnvelope)
	}
	b, err := d.get(ctx, env.Pictures)
	if err != nil {
		return nil, err
	}
	var pics []PagePicture
	if err := json.Unmarshal(b, &pics); err != nil {
		return nil, fmt.Errorf("%w: page pictures %s: %v", ErrEnvelope, env.Pictures.Name, err)
	}
	return pics, nil
}

// Original returns the original bytes of the job's document.
func (d *Documents) Original(ctx context.Context, env *Envelope) ([]byte, error) {
	if env.Original == nil {
		return nil, fmt.Errorf("%w: the job has no original", ErrEnvelope)
	}
	return d.get(ctx, env.Original)
}

// Text returns the job's document, inline or from the Object Store.
func (d *Documents) Text(ctx context.Context, env *Envelope) (string, error) {
	if env.TextRef == nil {
		return env.Text, nil
	}
	b, err := d.get(ctx, env.TextRef)
	return string(b), err
}

// get reads an object of the document bucket whole.
func (d *Documents) get(ctx context.Context, ref *ObjectRef) ([]byte, error) {
	if ref.Bucket != DocsBucket {
		return nil, fmt.Errorf("%w: object %s is in bucket %q, want %q", ErrEnvelope, ref.Name, ref.Bucket, DocsBucket)
	}
	s, err := d.bucket(ctx)
	if err != nil {
		return nil, err
	}
	// Without a deadline of its own the client gives the whole read its
	// default API timeout (5s), which a 64 MiB document on a busy machine
	// overruns: the job then failed every delivery and was dead-lettered.
	ctx, cancel := context.WithTimeout(ctx, readTimeout(ref.Size))
	defer cancel()
	r, err := s.Get(ctx, ref.Name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: document %s is not in %s (submit it again)", ErrEnvelope, ref.Name, DocsBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch document %s from %s: %w", ref.Name, DocsBucket, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read document %s from %s: %w", ref.Name, DocsBucket, err)
	}
	return b, nil
}

// readTimeout bounds reading a document of size bytes from the object
// store: 30s, plus a second per MiB.
func readTimeout(size int64) time.Duration {
	return 30*time.Second + time.Duration(max(size, 0)>>20)*time.Second
}
