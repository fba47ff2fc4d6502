package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/extractq/extractq/internal/jsonx"
	"github.com/extractq/extractq/internal/redact"
	"github.com/extractq/extractq/llm"
)

// ErrWriterClosed is returned by Write after Close.
var ErrWriterClosed = errors.New("audit: writer is closed")

// ErrInvalidRecord matches Write errors for a record that can never be
// written: a worker bug, or data PostgreSQL refuses (an id too long for
// its index, a value jsonb cannot hold). Redelivering the job would not
// help; no other record of the batch is affected.
var ErrInvalidRecord = errors.New("invalid audit record")

// StatusRetrying is a job's status while its last delivery was not final
// (the job was nak'd and will be redelivered).
const StatusRetrying = "retrying"

// table is a destination of the writer: its COPY columns, and how the
// duplicate path merges staged rows into it: merge, a statement reading
// the staging table (NAME_stage), or else an INSERT with conflict.
type table struct {
	name     string
	columns  []string
	conflict string
	merge    string
}

var (
	attemptsTable = table{name: "attempts", columns: []string{
		"job_id", "delivery", "seq", "started_at", "n", "document_id", "run", "schema_name", "schema_version",
		"provider", "model", "mode", "prompt_chars", "prompt_tokens", "completion_tokens", "latency_ms",
		"finish_reason", "raw_response", "value", "repairs", "violations", "error_class", "error_message",
		"transport_retries", "worker_id", "cached_prompt_tokens", "cache_creation_tokens",
		"chunk_index", "chunk_start", "chunk_end", "prefill_pointer", "prefill_step", "batch", "adjustments",
	}, conflict: "ON CONFLICT DO NOTHING"}
	// A later delivery wins; the same delivery written again changes nothing,
	// except that a final record replaces a "retrying" one: the rule of
	// extractq_merge_jobs (migration 002), through which workers, who may not
	// UPDATE jobs, merge them.
	jobsTable = table{name: "jobs", columns: []string{
		"job_id", "document_id", "run", "schema_name", "schema_version", "schema_fingerprint", "provider", "model",
		"pool", "status", "reason", "deliveries", "attempts", "prompt_tokens", "completion_tokens", "worker_id",
		"started_at", "finished_at", "content_hash", "cached_prompt_tokens", "cache_creation_tokens",
	}, merge: "SELECT extractq_merge_jobs(coalesce(jsonb_agg(s), '[]')) FROM jobs_stage s"}
	resultsTable = table{name: "results", columns: []string{
		"document_id", "schema_fingerprint", "model", "schema_name", "schema_version", "provider", "value",
		"attempts", "prompt_tokens", "completion_tokens", "run", "job_id", "content_hash", "redacted", "sources",
	}, conflict: "ON CONFLICT DO NOTHING"}
	deadLettersTable = table{name: "dead_letters", columns: []string{
		"stream", "seq", "job_id", "document_id", "run", "schema_name", "schema_version", "reason",
	}, conflict: "ON CONFLICT DO NOTHING"}
)

// pending is one record encoded as COPY rows (in its tables' column
// order), waiting for its flush.
type pending struct {
	jobID     string
	delivery  int32
	final     bool
	attempts  tuple // the record's attempt rows, back to back
	nAttempts int
	job       tuple
	result    tuple // nil when there is no result
	dead      tuple // nil when not dead-lettered
	// done receives once the record is settled, err then being the
	// outcome. A channel of struct{} (buffered: the flusher never blocks
	// on it) is one allocation; a chan error was two (its buffer holds
	// pointers, so it is allocated apart).
	done chan struct{}
	err  error
	// buf backs attempts, job and result: kept, with done, when the
	// pending is recycled (recyclePending).
	buf tuple
}

// pendings holds pendings whose Writes saw them settled, with their done
// channel and rows' buffer: a record then costs none of the three
// allocations (and the ~2 KB of rows) it did. A pending goes back only
// from its Write, after done was received: nothing else holds it then
// (the flusher's scratch is cleared before settle, a batch's slice is
// dropped after its commit), while one whose Write gave up waiting is
// left to the garbage collector, since its flusher may still settle it.
var pendings = sync.Pool{New: func() any { return &pending{done: make(chan struct{}, 1)} }}

