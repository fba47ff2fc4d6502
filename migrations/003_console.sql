-- extractq audit schema, version 2: what the web console (`extractq ui`)
-- reads without scanning the big tables.

-- A run's documents, paged by keyset (run, document_id, job_id): the run
-- page never uses OFFSET, and a filter on a run never scans other runs.
-- Byte order ("C") whatever the database's collation, so an id prefix is
-- one range of the index.
CREATE INDEX jobs_run_doc_idx ON jobs (run, document_id COLLATE "C", job_id COLLATE "C");

-- Per-run totals and per-minute throughput, kept by a trigger on jobs in
-- the same transaction as the job rows, so the overview reads a few rows per
-- run instead of aggregating every job (a run of 1,000,000 attempts takes
-- about half a second to aggregate on a small machine). Rows are split by
-- the writing connection (shard = backend pid mod 16), so concurrent flushes
-- of several workers do not queue behind one counter row; readers sum the
-- shards. Status is the job's last delivery's outcome, as in jobs.
CREATE TABLE run_totals (
    run               text        NOT NULL,
    status            text        NOT NULL,
    schema_name       text        NOT NULL,
    schema_version    integer     NOT NULL,
    provider          text        NOT NULL,
    model             text        NOT NULL,
    shard             smallint    NOT NULL,
    jobs              bigint      NOT NULL,
    attempts          bigint      NOT NULL,
    prompt_tokens     bigint      NOT NULL,
    completion_tokens bigint      NOT NULL,
    -- Bounds of the run's activity; deletions (prune) do not narrow them.
    first_started     timestamptz NOT NULL,
    last_finished     timestamptz NOT NULL,
    PRIMARY KEY (run, status, schema_name, schema_version, provider, model, shard)
);

-- Jobs that became final per minute of their finish time, for the
-- throughput chart.
CREATE TABLE run_minutes (
    run    text        NOT NULL,
    minute timestamptz NOT NULL,
    shard  smallint    NOT NULL,
    ok     bigint      NOT NULL,
    failed bigint      NOT NULL,
    PRIMARY KEY (run, minute, shard)
);

-- extractq_run_stats is the statement trigger on jobs (the writer's COPY,
-- its ON CONFLICT merge, prune's DELETE): it adds the rows a statement
-- inserted (+1) and removes the rows it deleted (-1) from run_totals and
-- run_minutes; an update is both. One aggregated upsert per table, in key
-- order, so concurrent writers never deadlock on the counters. SECURITY
-- DEFINER: the worker role writes jobs and needs no grant on the counters.
CREATE FUNCTION extractq_run_stats() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    s smallint := (pg_backend_pid() % 16)::smallint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO run_totals AS t (run, status, schema_name, schema_version, provider, model, shard,
                                     jobs, attempts, prompt_tokens, completion_tokens, first_started, last_finished)
        SELECT run, status, schema_name, schema_version, provider, model, s,
               sum(w), sum(w * attempts), sum(w * prompt_tokens), sum(w * completion_tokens), min(started_at), max(finished_at)
        FROM (SELECT *, 1 AS w FROM new_rows) d
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
               coalesce(sum(w) FILTER (WHERE status = 'ok'), 0), coalesce(sum(w) FILTER (WHERE status <> 'ok'), 0)
        FROM (SELECT *, 1 AS w FROM new_rows) d
        WHERE status <> 'retrying'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (run, minute, shard) DO UPDATE SET ok = m.ok + excluded.ok, failed = m.failed + excluded.failed;
    ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO run_totals AS t (run, status, schema_name, schema_version, provider, model, shard,
                                     jobs, attempts, prompt_tokens, completion_tokens, first_started, last_finished)
        SELECT run, status, schema_name, schema_version, provider, model, s,
               sum(w), sum(w * attempts), sum(w * prompt_tokens), sum(w * completion_tokens), min(started_at), max(finished_at)
        FROM (SELECT *, 1 AS w FROM new_rows UNION ALL SELECT *, -1 FROM old_rows) d
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
               coalesce(sum(w) FILTER (WHERE status = 'ok'), 0), coalesce(sum(w) FILTER (WHERE status <> 'ok'), 0)
        FROM (SELECT *, 1 AS w FROM new_rows UNION ALL SELECT *, -1 FROM old_rows) d
        WHERE status <> 'retrying'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (run, minute, shard) DO UPDATE SET ok = m.ok + excluded.ok, failed = m.failed + excluded.failed;
    ELSE
        INSERT INTO run_totals AS t (run, status, schema_name, schema_version, provider, model, shard,
                                     jobs, attempts, prompt_tokens, completion_tokens, first_started, last_finished)
        SELECT run, status, schema_name, schema_version, provider, model, s,
               sum(w), sum(w * attempts), sum(w * prompt_tokens), sum(w * completion_tokens), min(started_at), max(finished_at)
        FROM (SELECT *, -1 AS w FROM old_rows) d
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
               coalesce(sum(w) FILTER (WHERE status = 'ok'), 0), coalesce(sum(w) FILTER (WHERE status <> 'ok'), 0)
        FROM (SELECT *, -1 AS w FROM old_rows) d
        WHERE status <> 'retrying'
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (run, minute, shard) DO UPDATE SET ok = m.ok + excluded.ok, failed = m.failed + excluded.failed;
    END IF;
    RETURN NULL;
END $$;

-- Writers wait while the counters are filled from the jobs already stored.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
CREATE TRIGGER jobs_run_stats_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION extractq_run_stats();
CREATE TRIGGER jobs_run_stats_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION extractq_run_stats();
CREATE TRIGGER jobs_run_stats_delete AFTER DELETE ON jobs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION extractq_run_stats();

INSERT INTO run_totals (run, status, schema_name, schema_version, provider, model, shard,
                        jobs, attempts, prompt_tokens, completion_tokens, first_started, last_finished)
SELECT run, status, schema_name, schema_version, provider, model, 0,
       count(*), sum(attempts), sum(prompt_tokens), sum(completion_tokens), min(started_at), max(finished_at)
FROM jobs GROUP BY run, status, schema_name, schema_version, provider, model;
INSERT INTO run_minutes (run, minute, shard, ok, failed)
SELECT run, date_trunc('minute', finished_at), 0, count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status <> 'ok')
FROM jobs WHERE status <> 'retrying' GROUP BY 1, 2;
