-- Migration 15: a dead letter is recorded in the audit before it is
-- published to the dead-letter stream.
--
-- The worker used to publish a job's letter to EXTRACTQ_DLQ and then write
-- its dead_letters row: a worker killed between the two left a letter no
-- row knew of, and the job's redelivery could even end with a result. Now
-- the row comes first, with seq 0 ("recorded, not yet on the stream"),
-- then the letter is published (deduplicated by the job id), then its
-- stream sequence is set here. A redelivery that finds the row still at
-- seq 0 publishes the letter and sets the sequence; it never runs the job
-- again.
--
-- extractq_set_dead_letter_seq sets the sequence of a recorded letter once:
-- only a row still at 0 changes, so a letter's reference is never moved.
-- SECURITY DEFINER: workers get EXECUTE on it and no UPDATE on
-- dead_letters. It returns the rows changed (0 or 1).
CREATE FUNCTION extractq_set_dead_letter_seq(job text, letter_seq bigint)
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH changed AS (
        UPDATE dead_letters SET seq = letter_seq
        WHERE job_id = job AND seq = 0 AND letter_seq > 0
        RETURNING 1
    )
    SELECT count(*)::integer FROM changed;
$$;
REVOKE ALL ON FUNCTION extractq_set_dead_letter_seq(text, bigint) FROM PUBLIC;
