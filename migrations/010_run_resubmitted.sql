-- Migration 10: the documents a run holds more than one job of.
--
-- A document resubmitted into its run (from the dead-letter stream, or
-- under a newer schema version) has a second job there. The console counts
-- a run's documents by their latest outcome: it reads the run's totals
-- from run_totals (by job) and corrects them with the jobs of these few
-- documents, instead of grouping a run of millions of jobs by document on
-- every page (a third of a second per 250,000 jobs on a small machine).
-- Rows are only added; a document pruned since reads as one job or none.
CREATE TABLE run_resubmitted (
    run         text NOT NULL,
    document_id text NOT NULL,
    PRIMARY KEY (run, document_id)
);

-- extractq_run_resubmitted is the statement trigger on inserts into jobs:
-- each new job whose document already has another job in its run marks
-- that document: one probe of jobs_run_doc_idx per new job (LIMIT 1 keeps
-- it a probe: the transition table has no statistics, and as a semi-join
-- the planner would hash the whole jobs table on every flush, making the
-- writer's flushes ten times slower). SECURITY DEFINER: the worker role
-- writes jobs and needs no grant on this table.
CREATE FUNCTION extractq_run_resubmitted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    INSERT INTO run_resubmitted (run, document_id)
    SELECT DISTINCT n.run, n.document_id FROM new_rows n
    CROSS JOIN LATERAL (SELECT 1 FROM jobs j
                        WHERE j.run = n.run AND j.document_id COLLATE "C" = n.document_id COLLATE "C" AND j.job_id <> n.job_id
                        LIMIT 1) other
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

-- Writers wait while the documents already stored are marked.
LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
CREATE TRIGGER jobs_run_resubmitted AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION extractq_run_resubmitted();
INSERT INTO run_resubmitted (run, document_id)
SELECT run, document_id FROM jobs GROUP BY 1, 2 HAVING count(*) > 1;
