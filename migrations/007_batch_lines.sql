-- extractq audit schema: batch pools that outlive their workers.
--
-- A batch's result lines are stored as the provider wrote them when the
-- batch ends, by whichever worker polls it, in the same transaction that
-- closes the batch. A job's worker parses its own lines (it holds the
-- request each one answers), and a job redelivered after its worker died
-- replays the rounds it had already been through from these lines instead
-- of asking the provider again: no request is paid twice.

ALTER TABLE batches
    -- llm.BatchState once final (ended, expired, canceled, failed), and
    -- why a failed batch was refused, as {"class","type","message"}.
    ADD COLUMN state   text NOT NULL DEFAULT 'running',
    ADD COLUMN failure jsonb;

-- Finding the batch that carries a job's request of one round.
CREATE INDEX batches_job_ids_idx ON batches USING gin (job_ids);

CREATE TABLE batch_lines (
    batch_id  bigint  NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    custom_id text    NOT NULL,   -- JOBID-rROUND
    job_id    text    NOT NULL,
    round     integer NOT NULL,
    line      bytea   NOT NULL,   -- the provider's result line, as received
    PRIMARY KEY (batch_id, custom_id)
);
CREATE INDEX batch_lines_job_idx ON batch_lines (job_id, round);

-- Answers that came through a provider batch are billed at its price.
ALTER TABLE attempts ADD COLUMN batch boolean NOT NULL DEFAULT false;
