package audit

import "github.com/jackc/pgx/v5"

// The three jobs people give the database: each gets only what it needs.
// The owner (whoever runs `extractq audit migrate`) owns every table and
// function; the SECURITY DEFINER functions run as the owner and do exactly
// one thing each, so a role with EXECUTE on one can do that thing and
// nothing more.

// WorkerGrants are the statements that let role run workers. A worker may:
// insert attempts, jobs, results and dead letters (never update or delete
// them); set a recorded dead letter's stream sequence once, only through
// extractq_set_dead_letter_seq; merge a job's later delivery into its row only through
// extractq_merge_jobs (a later delivery wins, the same delivery only turns
// "retrying" into final); prepare attempt partitions through
// extractq_ensure_attempt_partitions, bounded to ten months between three
// months ago and six months ahead; read the log tables and the schema
// version; record provider batches and update only their polling columns
// (status, counts, lease, holder, closed_at) so any worker can resume one,
// and store their result lines; announce runs done (read run_totals, claim
// and mark run_done, deliver and log a run's registered webhook).
// It may not read documents, change schemas, or UPDATE any other table.
func WorkerGrants(role string) []string {
	r := pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON extractq_schema_version TO " + r,
		// SELECT: the duplicate path stages rows in temporary tables made
		// LIKE these; a worker reads nothing it could not have written.
		"GRANT SELECT, INSERT ON attempts, jobs, results, dead_letters TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_merge_jobs(jsonb) TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_set_dead_letter_seq(text, bigint) TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_ensure_attempt_partitions(date, integer) TO " + r,
		"GRANT SELECT, INSERT ON batches TO " + r,
		"GRANT UPDATE (status, state, failure, succeeded, errored, expired, canceled, worker_id, lease_until, updated_at, closed_at) ON batches TO " + r,
		"GRANT SELECT, INSERT ON batch_lines TO " + r,
		"GRANT SELECT ON run_totals TO " + r,
		"GRANT SELECT ON run_done, run_webhooks TO " + r,
		"GRANT UPDATE (announced, published, done_event, announced_by, announced_at, updated_at) ON run_done TO " + r,
		"GRANT UPDATE (done_delivered, dead_letters_at, dead_letters_job, updated_at) ON run_webhooks TO " + r,
		"GRANT SELECT, INSERT ON webhook_deliveries TO " + r,
	}
}

// SubmitterGrants let role submit and resubmit. A submitter may: register
// schemas (insert, never change one); store documents only through
// extractq_put_documents, which inserts new ids and replaces a document's
// text only after keeping the earlier text in document_versions (so it can
// add texts but never rewrite, lose or delete one, and body_hash always
// matches the text); read documents, jobs and results to skip finished
// work and select what to resubmit; record resubmissions and set
// dead_letters.resubmitted_at (no other column); keep the watermarks of
// its incremental runs (submit --incremental: its own state, read,
// written and reset); count and seal its runs and register their webhooks
// (run_done, run_webhooks; extractq_count_run_jobs), and log its webhook deliveries (insert only).
// It may not write attempts, jobs or results.
func SubmitterGrants(role string) []string {
	r := pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON extractq_schema_version, jobs, results, documents, document_versions TO " + r,
		"GRANT SELECT, INSERT ON schemas, resubmissions TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_put_documents(text[], text[], jsonb[], text[]) TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_put_documents(text[], text[], jsonb[], text[], text[], jsonb[]) TO " + r,
		"GRANT SELECT, UPDATE (resubmitted_at) ON dead_letters TO " + r,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON source_watermarks, source_items TO " + r,
		"GRANT SELECT, INSERT ON webhook_deliveries TO " + r,
		"GRANT SELECT ON run_totals TO " + r,
		"GRANT SELECT, INSERT, UPDATE ON run_done, run_webhooks TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_count_run_jobs(text, text[], text[]) TO " + r,
	}
}

// ReaderGrants let role run status, history and export, and the analyst
// views: read everything, write nothing.
func ReaderGrants(role string) []string {
	r := pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + r,
	}
}