// maxKeptRows bounds the rows' buffer a recycled pending keeps: a rare
// huge record does not pin its memory.
const maxKeptRows = 64 << 10

// recyclePending gives p back to pendings, keeping its channel (empty:
// its one settle was received) and its buffer, and nothing of its record.
func recyclePending(p *pending) {
	buf := p.buf[:0]
	if cap(buf) > maxKeptRows {
		buf = nil
	}
	*p = pending{done: p.done, buf: buf}
	pendings.Put(p)
}

// settle reports the record's outcome to its Write.
func (p *pending) settle(err error) {
	p.err = err
	p.done <- struct{}{}
}

func (p *pending) rows() int {
	n := p.nAttempts + 1
	if p.result != nil {
		n++
	}
	if p.dead != nil {
		n++
	}
	return n
}

// WriterOption configures a GroupWriter.
type WriterOption func(*writerConfig)

type writerConfig struct {
	maxBatchRows int
	maxDelay     time.Duration
	queueSize    int
	flushers     int
	flushTimeout time.Duration
	observer     func(FlushInfo)
}

// WithMaxBatchRows flushes a batch once it holds this many rows (attempts,
// jobs, results and dead letters together). Default 4000.
func WithMaxBatchRows(n int) WriterOption {
	return func(c *writerConfig) { c.maxBatchRows = max(1, n) }
}

// WithMaxDelay makes a batch wait up to d after its first record for more
// records before it goes to a free flusher: fewer, larger transactions for
// up to d more latency. Default 0: a free flusher takes what is queued at
// once, and batches grow by themselves while the flushers are busy.
func WithMaxDelay(d time.Duration) WriterOption { return func(c *writerConfig) { c.maxDelay = d } }

// WithQueueSize bounds how many records wait for a flush; Write blocks when
// the queue is full (back-pressure). Default 4096.
func WithQueueSize(n int) WriterOption { return func(c *writerConfig) { c.queueSize = max(1, n) } }

// WithFlushers sets how many batches may be in flight at once, each on its
// own connection. Default 1: records that arrive while a batch commits wait
// for the next one, so every transaction carries about as many records as
// are in flight, and Postgres spends about a quarter less CPU per record
// than with 2 flushers of half-sized batches (BenchmarkWriterRecord), for
// a wait of up to one more commit before a Write returns.
func WithFlushers(n int) WriterOption { return func(c *writerConfig) { c.flushers = max(1, n) } }

// WithFlushTimeout bounds one flush, so that Write fails instead of hanging
// while Postgres is unreachable. Default 15s.
func WithFlushTimeout(d time.Duration) WriterOption {
	return func(c *writerConfig) { c.flushTimeout = d }
}

// WithFlushObserver calls f after every flush (for metrics histograms). f
// runs on the flushing goroutine and must be quick.
func WithFlushObserver(f func(FlushInfo)) WriterOption {
	return func(c *writerConfig) { c.observer = f }
}

// FlushInfo describes one flush.
type FlushInfo struct {
	Records  int
	Rows     int
	Duration time.Duration
	Err      error
}

// WriterStats are cumulative counters of a GroupWriter.
type WriterStats struct {
	Batches       uint64        // flushes committed
	FlushErrors   uint64        // flushes that failed (their Writes got the error)
	Records       uint64        // records made durable
	Rows          uint64        // rows sent in committed flushes (attempts, jobs, results, dead letters)
	AttemptRows   uint64        // attempt rows among Rows
	DupFallbacks  uint64        // flushes that met rows already stored and took the ON CONFLICT path
	Splits        uint64        // batches PostgreSQL refused for a row's data, retried in halves
	Refused       uint64        // records PostgreSQL refused for their data (their Writes got ErrInvalidRecord)
	FlushTime     time.Duration // total time spent in committed flushes
	LastFlush     time.Duration
	MaxFlush      time.Duration
	Queued        int // records waiting for a flush now
	QueueCapacity int
}

