package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// A run's done state (migration 014, run_done): the submissions count the
// jobs they queue into a run and seal it when they finish queueing; a
// sweeper announces a sealed run once as many of its jobs are final.

// CountRunJobs counts jobs into run, each once whatever the submissions
// that count it (migration 019), and returns how many were new to the
// count. queued are jobs the server acked as new; seen are jobs of the
// run a submission found queued or final already, which the submission
// that queued them may not have counted (killed between the server's ack
// and its count): they count only in a run counted by job from its start
// (run_done.by_job), since an older run's count has no record of which
// jobs it holds. A submission calls it after each batch the server acked,
// so that one that stops half-way still counted what it queued, and its
// rerun counts the rest. The ids are kept in one row per count until a
// count brings seen jobs, then one row per job (see the migration).
func (s *Store) CountRunJobs(ctx context.Context, run string, queued, seen []string) (int, error) {
	if len(queued) == 0 && len(seen) == 0 {
		return 0, nil
	}
	var n int
	err := s.pool.QueryRow(ctx, countRunJobsSQL, run, queued, seen).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("audit: count the jobs of run %q: %w", run, err)
	}
	return n, nil
}

// countRunJobsSQL counts in one statement (migration 019's function):
// what counting a batch cost before (one upsert of run_done), and the
// batch's ids in one row.
const countRunJobsSQL = `SELECT extractq_count_run_jobs($1, $2, $3)`

// SealRun records that a submission into run finished queueing and
// returns the run's new generation: the run is done (again) once as many
// of its jobs are final as were counted.
func (s *Store) SealRun(ctx context.Context, run string) (int, error) {
	var gen int
	err := s.pool.QueryRow(ctx, `INSERT INTO run_done AS d (run, sealed, sealed_at) VALUES ($1, 1, now())
		ON CONFLICT (run) DO UPDATE SET sealed = d.sealed + 1, sealed_at = now(), updated_at = now()
		RETURNING sealed`, run).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("audit: seal run %q: %w", run, err)
	}
	return gen, nil
}

// RunDone is a run's done state with its final jobs.
type RunDone struct {
	Run               string
	Jobs              int64 // counted by the submissions
	Sealed, Announced int   // generations
	Published         int
	DoneEvent         []byte // as announced (nil before)
	// ClaimAge is how long ago Announced was claimed, on the database's
	// clock (0 before).
	ClaimAge  time.Duration
	Final, OK int64 // the run's final jobs and those ok, from run_totals
}

// Done reports whether the run's latest generation may be announced:
// sealed, not announced, and as many of its jobs final as were queued.
func (d RunDone) Done() bool {
	return d.Sealed > d.Announced && d.Final >= d.Jobs
}

const runDoneSelect = `SELECT d.run, d.jobs, d.sealed, d.announced, d.published,
	d.done_event, coalesce(t.final, 0), coalesce(t.ok, 0),
	coalesce((extract(epoch FROM clock_timestamp() - d.announced_at) * 1e6)::bigint, 0)
	FROM run_done d
	LEFT JOIN LATERAL (SELECT sum(jobs) FILTER (WHERE status <> 'retrying') AS final, sum(jobs) FILTER (WHERE status = 'ok') AS ok
	                   FROM run_totals WHERE run = d.run) t ON true`

func collectRunDone(rows pgx.Rows) ([]RunDone, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunDone, error) {
		var d RunDone
		var age int64
		err := r.Scan(&d.Run, &d.Jobs, &d.Sealed, &d.Announced, &d.Published,
			&d.DoneEvent, &d.Final, &d.OK, &age)
		d.ClaimAge = time.Duration(age) * time.Microsecond
		return d, err
	})
}

// OpenRuns are the runs sealed and not announced, or announced and not
// published: the sweeper's work (a partial index keeps it to these few).
func (s *Store) OpenRuns(ctx context.Context) ([]RunDone, error) {
	rows, err := s.pool.Query(ctx, runDoneSelect+` WHERE d.open ORDER BY d.run`)
	if err != nil {
		return nil, fmt.Errorf("audit: runs to announce: %w", err)
	}
	out, err := collectRunDone(rows)
	if err != nil {
		return nil, fmt.Errorf("audit: runs to announce: %w", err)
	}
	return out, nil
}

// RunDoneState is run's done state; ok is false when no submission
// counted or sealed it.
func (s *Store) RunDoneState(ctx context.Context, run string) (RunDone, bool, error) {
	rows, err := s.pool.Query(ctx, runDoneSelect+` WHERE d.run = $1`, run)
	if err != nil {
		return RunDone{}, false, fmt.Errorf("audit: done state of run %q: %w", run, err)
	}
	out, err := collectRunDone(rows)
	if err != nil || len(out) == 0 {
		return RunDone{}, false, err
	}
	return out[0], true, nil
}

