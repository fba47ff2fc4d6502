-- Migration 19: each job of a run counted once, whatever the submissions
-- that queued it.
--
-- run_done.jobs (migration 14) was a sum of numbers: each submission
-- added the jobs the server acked as new after each batch. A submission
-- killed between the server's ack and that addition left those jobs
-- uncounted, and its rerun, which finds them queued already (duplicates)
-- or final, could not tell them from jobs an earlier submission had
-- counted: the run was sealed with fewer jobs than it holds, and its done
-- event could come before all of them were final.
--
-- So the counts record which jobs they counted, and count each once. A
-- count locks the run's run_done row (counts of one run take turns, as
-- they did: each updated that row), then:
--
-- - A batch of jobs the server acked as new, in a run where no count has
--   brought found jobs yet (the usual case): its ids are stored as one row
--   of run_job_batches (an array: no index entry per job) and all count,
--   as before: the server acks a job as new once.
-- - A count with jobs found in the run (a rerun), or any count in a run
--   that had one: the run's ids move from run_job_batches into run_jobs
--   (primary key run, job id) once, run_done.jobs is recounted from them,
--   and from then on a count inserts its ids there and adds only those
--   that were not there. The move costs what storing each of the run's
--   jobs as a row costs (about 5 µs of Postgres CPU per job on the bench
--   machine), once per run that is rerun, instead of on every submission.
--
-- by_job: the run was counted by job from its start. A run counted before
-- this migration (or whose count StartRunCount began from jobs already in
-- the audit) has jobs counted without their ids: for it, the jobs a
-- submission finds already in the run are not counted (as before), only
-- the new ones. Existing rows get false (a default on ADD COLUMN rewrites
-- no rows); rows made from now on, true. job_rows: the run's ids are in
-- run_jobs.
--
-- Keys compare in "C" (bytes): a B-tree insertion compares the key at
-- every level, and through the database's collation that costs more
-- (migration 18); equality is the same.
CREATE TABLE run_job_batches (
    run     text   COLLATE "C" NOT NULL,
    job_ids text[] NOT NULL
);
CREATE INDEX run_job_batches_run_idx ON run_job_batches (run);
-- Out of line, uncompressed: pglz made a batch's count cost 2.5 times as
-- much Postgres CPU (1.1 ms for 500 ids against 0.4 ms), lz4 1.25 times,
-- for about 40 bytes per job saved at most (hex ids compress to half).
ALTER TABLE run_job_batches ALTER COLUMN job_ids SET STORAGE EXTERNAL;

CREATE TABLE run_jobs (
    run    text COLLATE "C" NOT NULL,
    job_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (run, job_id)
);

ALTER TABLE run_done ADD COLUMN by_job boolean NOT NULL DEFAULT false;
ALTER TABLE run_done ALTER COLUMN by_job SET DEFAULT true;
ALTER TABLE run_done ADD COLUMN job_rows boolean NOT NULL DEFAULT false;

-- extractq_count_run_jobs counts queued (jobs the server acked as new) and
-- seen (jobs of the run a submission found queued or final already) into
-- run_name, each job once, and returns how many were new to the count.
-- SECURITY DEFINER: the submit role executes it and needs no grant on the
-- tables.
CREATE FUNCTION extractq_count_run_jobs(run_name text, queued text[], seen text[])
RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    v_by_job   boolean;
    v_job_rows boolean;
    n          bigint;
BEGIN
    SELECT d.by_job, d.job_rows INTO v_by_job, v_job_rows FROM run_done d WHERE d.run = run_name FOR UPDATE;
    IF NOT FOUND THEN -- a new run (StartRunCount makes the row first)
        INSERT INTO run_done (run) VALUES (run_name) ON CONFLICT (run) DO NOTHING;
        SELECT d.by_job, d.job_rows INTO v_by_job, v_job_rows FROM run_done d WHERE d.run = run_name FOR UPDATE;
    END IF;
    IF NOT v_by_job THEN
        seen := NULL;
    END IF;
    IF coalesce(cardinality(seen), 0) = 0 AND NOT v_job_rows THEN
        n := coalesce(cardinality(queued), 0);
        IF n > 0 THEN
            INSERT INTO run_job_batches (run, job_ids) VALUES (run_name, queued);
            UPDATE run_done SET jobs = jobs + n, updated_at = now() WHERE run = run_name;
        END IF;
        RETURN n;
    END IF;
    IF NOT v_job_rows THEN
        INSERT INTO run_jobs (run, job_id)
        SELECT DISTINCT run_name, id FROM run_job_batches b, unnest(b.job_ids) AS u(id) WHERE b.run = run_name
        ON CONFLICT DO NOTHING;
        DELETE FROM run_job_batches WHERE run = run_name;
        -- The count from the ids (the same, unless the server acked a job
        -- as new twice: queued again past its duplicate window).
        UPDATE run_done SET job_rows = true, jobs = (SELECT count(*) FROM run_jobs WHERE run = run_name), updated_at = now()
        WHERE run = run_name;
    END IF;
    INSERT INTO run_jobs (run, job_id)
    SELECT run_name, id FROM (SELECT unnest(queued) UNION SELECT unnest(seen)) AS u(id)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        UPDATE run_done SET jobs = jobs + n, updated_at = now() WHERE run = run_name;
    END IF;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION extractq_count_run_jobs(text, text[], text[]) FROM PUBLIC;