// GroupWriter is the group-commit audit.Writer: concurrent Writes are
// batched and committed together, and each Write returns once the
// transaction holding its rows has committed.
type GroupWriter struct {
	store *Store
	cfg   writerConfig

	mu     sync.RWMutex // guards closed against sends on the closed queue
	closed bool
	queue  chan *pending
	batch  chan []*pending
	quit   chan struct{} // closed by Close: stops preparePartitions
	wg     sync.WaitGroup
	stop   context.CancelFunc // cancels in-flight flushes on a hard close
	base   context.Context

	batches, flushErrors, records, rows, attemptRows, dups, splits, refused atomic.Uint64
	flushNanos, lastNanos, maxNanos                                         atomic.Int64
}

var _ Writer = (*GroupWriter)(nil)

// NewWriter starts a group-commit writer on the store. Close stops it.
func (s *Store) NewWriter(ctx context.Context, opts ...WriterOption) (*GroupWriter, error) {
	cfg := defaultWriterConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := s.EnsurePartitions(ctx); err != nil {
		return nil, err
	}
	return startWriter(ctx, s, cfg), nil
}

// StartWriter is NewWriter without preparing the attempt partitions first,
// for a caller that runs EnsurePartitions itself, beside other start-up
// work, before its first Write (worker.Serve does while it sets up its
// streams). It does not touch the database until the first Write.
func (s *Store) StartWriter(ctx context.Context, opts ...WriterOption) *GroupWriter {
	cfg := defaultWriterConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return startWriter(ctx, s, cfg)
}

func defaultWriterConfig() writerConfig {
	return writerConfig{maxBatchRows: 4000, queueSize: 4096, flushers: 1, flushTimeout: 15 * time.Second}
}

// startWriter starts the collector and the flushers. Flushes outlive ctx's
// cancellation (they stop on Close) but keep its values.
func startWriter(ctx context.Context, s *Store, cfg writerConfig) *GroupWriter {
	base, stop := context.WithCancel(context.WithoutCancel(ctx))
	w := &GroupWriter{
		store: s, cfg: cfg, base: base, stop: stop,
		queue: make(chan *pending, cfg.queueSize),
		quit:  make(chan struct{}),
		batch: make(chan []*pending),
	}
	w.wg.Add(2 + cfg.flushers)
	go w.collect()
	go w.preparePartitions()
	for range cfg.flushers {
		go w.flushLoop()
	}
	return w
}

// Write converts rec to rows, queues them and waits until the flush holding
// them commits. It blocks while the queue is full. A non-nil error means the
// record may not be durable: the caller must not ack (nak and let the job
// be redelivered; rewriting the same record inserts nothing twice).
func (w *GroupWriter) Write(ctx context.Context, rec *Record) error {
	return writeUntil(w, rec, ctx.Done(), ctx.Err)
}

// WriteWithin is Write with a deadline timeout from now in place of a
// context's, and the same errors (wrapping context.DeadlineExceeded when
// the deadline passes first). It makes no context and no timer: the wait
// takes a stopped timer from a pool and stops it again before giving it
// back, so nothing of a wait outlives it (a context.WithTimeout per
// record was three to four allocations; see WriteWithin, the function).
func (w *GroupWriter) WriteWithin(rec *Record, timeout time.Duration) error {
	t := waitTimers.Get().(*time.Timer)
	t.Reset(timeout)
	err := writeUntil(w, rec, t.C, deadlineExceeded)
	t.Stop() // since Go 1.23, no value sent before Stop is received after it
	waitTimers.Put(t)
	return err
}

// waitTimers holds stopped timers for WriteWithin's waits.
var waitTimers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

func deadlineExceeded() error { return context.DeadlineExceeded }

