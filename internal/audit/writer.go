package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/extractq/extractq/internal/retry"
)

// ErrWriterClosed is returned by Write after Close.
var ErrWriterClosed = errors.New("audit: writer is closed")

// StatusRetrying is a job's status while its last delivery was not final
// (the job was nak'd and will be redelivered).
const StatusRetrying = "retrying"

// attemptColumns is the COPY column order of attemptRow.
var attemptColumns = []string{
	"job_id", "delivery", "seq", "started_at", "n", "document_id", "run", "schema_name", "schema_version",
	"provider", "model", "mode", "prompt_chars", "prompt_tokens", "completion_tokens", "latency_ms",
	"finish_reason", "raw_response", "value", "repairs", "violations", "error_class", "error_message",
	"transport_retries", "worker_id",
}

type jobRow struct {
	jobID, documentID, run, schemaName string
	schemaVersion                      int32
	fingerprint, provider, model, pool string
	status, reason                     string
	deliveries, attempts               int32
	promptTokens, completionTokens     int64
	workerID                           string
	startedAt, finishedAt              time.Time
}

type resultRow struct {
	documentID, fingerprint, model, schemaName string
	schemaVersion                              int32
	provider                                   string
	value                                      string
	attempts                                   int32
	promptTokens, completionTokens             int64
	run, jobID                                 string
}

type deadRow struct {
	stream                       string
	seq                          int64
	jobID, documentID, run, name string
	version                      int32
	reason                       string
}

// pending is one record converted to rows, waiting for its flush.
type pending struct {
	attempts [][]any
	job      jobRow
	result   *resultRow
	dead     *deadRow
	done     chan error // buffered: the flusher never blocks on it
}

func (p *pending) rows() int {
	n := len(p.attempts) + 1
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

// WithMaxDelay flushes a batch at the latest this long after its first
// record arrived. Default 5ms: the price of group commit in latency.
func WithMaxDelay(d time.Duration) WriterOption { return func(c *writerConfig) { c.maxDelay = d } }

// WithQueueSize bounds how many records wait for a flush; Write blocks when
// the queue is full (back-pressure). Default 4096.
func WithQueueSize(n int) WriterOption { return func(c *writerConfig) { c.queueSize = max(1, n) } }

// WithFlushers sets how many batches may be in flight at once, each on its
// own connection. Default 2.
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
	wg     sync.WaitGroup
	stop   context.CancelFunc // cancels in-flight flushes on a hard close
	base   context.Context

	batches, flushErrors, records, rows, attemptRows, dups atomic.Uint64
	flushNanos, lastNanos, maxNanos                        atomic.Int64
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

func defaultWriterConfig() writerConfig {
	return writerConfig{maxBatchRows: 4000, maxDelay: 5 * time.Millisecond, queueSize: 4096, flushers: 2, flushTimeout: 15 * time.Second}
}

// startWriter starts the collector and the flushers. Flushes outlive ctx's
// cancellation (they stop on Close) but keep its values.
func startWriter(ctx context.Context, s *Store, cfg writerConfig) *GroupWriter {
	base, stop := context.WithCancel(context.WithoutCancel(ctx))
	w := &GroupWriter{
		store: s, cfg: cfg, base: base, stop: stop,
		queue: make(chan *pending, cfg.queueSize),
		batch: make(chan []*pending),
	}
	w.wg.Add(1 + cfg.flushers)
	go w.collect()
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
	p, err := toPending(rec, w.store.now())
	if err != nil {
		return err
	}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return ErrWriterClosed
	}
	select {
	case w.queue <- p:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		return fmt.Errorf("audit: queue record of job %s: %w", rec.JobID, ctx.Err())
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("audit: wait for flush of job %s: %w", rec.JobID, ctx.Err())
	}
}

// Close flushes what is queued and stops the writer. If ctx ends first,
// in-flight flushes are cancelled and their Writes get an error.
func (w *GroupWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
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
		FlushTime:     time.Duration(w.flushNanos.Load()),
		LastFlush:     time.Duration(w.lastNanos.Load()),
		MaxFlush:      time.Duration(w.maxNanos.Load()),
		Queued:        len(w.queue),
		QueueCapacity: cap(w.queue),
	}
}

