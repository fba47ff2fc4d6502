package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// WebhookAttempt is one try of a webhook delivery (migration 011,
// webhook_deliveries).
type WebhookAttempt struct {
	DeliveryID string
	Run        string
	Event      string
	URL        string // without credentials, query or fragment: the caller redacts it
	Attempt    int
	StatusCode int // 0: no response
	Error      string
	Duration   time.Duration
	CreatedAt  time.Time
}

// RecordWebhookAttempt adds one try to the delivery log.
func (s *Store) RecordWebhookAttempt(ctx context.Context, a WebhookAttempt) error {
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO webhook_deliveries
		(delivery_id, run, event, url, attempt, status_code, error, duration_ms, created_at)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, 0), NULLIF($7, ''), $8, $9)`,
		a.DeliveryID, a.Run, a.Event, a.URL, a.Attempt, a.StatusCode, a.Error,
		float64(a.Duration)/float64(time.Millisecond), a.CreatedAt)
	if err != nil {
		return fmt.Errorf("audit: record webhook delivery %s try %d: %w", a.DeliveryID, a.Attempt, err)
	}
	return nil
}

// WebhookAttempts are the tries of run's webhook deliveries, oldest first.
func (s *Store) WebhookAttempts(ctx context.Context, run string) ([]WebhookAttempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT delivery_id, run, event, url, attempt, coalesce(status_code, 0),
		coalesce(error, ''), duration_ms, created_at
		FROM webhook_deliveries WHERE run = $1 ORDER BY created_at, delivery_id, attempt`, run)
	if err != nil {
		return nil, fmt.Errorf("audit: webhook deliveries of run %q: %w", run, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookAttempt, error) {
		var a WebhookAttempt
		var ms float64
		err := r.Scan(&a.DeliveryID, &a.Run, &a.Event, &a.URL, &a.Attempt, &a.StatusCode, &a.Error, &ms, &a.CreatedAt)
		a.Duration = time.Duration(ms * float64(time.Millisecond))
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("audit: webhook deliveries of run %q: %w", run, err)
	}
	return out, nil
}