// writeUntil is Write, giving up when expired delivers; cause is then the
// error wrapped.
func writeUntil[T any](w *GroupWriter, rec *Record, expired <-chan T, cause func() error) error {
	p, err := toPending(rec, w.store.now())
	if err != nil {
		return err
	}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		recyclePending(p)
		return ErrWriterClosed
	}
	select {
	case w.queue <- p: // the usual: room in the queue, no select on two channels
		w.mu.RUnlock()
	default:
		select {
		case w.queue <- p:
			w.mu.RUnlock()
		case <-expired:
			w.mu.RUnlock()
			recyclePending(p)
			return fmt.Errorf("audit: queue record of job %s: %w", rec.JobID, cause())
		}
	}
	select {
	case <-p.done:
		err := p.err
		recyclePending(p)
		return err
	case <-expired: // p is the flusher's now: not recycled
		return fmt.Errorf("audit: wait for flush of job %s: %w", rec.JobID, cause())
	}
}

// Close flushes what is queued and stops the writer. If ctx ends first,
// in-flight flushes are cancelled and their Writes get an error.
func (w *GroupWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
		close(w.quit)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		w.stop()
		return nil
	case <-ctx.Done():
		w.stop()
		<-done
		return fmt.Errorf("audit: close writer: %w", ctx.Err())
	}
}

// Stats returns the writer's counters.
func (w *GroupWriter) Stats() WriterStats {
	return WriterStats{
		Batches:       w.batches.Load(),
		FlushErrors:   w.flushErrors.Load(),
		Records:       w.records.Load(),
		Rows:          w.rows.Load(),
		AttemptRows:   w.attemptRows.Load(),
		DupFallbacks:  w.dups.Load(),
		Splits:        w.splits.Load(),
		Refused:       w.refused.Load(),
		FlushTime:     time.Duration(w.flushNanos.Load()),
		LastFlush:     time.Duration(w.lastNanos.Load()),
		MaxFlush:      time.Duration(w.maxNanos.Load()),
		Queued:        len(w.queue),
		QueueCapacity: cap(w.queue),
	}
}

// collect groups queued records into batches. A batch goes to a flusher
// as soon as one is free (after lingering up to maxDelay, if set), or
// waits for one once it is full; while the flushers are busy the batch
// grows, so batches are small under light load (low latency) and large
// under heavy load (few transactions).
func (w *GroupWriter) collect() {
	defer w.wg.Done()
	defer close(w.batch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var cur []*pending
	rows, lingering := 0, false
	send := func() { // blocks until a flusher takes the batch
		timer.Stop()
		w.batch <- cur
		cur, rows, lingering = nil, 0, false
	}
	add := func(p *pending) {
		if len(cur) == 0 && w.cfg.maxDelay > 0 {
			timer.Reset(w.cfg.maxDelay)
			lingering = true
		}
		cur, rows = append(cur, p), rows+p.rows()
		if rows >= w.cfg.maxBatchRows {
			send()
		}
	}
	for {
		if len(cur) == 0 {
			p, ok := <-w.queue
			if !ok {
				return
			}
			add(p)
			continue
		}
		var idle chan []*pending // nil while lingering: that case never fires
		if !lingering {
			idle = w.batch
		}
		select {
		case p, ok := <-w.queue:
			if !ok {
				send()
				return
			}
			add(p)
		case idle <- cur:
			cur, rows = nil, 0
		case <-timer.C:
			lingering = false
		}
	}
}

// preparePartitions keeps next months' attempt partitions ready while the
// writer runs for months. A failure is harmless (rows go to the default
// partition, which EnsurePartitions later empties) and is retried next day.
func (w *GroupWriter) preparePartitions() {
	defer w.wg.Done()
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(w.base, time.Minute)
			_ = w.store.EnsurePartitions(ctx)
			cancel()
		}
	}
}

func (w *GroupWriter) flushLoop() {
	defer w.wg.Done()
	var sc flushScratch
	for b := range w.batch {
		w.commit(b, &sc)
	}
}

// flushScratch is a flusher's memory reused from flush to flush: the
// request buffer (a batch's COPY data, which was allocated anew for every
// flush: ~430 B per record) and the slices and map grouping its rows.
type flushScratch struct {
	buf                      []byte
	att, jobs, results, dead []tuple
	winner                   map[string]*pending
	order                    []string
	parts                    [4]copyPart
}

