-- Migration 17: one statement trigger on inserts into jobs instead of two.
--
-- Every flush of the audit writer inserts jobs, and each of the two
-- statement triggers on the insert (jobs_run_stats_insert, migration 3;
-- jobs_run_resubmitted, migration 10) cost a SECURITY DEFINER plpgsql call
-- and its statements' setup, per flush whatever its size. One function now
-- does both, with the same statements: run_totals and run_minutes count
-- the new rows, run_resubmitted marks the documents that have another job
-- in their run. What is stored is unchanged; updates and deletes keep
-- extractq_run_stats.
CREATE FUNCTION extractq_jobs_inserted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s smallint := (pg_backend_pid() % 16)::smallint;
BEGIN
    INSERT INTO run_totals AS t (run, status, schema_name, schema_version, provider, model, shard,
                                 jobs, attempts, prompt_tokens, completion_tokens, first_started, last_finished)
    SELECT run, status, schema_name, schema_version, provider, model, s,
           count(*), sum(attempts), sum(prompt_tokens), sum(completion_tokens), min(started_at), max(finished_at)
    FROM new_rows
    GROUP BY run, status, schema_name, schema_version, provider, model
    ORDER BY run, status, schema_name, schema_version, provider, model
    ON CONFLICT (run, status, schema_name, schema_version, provider, model, shard) DO UPDATE SET
        jobs = t.jobs + excluded.jobs, attempts = t.attempts + excluded.attempts,
        prompt_tokens = t.prompt_tokens + excluded.prompt_tokens,
        completion_tokens = t.completion_tokens + excluded.completion_tokens,
        first_started = least(t.first_started, excluded.first_started),
        last_finished = greatest(t.last_finished, excluded.last_finished);
    INSERT INTO run_minutes AS m (run, minute, shard, ok, failed)
    SELECT run, date_trunc('minute', finished_at), s,
           count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status <> 'ok')
    FROM new_rows
    WHERE status <> 'retrying'
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (run, minute, shard) DO UPDATE SET ok = m.ok + excluded.ok, failed = m.failed + excluded.failed;
    -- As extractq_run_resubmitted (migration 10): one probe of
    -- jobs_run_doc_idx per new job.
    INSERT INTO run_resubmitted (run, document_id)
    SELECT DISTINCT n.run, n.document_id FROM new_rows n
    CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                        WHERE j.run = n.run AND j.document_id COLLATE "C" = n.document_id COLLATE "C" AND j.job_id <> n.job_id
                        LIMIT 1) other
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

-- Writers wait while the triggers are swapped, so no insert is counted
-- twice or missed.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
DROP TRIGGER jobs_run_stats_insert ON jobs;
DROP TRIGGER jobs_run_resubmitted ON jobs;
CREATE TRIGGER jobs_inserted AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION extractq_jobs_inserted();