// collect groups queued records into batches, cut by size or by age.
func (w *GroupWriter) collect() {
	defer w.wg.Done()
	defer close(w.batch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var cur []*pending
	rows := 0
	send := func() {
		timer.Stop()
		w.batch <- cur
		cur, rows = nil, 0
	}
	for {
		if len(cur) == 0 {
			p, ok := <-w.queue
			if !ok {
				return
			}
			cur, rows = append(cur, p), p.rows()
			timer.Reset(w.cfg.maxDelay)
			if rows >= w.cfg.maxBatchRows {
				send()
			}
			continue
		}
		select {
		case p, ok := <-w.queue:
			if !ok {
				send()
				return
			}
			cur, rows = append(cur, p), rows+p.rows()
			if rows >= w.cfg.maxBatchRows {
				send()
			}
		case <-timer.C:
			send()
		}
	}
}

func (w *GroupWriter) flushLoop() {
	defer w.wg.Done()
	for b := range w.batch {
		start := time.Now()
		rows, attempts, err := w.flush(b)
		d := time.Since(start)
		if err != nil {
			w.flushErrors.Add(1)
			err = fmt.Errorf("audit: flush of %d records failed, not durable (nak and redeliver): %w", len(b), err)
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
		for _, p := range b {
			p.done <- err
		}
	}
}

// flush writes one batch in one transaction. Attempts are COPYed straight
// into their table; only if some are already stored (a record written
// again after a failed or uncertain flush) does it redo the batch through a
// staging table with ON CONFLICT DO NOTHING.
func (w *GroupWriter) flush(b []*pending) (rows, attempts int, err error) {
	ctx, cancel := context.WithTimeout(w.base, w.cfg.flushTimeout)
	defer cancel()
	var att [][]any
	for _, p := range b {
		att = append(att, p.attempts...)
		rows += p.rows()
	}
	err = w.flushTx(ctx, b, att, false)
	if isUniqueViolation(err) {
		w.dups.Add(1)
		err = w.flushTx(ctx, b, att, true)
	}
	return rows, len(att), err
}

func (w *GroupWriter) flushTx(ctx context.Context, b []*pending, att [][]any, staged bool) error {
	tx, err := w.store.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	if len(att) > 0 {
		if staged {
			if _, err := tx.Exec(ctx, "CREATE TEMP TABLE attempts_stage (LIKE attempts INCLUDING DEFAULTS) ON COMMIT DROP"); err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"attempts_stage"}, attemptColumns, pgx.CopyFromRows(att)); err != nil {
				return fmt.Errorf("copy attempts to staging: %w", err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO attempts SELECT * FROM attempts_stage ON CONFLICT DO NOTHING"); err != nil {
				return fmt.Errorf("insert staged attempts: %w", err)
			}
		} else if _, err := tx.CopyFrom(ctx, pgx.Identifier{"attempts"}, attemptColumns, pgx.CopyFromRows(att)); err != nil {
			return fmt.Errorf("copy attempts: %w", err)
		}
	}
	batch := &pgx.Batch{}
	queueJobs(batch, b)
	queueResults(batch, b)
	queueDeadLetters(batch, b)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// queueJobs upserts one row per job; a later delivery wins, an older one
// (or the same one written again) changes nothing.
func queueJobs(batch *pgx.Batch, b []*pending) {
	latest := make(map[string]*jobRow, len(b))
	order := make([]string, 0, len(b))
	for _, p := range b {
		j := &p.job
		if cur, ok := latest[j.jobID]; !ok {
			order = append(order, j.jobID)
			latest[j.jobID] = j
		} else if j.deliveries >= cur.deliveries {
			latest[j.jobID] = j
		}
	}
	n := len(order)
	var (
		ids, docs, runs, names, fps, provs, models, pools, stats, reasons, workers = mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n)
		versions, deliveries, attempts                                             = make([]int32, n), make([]int32, n), make([]int32, n)
		pt, ct                                                                     = make([]int64, n), make([]int64, n)
		starts, ends                                                               = make([]time.Time, n), make([]time.Time, n)
	)
	for i, id := range order {
		j := latest[id]
		ids[i], docs[i], runs[i], names[i], fps[i] = j.jobID, j.documentID, j.run, j.schemaName, j.fingerprint
		provs[i], models[i], pools[i], stats[i], reasons[i], workers[i] = j.provider, j.model, j.pool, j.status, j.reason, j.workerID
		versions[i], deliveries[i], attempts[i] = j.schemaVersion, j.deliveries, j.attempts
		pt[i], ct[i], starts[i], ends[i] = j.promptTokens, j.completionTokens, j.startedAt, j.finishedAt
	}
	batch.Queue(`INSERT INTO jobs (job_id, document_id, run, schema_name, schema_version, schema_fingerprint, provider, model, pool,
	        status, reason, deliveries, attempts, prompt_tokens, completion_tokens, worker_id, started_at, finished_at)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[],
	        $10::text[], $11::text[], $12::int[], $13::int[], $14::bigint[], $15::bigint[], $16::text[], $17::timestamptz[], $18::timestamptz[])
	ON CONFLICT (job_id) DO UPDATE SET
	    status = excluded.status, reason = excluded.reason, deliveries = excluded.deliveries, attempts = excluded.attempts,
	    prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
	    provider = excluded.provider, model = excluded.model, pool = excluded.pool, worker_id = excluded.worker_id,
	    started_at = least(jobs.started_at, excluded.started_at), finished_at = excluded.finished_at, updated_at = now()
	WHERE jobs.deliveries < excluded.deliveries
	   OR (jobs.deliveries = excluded.deliveries AND jobs.status = 'retrying' AND excluded.status <> 'retrying')`,
		ids, docs, runs, names, versions, fps, provs, models, pools, stats, reasons, deliveries, attempts, pt, ct, workers, starts, ends)
}

func queueResults(batch *pgx.Batch, b []*pending) {
	var rs []*resultRow
	for _, p := range b {
		if p.result != nil {
			rs = append(rs, p.result)
		}
	}
	if len(rs) == 0 {
		return
	}
	n := len(rs)
	docs, fps, models, names, provs, values, runs, jobs := mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n), mk(n)
	versions, attempts := make([]int32, n), make([]int32, n)
	pt, ct := make([]int64, n), make([]int64, n)
	for i, r := range rs {
		docs[i], fps[i], models[i], names[i], provs[i], values[i], runs[i], jobs[i] = r.documentID, r.fingerprint, r.model, r.schemaName, r.provider, r.value, r.run, r.jobID
		versions[i], attempts[i], pt[i], ct[i] = r.schemaVersion, r.attempts, r.promptTokens, r.completionTokens
	}
	batch.Queue(`INSERT INTO results (document_id, schema_fingerprint, model, schema_name, schema_version, provider, value,
	        attempts, prompt_tokens, completion_tokens, run, job_id)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::text[], $7::jsonb[],
	        $8::int[], $9::bigint[], $10::bigint[], $11::text[], $12::text[])
	ON CONFLICT DO NOTHING`, docs, fps, models, names, versions, provs, values, attempts, pt, ct, runs, jobs)
}