// maxKeptBuf bounds the request buffer a flusher keeps between flushes:
// a rare huge batch does not pin its memory for the writer's life.
const maxKeptBuf = 4 << 20

// commit flushes b and answers its Writes. When PostgreSQL refuses a row's
// data (a value jsonb cannot hold, a key too long for its index), the
// whole transaction is rolled back; commit then retries each half, down to
// single records, so that only the refused records' Writes fail (with
// ErrInvalidRecord: rewriting them cannot help) and every other record is
// committed. A batch of n records with one bad record costs about 2·log2(n)
// more transactions. Any other error (Postgres unreachable, a timeout)
// fails the whole batch: nothing of it may be durable.
func (w *GroupWriter) commit(b []*pending, sc *flushScratch) {
	start := time.Now()
	rows, attempts, err := w.flush(b, sc)
	d := time.Since(start)
	if err != nil {
		w.flushErrors.Add(1)
	} else {
		w.batches.Add(1)
		w.records.Add(uint64(len(b)))
		w.rows.Add(uint64(rows))
		w.attemptRows.Add(uint64(attempts))
		w.flushNanos.Add(int64(d))
		w.lastNanos.Store(int64(d))
		for {
			m := w.maxNanos.Load()
			if int64(d) <= m || w.maxNanos.CompareAndSwap(m, int64(d)) {
				break
			}
		}
	}
	if w.cfg.observer != nil {
		w.cfg.observer(FlushInfo{Records: len(b), Rows: rows, Duration: d, Err: err})
	}
	switch {
	case err == nil:
		for _, p := range b {
			p.settle(nil)
		}
	case isRowError(err) && len(b) > 1:
		w.splits.Add(1)
		w.commit(b[:len(b)/2], sc)
		w.commit(b[len(b)/2:], sc)
	case isRowError(err):
		w.refused.Add(1)
		b[0].settle(fmt.Errorf("audit: PostgreSQL refuses the record of job %s, so rewriting it cannot help: %w: %w", b[0].jobID, ErrInvalidRecord, err))
	default:
		err = fmt.Errorf("audit: flush of %d records failed, not durable (nak and redeliver): %w", len(b), err)
		for _, p := range b {
			p.settle(err)
		}
	}
}

// flush writes one batch in one transaction and one round trip (see
// copyIn). Rows are COPYed straight into their tables; only if some are
// already stored (a record written again after a failed or uncertain
// flush, a redelivered job's result) is the batch redone through staging
// tables with ON CONFLICT.
func (w *GroupWriter) flush(b []*pending, sc *flushScratch) (rows, attempts int, err error) {
	ctx, cancel := context.WithTimeout(w.base, w.cfg.flushTimeout)
	defer cancel()
	att, results, dead, order := sc.att[:0], sc.results[:0], sc.dead[:0], sc.order[:0]
	// One row per job (ON CONFLICT DO UPDATE cannot touch a row twice),
	// chosen by the rule of jobsTable's conflict clause.
	if sc.winner == nil {
		sc.winner = make(map[string]*pending, len(b))
	}
	winner := sc.winner
	defer func() {
		// Nothing of this batch is kept alive by the scratch.
		clear(winner)
		clear(att)
		clear(results)
		clear(dead)
		clear(order)
		clear(sc.jobs)
		clear(sc.parts[:])
		sc.att, sc.results, sc.dead, sc.order = att[:0], results[:0], dead[:0], order[:0]
	}()
	for _, p := range b {
		rows += p.rows()
		attempts += p.nAttempts
		if p.attempts != nil {
			att = append(att, p.attempts)
		}
		if p.result != nil {
			results = append(results, p.result)
		}
		if p.dead != nil {
			dead = append(dead, p.dead)
		}
		cur, seen := winner[p.jobID]
		if !seen {
			order = append(order, p.jobID)
		}
		if !seen || p.delivery > cur.delivery || (p.delivery == cur.delivery && !cur.final && p.final) {
			winner[p.jobID] = p
		}
	}
	jobs := sc.jobs[:0]
	for _, id := range order {
		jobs = append(jobs, winner[id].job)
	}
	sc.jobs = jobs
	parts := sc.parts[:0]
	for _, p := range [...]copyPart{{attemptsTable, att}, {jobsTable, jobs}, {resultsTable, results}, {deadLettersTable, dead}} {
		if len(p.rows) > 0 {
			parts = append(parts, p)
		}
	}
	err = w.store.copyIn(ctx, parts, false, &sc.buf)
	if isUniqueViolation(err) {
		w.dups.Add(1)
		err = w.store.copyIn(ctx, parts, true, &sc.buf)
	}
	if cap(sc.buf) > maxKeptBuf {
		sc.buf = nil
	}
	return rows, attempts, err
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// isRowError reports whether PostgreSQL refused a statement for the data
// of a row (bad encoding, invalid JSON, a value too large for an index, a
// violated constraint other than uniqueness): the same rows would be
// refused again, while the other rows of the statement are fine.
func isRowError(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) != 5 {
		return false
	}
	switch pe.Code[:2] {
	case "22", "54": // data exception; program limit exceeded (index row size)
		return true
	case "23": // integrity constraint violation
		return pe.Code != "23505"
	}
	return false
}

