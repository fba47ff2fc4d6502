// Package jobs is extractq's queue on NATS JetStream: the job and dead-letter
// streams, the versioned job envelope, publishing (with large documents in an
// Object Store bucket), the per-pool pull consumers, the schema-body cache and
// the dead-letter stream's browse/delete operations.
//
// Layout on the server:
//
//	EXTRACTQ_JOBS        work-queue stream, subjects extractq.jobs.<pool>
//	EXTRACTQ_DLQ         limits stream (browsable), subjects extractq.dlq.<pool>
//	EXTRACTQ_ADVISORIES  work-queue stream capturing the server's
//	                     max-deliveries advisories for EXTRACTQ_JOBS, so none
//	                     is lost while no worker runs
//	EXTRACTQ_DOCS     Object Store bucket for documents above the inline limit
//	EXTRACTQ_SCHEMAS  KV bucket: schema fingerprint -> schema body
//
// The schema body travels once per fingerprint through the EXTRACTQ_SCHEMAS
// KV bucket rather than the audit store, so a worker needs only NATS to
// resolve a job (Postgres is for writing) and a worker whose database is
// briefly down still decodes its jobs.
package jobs

import (
	"fmt"
	"regexp"
	"strings"
)

// Names of the JetStream assets extractq uses.
const (
	JobsStream     = "EXTRACTQ_JOBS"
	DLQStream      = "EXTRACTQ_DLQ"
	AdvisoryStream = "EXTRACTQ_ADVISORIES"
	DocsBucket     = "EXTRACTQ_DOCS"
	SchemaBucket   = "EXTRACTQ_SCHEMAS"

	jobsSubjectPrefix = "extractq.jobs."
	dlqSubjectPrefix  = "extractq.dlq."

	// MaxDeliveriesAdvisory is the advisory subject the server publishes
	// when a job on EXTRACTQ_JOBS reaches its consumer's MaxDeliver.
	MaxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + JobsStream + ".>"
	// AdvisoryConsumer is the durable consumer workers share on
	// EXTRACTQ_ADVISORIES.
	AdvisoryConsumer = "extractq-advisories"
)

var poolRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidatePool reports whether name can be a pool: it becomes a subject token
// and part of a durable consumer name, so only letters, digits, '_' and '-'.
func ValidatePool(name string) error {
	if !poolRe.MatchString(name) {
		return fmt.Errorf("pool %q: use 1-64 letters, digits, '_' or '-' (it names a subject and a consumer)", name)
	}
	return nil
}

// PoolFor derives the default pool name of a provider spec, one pool per
// provider+model: "openai:gpt-4o-mini" -> "openai_gpt-4o-mini".
func PoolFor(providerSpec string) string {
	var b strings.Builder
	for _, r := range providerSpec {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		s = "default"
	}
	return s
}

// JobSubject is the subject jobs of a pool are published on.
func JobSubject(pool string) string { return jobsSubjectPrefix + pool }

// DLQSubject is the subject dead letters of a pool are published on.
func DLQSubject(pool string) string { return dlqSubjectPrefix + pool }

// ConsumerName is the durable pull consumer of a pool.
func ConsumerName(pool string) string { return "extractq-" + pool }