func queueDeadLetters(batch *pgx.Batch, b []*pending) {
	var ds []*deadRow
	for _, p := range b {
		if p.dead != nil {
			ds = append(ds, p.dead)
		}
	}
	if len(ds) == 0 {
		return
	}
	n := len(ds)
	streams, jobs, docs, runs, names, reasons := mk(n), mk(n), mk(n), mk(n), mk(n), mk(n)
	seqs, versions := make([]int64, n), make([]int32, n)
	for i, d := range ds {
		streams[i], jobs[i], docs[i], runs[i], names[i], reasons[i] = d.stream, d.jobID, d.documentID, d.run, d.name, d.reason
		seqs[i], versions[i] = d.seq, d.version
	}
	batch.Queue(`INSERT INTO dead_letters (stream, seq, job_id, document_id, run, schema_name, schema_version, reason)
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[])
	ON CONFLICT DO NOTHING`, streams, seqs, jobs, docs, runs, names, versions, reasons)
}

func mk(n int) []string { return make([]string, n) }

// toPending checks rec and converts it to rows, redacting credentials.
// It runs on the caller's goroutine so that conversion is parallel.
func toPending(rec *Record, now time.Time) (*pending, error) {
	if rec == nil || rec.JobID == "" || rec.DocumentID == "" {
		return nil, errors.New("audit: record needs a JobID and a DocumentID (worker bug: the record was not written)")
	}
	started, finished := rec.StartedAt, rec.FinishedAt
	if started.IsZero() {
		started = now
	}
	if finished.IsZero() {
		finished = now
	}
	delivery := int32(max(rec.Delivery, 1))
	p := &pending{done: make(chan error, 1)}
	p.attempts = make([][]any, 0, len(rec.Attempts))
	for i := range rec.Attempts {
		a := &rec.Attempts[i]
		at := a.StartedAt
		if at.IsZero() {
			at = started
		}
		p.attempts = append(p.attempts, []any{
			rec.JobID, delivery, int32(i + 1), at, int32(a.N), rec.DocumentID, rec.Run, rec.SchemaName, int32(rec.SchemaVersion),
			a.Provider, a.Model, string(a.Mode), int32(a.PromptChars), int32(a.Usage.PromptTokens), int32(a.Usage.CompletionTokens),
			float64(a.Latency) / float64(time.Millisecond),
			string(a.FinishReason), redact(a.Raw), jsonOrNil(a.Value), marshalOrNil(a.Repairs, len(a.Repairs)),
			marshalOrNil(a.Violations, len(a.Violations)), string(a.Class), redact(a.Error),
			int32(a.TransportRetries), rec.WorkerID,
		})
	}
	status := string(rec.Outcome)
	if !rec.Final {
		status = StatusRetrying
	} else if status == "" {
		return nil, fmt.Errorf("audit: final record of job %s has no outcome (worker bug: the record was not written)", rec.JobID)
	}
	p.job = jobRow{
		jobID: rec.JobID, documentID: rec.DocumentID, run: rec.Run, schemaName: rec.SchemaName,
		schemaVersion: int32(rec.SchemaVersion), fingerprint: rec.SchemaFingerprint, provider: rec.Provider,
		model: rec.Model, pool: rec.Pool, status: status, reason: redact(rec.Reason), deliveries: delivery,
		attempts: int32(len(rec.Attempts)), promptTokens: int64(rec.Usage.PromptTokens),
		completionTokens: int64(rec.Usage.CompletionTokens), workerID: rec.WorkerID,
		startedAt: started, finishedAt: finished,
	}
	if rec.Final && rec.Outcome == retry.OutcomeOK {
		if !json.Valid(rec.Value) {
			return nil, fmt.Errorf("audit: job %s is ok but its value is not JSON (worker bug: the record was not written)", rec.JobID)
		}
		p.result = &resultRow{
			documentID: rec.DocumentID, fingerprint: rec.SchemaFingerprint, model: rec.Model,
			schemaName: rec.SchemaName, schemaVersion: int32(rec.SchemaVersion), provider: rec.Provider,
			value: string(rec.Value), attempts: int32(len(rec.Attempts)),
			promptTokens: int64(rec.Usage.PromptTokens), completionTokens: int64(rec.Usage.CompletionTokens),
			run: rec.Run, jobID: rec.JobID,
		}
	}
	if d := rec.DeadLetter; d != nil {
		p.dead = &deadRow{
			stream: d.Stream, seq: int64(d.Seq), jobID: rec.JobID, documentID: rec.DocumentID, run: rec.Run,
			name: rec.SchemaName, version: int32(rec.SchemaVersion), reason: redact(d.Reason),
		}
	}
	return p, nil
}

// jsonOrNil passes valid JSON through (redacted) and stores anything else as NULL.
func jsonOrNil(b json.RawMessage) any {
	if len(b) == 0 || !json.Valid(b) {
		return nil
	}
	return string(redactJSON(b))
}

func marshalOrNil(v any, n int) any {
	if n == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return string(redactJSON(b))
}