// ClaimRunDone claims the announcement of d's generation d.Sealed with
// event as its done event, for by (submit or a worker's id). It fails
// (false) when someone else claimed it, the run was sealed again, or more
// jobs were counted since d was read: the caller then announces nothing.
func (s *Store) ClaimRunDone(ctx context.Context, d RunDone, event []byte, by string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE run_done SET announced = sealed, done_event = $4, announced_by = $5,
		announced_at = now(), updated_at = now()
		WHERE run = $1 AND sealed = $2 AND announced < sealed AND jobs = $3`, d.Run, d.Sealed, d.Jobs, event, by)
	if err != nil {
		return false, fmt.Errorf("audit: claim the done event of run %q: %w", d.Run, err)
	}
	return tag.RowsAffected() == 1, nil
}

// MarkRunPublished records that generation gen's done event of run is on
// the events stream (or that there is no stream to publish it on).
func (s *Store) MarkRunPublished(ctx context.Context, run string, gen int) error {
	_, err := s.pool.Exec(ctx, `UPDATE run_done SET published = greatest(published, $2), updated_at = now()
		WHERE run = $1 AND announced >= $2`, run, gen)
	if err != nil {
		return fmt.Errorf("audit: mark the done event of run %q published: %w", run, err)
	}
	return nil
}

// RunWebhook is the webhook registered with a run (run_webhooks). The URL
// is sealed with a key derived from the signing secret (package webhook).
type RunWebhook struct {
	Run         string
	URLRedacted string
	URLSealed   []byte
	KeyID       string
	Events      []string
	Timeout     time.Duration
	// Set by PendingRunWebhooks: the done generation to deliver and its
	// event.
	DoneGeneration int
	DoneEvent      []byte
}

// RegisterRunWebhook registers h with its run, replacing an earlier one;
// a generation already delivered stays delivered.
func (s *Store) RegisterRunWebhook(ctx context.Context, h RunWebhook) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO run_webhooks (run, url_redacted, url_sealed, key_id, events, timeout_ms)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (run) DO UPDATE SET url_redacted = excluded.url_redacted, url_sealed = excluded.url_sealed,
			key_id = excluded.key_id, events = excluded.events, timeout_ms = excluded.timeout_ms, updated_at = now()`,
		h.Run, h.URLRedacted, h.URLSealed, h.KeyID, h.Events, h.Timeout.Milliseconds())
	if err != nil {
		return fmt.Errorf("audit: register the webhook of run %q: %w", h.Run, err)
	}
	return nil
}

// AnnouncedBySubmit is run_done.announced_by for a waiting submit that
// delivers the run's webhook itself.
const AnnouncedBySubmit = "submit"

// PendingRunWebhooks are the registered webhooks that want done events
// and whose run has a done generation announced and not delivered. A
// generation a waiting submit announced is that submit's to deliver: it
// is pending here only once the submit's delivery time (and a minute)
// has passed without it being marked, as when that submit died.
func (s *Store) PendingRunWebhooks(ctx context.Context) ([]RunWebhook, error) {
	return s.runWebhooks(ctx, `WHERE 'done' = ANY (w.events) AND d.announced > w.done_delivered
		AND (d.announced_by IS DISTINCT FROM $1 OR d.announced_at < now() - (w.timeout_ms + 60000) * interval '1 millisecond')
		ORDER BY w.run`, AnnouncedBySubmit)
}

// RunWebhookOf is run's registered webhook, nil without one.
func (s *Store) RunWebhookOf(ctx context.Context, run string) (*RunWebhook, error) {
	hs, err := s.runWebhooks(ctx, `WHERE w.run = $1`, run)
	if err != nil || len(hs) == 0 {
		return nil, err
	}
	return &hs[0], nil
}

func (s *Store) runWebhooks(ctx context.Context, where string, args ...any) ([]RunWebhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT w.run, w.url_redacted, w.url_sealed, w.key_id, w.events, w.timeout_ms,
		coalesce(d.announced, 0), d.done_event
		FROM run_webhooks w LEFT JOIN run_done d USING (run) `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: run webhooks: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunWebhook, error) {
		var h RunWebhook
		var ms int64
		err := r.Scan(&h.Run, &h.URLRedacted, &h.URLSealed, &h.KeyID, &h.Events, &ms, &h.DoneGeneration, &h.DoneEvent)
		h.Timeout = time.Duration(ms) * time.Millisecond
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("audit: run webhooks: %w", err)
	}
	return out, nil
}

// MarkRunWebhookDelivered records that run's done generation gen was
// delivered, or given up on (the delivery log says which).
func (s *Store) MarkRunWebhookDelivered(ctx context.Context, run string, gen int) error {
	_, err := s.pool.Exec(ctx, `UPDATE run_webhooks SET done_delivered = greatest(done_delivered, $2), updated_at = now()
		WHERE run = $1`, run, gen)
	if err != nil {
		return fmt.Errorf("audit: mark the webhook of run %q delivered: %w", run, err)
	}
	return nil
}

// RunDeadLetter is a dead letter of a run whose webhook receives them.
type RunDeadLetter struct {
	JobID, DocumentID, Schema, Reason string
	SchemaVersion                     int
	CreatedAt                         time.Time
}

// PendingDeadLetters are, for each registered webhook that receives
// dead letters, up to limit of its run's dead letters after the last one
// delivered, oldest first, and made at least lag ago (a dead letter whose
// transaction commits late must not be passed over).
func (s *Store) PendingDeadLetters(ctx context.Context, lag time.Duration, limit int) (map[string][]RunDeadLetter, []RunWebhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT w.run, l.job_id, l.document_id, l.schema_name, l.schema_version, l.reason, l.created_at
		FROM run_webhooks w
		CROSS JOIN LATERAL (SELECT * FROM dead_letters d
			WHERE d.run = w.run AND (d.created_at, d.job_id) > (w.dead_letters_at, w.dead_letters_job)
			  AND d.created_at < now() - $1 * interval '1 microsecond'
			ORDER BY d.created_at, d.job_id LIMIT $2) l
		WHERE 'dead_letter' = ANY (w.events)
		ORDER BY w.run, l.created_at, l.job_id`, lag.Microseconds(), limit)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: dead letters to deliver: %w", err)
	}
	out := map[string][]RunDeadLetter{}
	var runs []string
	var run string
	var l RunDeadLetter
	_, err = pgx.ForEachRow(rows, []any{&run, &l.JobID, &l.DocumentID, &l.Schema, &l.SchemaVersion, &l.Reason, &l.CreatedAt}, func() error {
		if _, seen := out[run]; !seen {
			runs = append(runs, run)
		}
		out[run] = append(out[run], l)
		return nil
	})
	if err != nil || len(runs) == 0 {
		return nil, nil, err
	}
	hooks, err := s.runWebhooks(ctx, `WHERE w.run = ANY ($1) ORDER BY w.run`, runs)
	return out, hooks, err
}