// toPending checks rec and converts it to rows, redacting credentials.
// It runs on the caller's goroutine so that conversion is parallel.
//
// What PostgreSQL would refuse is settled here, so that it cannot make a
// whole batch fail: keys (ids, names) that are too long, hold NUL or are
// not UTF-8, and a result value holding \u0000 (jsonb cannot store it),
// make the record invalid (ErrInvalidRecord); diagnostics (raw answers,
// errors, reasons, repairs, violations, attempt values) are made storable
// instead, NUL and invalid UTF-8 becoming U+FFFD. A result's value is never
// changed: when it holds the redaction marker (a provider replaced its own
// key in the answer) the result is stored marked redacted.
//
// The pending comes from pendings: its Write recycles it once settled.
func toPending(rec *Record, now time.Time) (*pending, error) {
	p := pendings.Get().(*pending)
	if err := p.fill(rec, now); err != nil {
		recyclePending(p)
		return nil, err
	}
	return p, nil
}

// fill is toPending's work on a pending fresh from pendings: p.done and
// p.buf are kept, every other field is zero.
func (p *pending) fill(rec *Record, now time.Time) error {
	if rec == nil || rec.JobID == "" || rec.DocumentID == "" {
		return fmt.Errorf("audit: record needs a JobID and a DocumentID: %w", ErrInvalidRecord)
	}
	keys := [...]string{rec.JobID, rec.DocumentID, rec.DocumentHash, rec.Run, rec.SchemaName, rec.SchemaFingerprint,
		rec.Provider, rec.Model, rec.Pool, rec.WorkerID}
	if !plainKeys(&keys) { // else every key is short, ASCII and without NUL: checkKey passes them all
		for i, what := range [...]string{"job id", "document id", "document hash", "run", "schema name", "schema fingerprint",
			"provider", "model", "pool", "worker id"} {
			if err := checkKey(what, keys[i]); err != nil {
				return fmt.Errorf("audit: record of job %.80q: %s: %w", rec.JobID, err, ErrInvalidRecord)
			}
		}
	}
	status := string(rec.Outcome)
	if !rec.Final {
		status = StatusRetrying
	} else if status == "" {
		return fmt.Errorf("audit: final record of job %s has no outcome: %w", rec.JobID, ErrInvalidRecord)
	}
	started, finished := rec.StartedAt, rec.FinishedAt
	if started.IsZero() {
		started = now
	}
	if finished.IsZero() {
		finished = now
	}
	delivery := int32(max(rec.Delivery, 1))
	version := int32(rec.SchemaVersion)
	p.jobID, p.delivery, p.final, p.nAttempts = rec.JobID, delivery, rec.Final, len(rec.Attempts)
	// The attempts', the job's and the result's rows share one buffer,
	// sized for all of them: appends never copy and a record costs one
	// allocation for its rows. Each part is capped (full slice expression)
	// so that no append runs into the next.
	var results struct {
		ok       bool
		valid    json.RawMessage // the value, checked: an attempt's equal to it is not checked again
		sources  []byte
		redacted bool
	}
	if rec.Final && rec.Outcome == llm.OutcomeOK {
		if !jsonx.Valid(rec.Value) {
			return fmt.Errorf("audit: job %s is ok but its value is not JSON: %w", rec.JobID, ErrInvalidRecord)
		}
		if i := nulEscape(rec.Value); i >= 0 {
			return fmt.Errorf(`audit: job %s is ok but its value holds \u0000 (at byte %d), which PostgreSQL's jsonb cannot store; the value is never altered: %w`,
				rec.JobID, i, ErrInvalidRecord)
		}
		results.ok, results.valid = true, rec.Value
		results.redacted = bytes.Contains(rec.Value, []byte(redact.Marker))
		if len(rec.Sources) > 0 {
			results.sources = appendSources(make([]byte, 0, 160*len(rec.Sources)), rec.Sources)
		}
	}
	type attemptText struct {
		raw, errMsg                          string
		value, repairs, violations, adjusted []byte
	}
	var few [4]attemptText // most records have one attempt: no allocation
	texts := few[:0]
	if len(rec.Attempts) > len(few) {
		texts = make([]attemptText, 0, len(rec.Attempts))
	}
	texts = texts[:len(rec.Attempts)]
	size := 256 + len(rec.JobID) + len(rec.DocumentID) + len(rec.Run) + len(rec.SchemaName) + len(rec.SchemaFingerprint) +
		len(rec.Provider) + len(rec.Model) + len(rec.Pool) + len(rec.Reason) + len(rec.WorkerID) + len(rec.DocumentHash)
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		texts[i] = attemptText{
			raw: storableText(redact.Credentials(a.Raw)), errMsg: storableText(redact.Credentials(a.Error)),
			value: jsonOrEmpty(a.Value, results.valid), repairs: marshalOrEmpty(a.Repairs, len(a.Repairs)),
			violations: marshalOrEmpty(a.Violations, len(a.Violations)), adjusted: marshalOrEmpty(a.Adjustments, len(a.Adjustments)),
		}
		t := &texts[i]
		size += attemptFixedSize + 16 + len(rec.JobID) + len(rec.DocumentID) + len(rec.Run) + len(rec.SchemaName) +
			len(a.Provider) + len(a.Model) + len(a.Mode) + len(a.FinishReason) + len(a.Class) + len(rec.WorkerID) +
			len(t.raw) + len(t.value) + len(t.repairs) + len(t.violations) + len(t.errMsg) + len(t.adjusted) + len(a.Pointer) + len(a.Step)
	}
	if results.ok {
		size += 164 + len(rec.DocumentID) + len(rec.SchemaFingerprint) + len(rec.Model) + len(rec.SchemaName) + len(rec.Provider) +
			len(rec.Value) + len(rec.Run) + len(rec.JobID) + len(rec.DocumentHash) + len(results.sources)
	}
	buf := p.buf[:0] // a recycled pending's: appends overwrite what it held
	if cap(buf) < size {
		buf = make(tuple, 0, size)
	}
	for i := range rec.Attempts {
		a, t := &rec.Attempts[i], &texts[i]
		at := a.StartedAt
		if at.IsZero() {
			at = started
		}
		buf = buf.row(len(attemptsTable.columns)).
			text(rec.JobID).int4(delivery).int4(int32(i + 1)).timestamptz(at).int4(int32(a.N)).
			text(rec.DocumentID).text(rec.Run).text(rec.SchemaName).int4(version).
			text(storableText(a.Provider)).text(storableText(a.Model)).text(storableText(string(a.Mode))).int4(int32(a.PromptChars)).
			int4(int32(a.Usage.PromptTokens)).int4(int32(a.Usage.CompletionTokens)).
			float8(float64(a.Latency) / float64(time.Millisecond)).
			text(storableText(string(a.FinishReason))).text(t.raw).jsonb(t.value).jsonb(t.repairs).jsonb(t.violations).
			text(storableText(string(a.Class))).text(t.errMsg).int4(int32(a.TransportRetries)).text(rec.WorkerID).
			int4(int32(a.Usage.CachedPromptTokens)).int4(int32(a.Usage.CacheCreationTokens))
		// NULL, not zero, where the attempt had no part or no prefill step:
		// chunk 0 and the root pointer "" are real values.
		if c := a.Chunk; c != nil {
			buf = buf.int4(int32(c.Index)).int4(int32(c.Start)).int4(int32(c.End))
		} else {
			buf = buf.null().null().null()
		}
		if a.Step != "" || a.Pointer != "" {
			buf = buf.text(storableText(a.Pointer)).text(storableText(a.Step))
		} else {
			buf = buf.null().null()
		}
		buf = buf.bool(a.Batch).jsonb(t.adjusted)
	}
	if len(rec.Attempts) > 0 {
		p.attempts = buf[:len(buf):len(buf)]
	}
	mark := len(buf)
	pt, ct := int64(rec.Usage.PromptTokens), int64(rec.Usage.CompletionTokens)
	buf = buf.row(len(jobsTable.columns)).
		text(rec.JobID).text(rec.DocumentID).text(rec.Run).text(rec.SchemaName).int4(version).
		text(rec.SchemaFingerprint).text(rec.Provider).text(rec.Model).text(rec.Pool).text(status).
		text(storableText(redact.Credentials(rec.Reason))).int4(delivery).int4(int32(len(rec.Attempts))).int8(pt).int8(ct).
		text(rec.WorkerID).timestamptz(started).timestamptz(finished).text(rec.DocumentHash).
		int8(int64(rec.Usage.CachedPromptTokens)).int8(int64(rec.Usage.CacheCreationTokens))
	p.job = buf[mark:len(buf):len(buf)]
	if results.ok {
		mark = len(buf)
		buf = buf.row(len(resultsTable.columns)).
			text(rec.DocumentID).text(rec.SchemaFingerprint).text(rec.Model).text(rec.SchemaName).int4(version).
			text(rec.Provider).jsonb(rec.Value).int4(int32(len(rec.Attempts))).int8(pt).int8(ct).
			text(rec.Run).text(rec.JobID).text(rec.DocumentHash).bool(results.redacted).json(results.sources)
		p.result = buf[mark:len(buf):len(buf)]
	}
	p.buf = buf
	if d := rec.DeadLetter; d != nil {
		if err := checkKey("dead-letter stream", d.Stream); err != nil {
			return fmt.Errorf("audit: record of job %s: %s: %w", rec.JobID, err, ErrInvalidRecord)
		}
		p.dead = tuple(nil).row(len(deadLettersTable.columns)).
			text(d.Stream).int8(int64(d.Seq)).text(rec.JobID).text(rec.DocumentID).text(rec.Run).
			text(rec.SchemaName).int4(version).text(storableText(redact.Credentials(d.Reason)))
	}
	return nil
}

// jsonOrEmpty passes valid JSON through (redacted, \u0000 replaced);
// anything else is stored as NULL (nil). known is JSON already found
// valid (the record's value, which the last attempt's usually equals), or
// nil: b equal to it is not scanned again.
func jsonOrEmpty(b, known json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	same := bytes.Equal(b, known)
	if !same && !jsonx.Valid(b) {
		return nil
	}
	r := redact.JSON(b)
	if same && len(r) == len(b) && &r[0] == &b[0] {
		return r // unchanged known JSON: toPending found no \u0000 in it
	}
	return replaceNULEscapes(r)
}

// marshalOrEmpty is v as redacted JSON (\u0000 replaced), or nil (NULL)
// when n is 0.
func marshalOrEmpty(v any, n int) []byte {
	if n == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return replaceNULEscapes(redact.JSON(b))
}
