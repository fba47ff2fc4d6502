-- Migration 18: what a worker's flush costs Postgres, cut by a sixth
-- without changing what is stored or what any query returns.
--
-- Every document a worker finishes is one COPY row into attempts, jobs and
-- results; Postgres spends most of its CPU on them in B-tree insertions
-- (about 40% of the instructions) and in the statement triggers on jobs
-- (about 23%). Measured with callgrind on the writer's backend
-- (BenchmarkWriterRecord's records, 1,820 records in flushes of about 30):
-- 216,700 instructions per record before, 183,300 after (×0.85).
--
-- 1. The two indexes that serve only equality lookups by document
--    (`audit show`'s history, resubmission, reread, the console's
--    resubmitted documents, the insert trigger's probe below) become hash
--    indexes: an insertion hashes the key once instead of comparing it
--    (through the collation) at every level of a B-tree. jobs_document_idx
--    and attempts_document_idx keep their names; nothing reads them in
--    order (the history sorts its document's few rows itself).
-- 2. Deduplication is off on the two secondary B-trees whose keys are
--    all but unique (jobs_run_doc_idx ends with the job id,
--    results_schema_doc_idx with the creation time): before splitting a
--    full leaf page Postgres looked for duplicates to merge that are not
--    there.
-- 3. The two statement triggers on inserts into jobs (migrations 3 and
--    10) become one, extractq_jobs_inserted, running one statement: the
--    flush's jobs are grouped once (by run, status, schema, provider,
--    model and minute) and that small set feeds both counters, and the
--    probe for a document's other job in its run reads the hash index on
--    document_id (one bucket) instead of descending jobs_run_doc_idx.
--    What is counted is unchanged: run_totals and run_minutes get the same
--    sums, in key order, on the same shard; run_resubmitted the same
--    documents. Updates and deletes keep extractq_run_stats (migration 3).
--
-- The index builds read the tables once; writers wait meanwhile.

DROP INDEX jobs_document_idx;
CREATE INDEX jobs_document_idx ON jobs USING hash (document_id);
DROP INDEX attempts_document_idx;
CREATE INDEX attempts_document_idx ON attempts USING hash (document_id);
ALTER INDEX jobs_run_doc_idx SET (deduplicate_items = off);
ALTER INDEX results_schema_doc_idx SET (deduplicate_items = off);

-- extractq_jobs_inserted is the statement trigger on inserts into jobs:
-- it adds the inserted jobs to run_totals and run_minutes (as
-- extractq_run_stats does for an insert) and marks in run_resubmitted each
-- document that now has another job in its run (as
-- extractq_run_resubmitted did). The probe compares run in "C" so that
-- only the hash index on document_id can answer it: a LIMIT 1 probe per
-- new job, never a scan of the run through jobs_run_doc_idx (the
-- transition table has no statistics to tell the planner how few they
-- are). Equality is the same in every deterministic collation. SECURITY
-- DEFINER: the worker role writes jobs and needs no grant on the counters.
CREATE FUNCTION extractq_jobs_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    WITH g AS MATERIALIZED (
        SELECT run, status, schema_name, schema_version, provider, model, date_trunc('minute', finished_at) AS minute,
               count(*) AS jobs, sum(attempts) AS attempts, sum(prompt_tokens) AS prompt_tokens,
               sum(completion_tokens) AS completion_tokens, min(started_at) AS first_started, max(finished_at) AS last_finished
        FROM new_rows
        GROUP BY run, status, schema_name, schema_version, provider, model, date_trunc('minute', finished_at)
    ), totals AS (
        INSERT INTO run_totals AS t (run, status, schema_name, schema_version, provider, model, shard,
                                     jobs, attempts, prompt_tokens, completion_tokens, first_started, last_finished)
        SELECT run, status, schema_name, schema_version, provider, model, (pg_backend_pid() % 16)::smallint,
               sum(jobs), sum(attempts), sum(prompt_tokens), sum(completion_tokens), min(first_started), max(last_finished)
        FROM g
        GROUP BY run, status, schema_name, schema_version, provider, model
        ORDER BY run, status, schema_name, schema_version, provider, model
        ON CONFLICT (run, status, schema_name, schema_version, provider, model, shard) DO UPDATE SET
            jobs = t.jobs + excluded.jobs, attempts = t.attempts + excluded.attempts,
            prompt_tokens = t.prompt_tokens + excluded.prompt_tokens,
            completion_tokens = t.completion_tokens + excluded.completion_tokens,
            first_started = least(t.first_started, excluded.first_started),
            last_finished = greatest(t.last_finished, excluded.last_finished)
    ), minutes AS (
        INSERT INTO run_minutes AS m (run, minute, shard, ok, failed)
        SELECT run, minute, (pg_backend_pid() % 16)::smallint,
               coalesce(sum(jobs) FILTER (WHERE status = 'ok'), 0), coalesce(sum(jobs) FILTER (WHERE status <> 'ok'), 0)
        FROM g
        WHERE status <> 'retrying'
        GROUP BY run, minute
        ORDER BY run, minute
        ON CONFLICT (run, minute, shard) DO UPDATE SET ok = m.ok + excluded.ok, failed = m.failed + excluded.failed
    )
    INSERT INTO run_resubmitted (run, document_id)
    SELECT DISTINCT n.run, n.document_id FROM new_rows n
    CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                        WHERE j.document_id = n.document_id AND j.run COLLATE "C" = n.run COLLATE "C" AND j.job_id <> n.job_id
                        LIMIT 1) other
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

-- Writers wait while the triggers are swapped, so that no insert is
-- counted twice or not at all.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
DROP TRIGGER jobs_run_stats_insert ON jobs;
DROP TRIGGER jobs_run_resubmitted ON jobs;
DROP FUNCTION extractq_run_resubmitted();
CREATE TRIGGER jobs_inserted AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION extractq_jobs_inserted();