// MarkDeadLetterDelivered records that run's webhook has had l (delivered,
// or given up on): the next delivery starts after it.
func (s *Store) MarkDeadLetterDelivered(ctx context.Context, run string, l RunDeadLetter) error {
	_, err := s.pool.Exec(ctx, `UPDATE run_webhooks SET dead_letters_at = $2, dead_letters_job = $3, updated_at = now()
		WHERE run = $1 AND (dead_letters_at, dead_letters_job) < ($2, $3)`, run, l.CreatedAt, l.JobID)
	if err != nil {
		return fmt.Errorf("audit: mark the dead letter %s of run %q delivered: %w", l.JobID, run, err)
	}
	return nil
}

// WebhookTries is how many tries of delivery id the log holds: a delivery
// resumed after a crash goes on from the next.
func (s *Store) WebhookTries(ctx context.Context, deliveryID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(attempt), 0) FROM webhook_deliveries WHERE delivery_id = $1`, deliveryID).Scan(&n); err != nil {
		return 0, fmt.Errorf("audit: tries of webhook delivery %s: %w", deliveryID, err)
	}
	return n, nil
}

// Lock is a session advisory lock taken on a connection of its own (not
// one of the pool's, which the audit writer needs): one holder at a time
// across every process on the database. It ends with Close, or when the
// connection drops (a killed process).
type Lock struct {
	cfg  *pgx.ConnConfig
	key  string
	conn *pgx.Conn
	held bool
}

// NewLock is the advisory lock named key; nothing is connected until
// TryLock.
func (s *Store) NewLock(key string) *Lock {
	return &Lock{cfg: s.pool.Config().ConnConfig.Copy(), key: key}
}

// TryLock takes the lock without waiting, or checks that it is still held:
// true while this process holds it. A lost connection loses the lock
// (false and the error); the next call connects again and tries.
func (l *Lock) TryLock(ctx context.Context) (bool, error) {
	if l.conn == nil {
		c, err := pgx.ConnectConfig(ctx, l.cfg)
		if err != nil {
			return false, fmt.Errorf("audit: lock %s: %w", l.key, err)
		}
		l.conn = c
	}
	var err error
	if l.held {
		err = l.conn.Ping(ctx)
	} else {
		err = l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, l.key).Scan(&l.held)
	}
	if err != nil {
		l.Close()
		return false, fmt.Errorf("audit: lock %s: %w", l.key, err)
	}
	return l.held, nil
}

// Close releases the lock (its session ends) and the connection.
func (l *Lock) Close() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.conn.Close(ctx)
	}
	l.conn, l.held = nil, false
}

// StartRunCount makes run's count start from the jobs the audit already
// holds of it (run_totals) when no submission has counted the run: a
// resubmission into a run whose jobs were never counted (queued before
// migration 014, or by a library caller that does not count) then awaits
// its own jobs as well as those. A counted run is left as it is. Call it
// before queueing into the run, so that none of the new jobs is among
// those it finds.
func (s *Store) StartRunCount(ctx context.Context, run string) error {
	// The ids of jobs found in run_totals were never recorded: such a
	// run is not counted by job (CountRunJobs, run_done.by_job).
	_, err := s.pool.Exec(ctx, `INSERT INTO run_done (run, jobs, by_job)
		SELECT $1, n, n = 0 FROM (SELECT coalesce(sum(jobs), 0) AS n FROM run_totals WHERE run = $1) t
		ON CONFLICT (run) DO NOTHING`, run)
	if err != nil {
		return fmt.Errorf("audit: start counting the jobs of run %q: %w", run, err)
	}
	return nil
}
