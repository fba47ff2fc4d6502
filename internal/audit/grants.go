package audit

import "github.com/jackc/pgx/v5"

// The three jobs people give the database: each gets only what it needs.
// The owner (whoever runs `extractq audit migrate`) owns every table.

// WorkerGrants are the statements that let role run workers: write
// attempts, jobs, results and dead letters, read the schema version, and
// prepare attempt partitions through the SECURITY DEFINER function. It can
// update nothing but jobs, delete nothing, and read no documents.
func WorkerGrants(role string) []string {
	r := pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON extractq_schema_version TO " + r,
		// SELECT: the duplicate path stages rows in temporary tables made
		// LIKE these; a worker reads nothing it could not have written.
		"GRANT SELECT, INSERT ON attempts, results, dead_letters TO " + r,
		"GRANT SELECT, INSERT, UPDATE ON jobs TO " + r,
		"GRANT EXECUTE ON FUNCTION extractq_ensure_attempt_partitions(date, integer) TO " + r,
	}
}

// SubmitterGrants let role submit and resubmit: register schemas, store
// documents, select what to resubmit and mark it.
func SubmitterGrants(role string) []string {
	r := pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON extractq_schema_version, jobs, results TO " + r,
		"GRANT SELECT, INSERT ON schemas, resubmissions TO " + r,
		"GRANT SELECT, INSERT, UPDATE ON documents TO " + r,
		"GRANT SELECT, UPDATE ON dead_letters TO " + r,
	}
}

// ReaderGrants let role run status, history and export, and the analyst
// views.
func ReaderGrants(role string) []string {
	r := pgx.Identifier{role}.Sanitize()
	return []string{
		"GRANT USAGE ON SCHEMA public TO " + r,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + r,
	}
}
