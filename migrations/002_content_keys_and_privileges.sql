-- extractq audit schema, version 2: results keyed by the text they were
-- extracted from, every earlier text of a document kept, redacted results
-- marked, and narrower privileges for workers and submitters.

-- The text a job ran on and a result was extracted from (sha256 of the
-- text, hex). Rows written before this migration get the document's hash
-- when the document never changed (then it is certainly theirs); rows of a
-- document whose text changed keep '' (unknown).
ALTER TABLE jobs ADD COLUMN content_hash text NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN content_hash text NOT NULL DEFAULT '';
UPDATE jobs j SET content_hash = d.content_hash
FROM documents d WHERE d.id = j.document_id AND d.updated_at = d.created_at;
UPDATE results r SET content_hash = d.content_hash
FROM documents d WHERE d.id = r.document_id AND d.updated_at = d.created_at;

-- One result per (document, text, schema fingerprint, model): a document
-- whose text changed under the same id gets a result for each text.
ALTER TABLE results DROP CONSTRAINT results_pkey;
ALTER TABLE results ADD PRIMARY KEY (document_id, content_hash, schema_fingerprint, model);

-- redacted: the value holds the redaction marker, so it may differ from
-- what the model extracted (a provider replaces its own API key in an
-- answer before anything reads it). Values are never rewritten after
-- validation; this mark makes such a result visible instead of silent.
ALTER TABLE results ADD COLUMN redacted boolean NOT NULL DEFAULT false;

-- Earlier texts of documents, kept when a submit replaces a document's
-- text, so the result of every text stays explainable and a dead letter of
-- an earlier text can still be resubmitted. Written only by
-- extractq_put_documents; nothing updates or deletes them.
CREATE TABLE document_versions (
    document_id  text        NOT NULL,
    content_hash text        NOT NULL,
    body         text        NOT NULL,
    created_at   timestamptz NOT NULL, -- when this text was stored
    replaced_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, content_hash)
);
ALTER TABLE document_versions ALTER COLUMN body SET STORAGE EXTENDED;
DO $$
BEGIN
    ALTER TABLE document_versions ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 not available, document_versions.body keeps pglz';
END $$;

-- extractq_put_documents stores documents: a new id is inserted, a known
-- id with a new text is replaced after its current text is copied to
-- document_versions, the same text changes nothing. The hash is computed
-- here from the text, so it always matches the body. SECURITY DEFINER:
-- submitters get EXECUTE on it and no INSERT or UPDATE on documents, so
-- they can add texts but never rewrite or lose one.
CREATE FUNCTION extractq_put_documents(ids text[], sources text[], metas jsonb[], bodies text[])
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH n AS (
        SELECT id, source, meta, body, encode(sha256(convert_to(body, 'UTF8')), 'hex') AS hash
        FROM unnest(ids, sources, metas, bodies) AS u(id, source, meta, body)
    ), kept AS (
        INSERT INTO document_versions (document_id, content_hash, body, created_at)
        SELECT d.id, d.content_hash, d.body, d.updated_at
        FROM n JOIN documents d ON d.id = n.id AND d.content_hash <> n.hash
        ON CONFLICT DO NOTHING
    ), put AS (
        INSERT INTO documents (id, content_hash, source, metadata, body)
        SELECT id, hash, source, coalesce(meta, '{}'), body FROM n
        ON CONFLICT (id) DO UPDATE SET content_hash = excluded.content_hash, source = excluded.source,
            metadata = excluded.metadata, body = excluded.body, updated_at = now()
        WHERE documents.content_hash <> excluded.content_hash
        RETURNING 1
    )
    SELECT count(*)::integer FROM put
$$;
REVOKE ALL ON FUNCTION extractq_put_documents(text[], text[], jsonb[], text[]) FROM PUBLIC;

-- extractq_merge_jobs merges job rows (a JSON array of jobs rows, as the
-- audit writer stages them) by the writer's rule: a later delivery wins; the
-- same delivery changes a job only from "retrying" to final. SECURITY
-- DEFINER: workers get EXECUTE on it and no UPDATE on jobs, so they cannot
-- rewrite a job's identity, or its status other than by this rule.
CREATE FUNCTION extractq_merge_jobs(rows jsonb)
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH merged AS (
        INSERT INTO jobs (job_id, document_id, content_hash, run, schema_name, schema_version, schema_fingerprint,
                          provider, model, pool, status, reason, deliveries, attempts, prompt_tokens, completion_tokens,
                          worker_id, started_at, finished_at)
        SELECT job_id, document_id, content_hash, run, schema_name, schema_version, schema_fingerprint,
               provider, model, pool, status, reason, deliveries, attempts, prompt_tokens, completion_tokens,
               worker_id, started_at, finished_at
        FROM jsonb_populate_recordset(NULL::jobs, rows)
        ON CONFLICT (job_id) DO UPDATE SET
            status = excluded.status, reason = excluded.reason, deliveries = excluded.deliveries,
            attempts = excluded.attempts, prompt_tokens = excluded.prompt_tokens,
            completion_tokens = excluded.completion_tokens, provider = excluded.provider, model = excluded.model,
            pool = excluded.pool, worker_id = excluded.worker_id,
            started_at = least(jobs.started_at, excluded.started_at), finished_at = excluded.finished_at,
            updated_at = now()
        WHERE jobs.deliveries < excluded.deliveries
           OR (jobs.deliveries = excluded.deliveries AND jobs.status = 'retrying' AND excluded.status <> 'retrying')
        RETURNING 1
    )
    SELECT count(*)::integer FROM merged
$$;
REVOKE ALL ON FUNCTION extractq_merge_jobs(jsonb) FROM PUBLIC;

-- The partition function, bounded: a caller who is not the owner (a
-- worker, through EXECUTE) can only prepare up to ten months from three
-- before the current one to six after it, so it cannot create tables for
-- arbitrary dates (the year 2300) or in arbitrary numbers. The owner (and
-- a superuser) may prepare any months, e.g. to back-fill old ones.
CREATE OR REPLACE FUNCTION extractq_ensure_attempt_partitions(from_month date, months integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    cur     date := date_trunc('month', now())::date;
    first   date := date_trunc('month', from_month)::date;
    lo      date;
    hi      date;
    part    text;
    created integer := 0;
BEGIN
    -- current_user is the owner here (SECURITY DEFINER); session_user is
    -- the role that logged in.
    IF NOT pg_has_role(session_user, current_user, 'USAGE')
       AND (months < 1 OR months > 10 OR first < cur - interval '3 months'
            OR first + make_interval(months => months) > cur + interval '7 months') THEN
        RAISE EXCEPTION 'extractq_ensure_attempt_partitions(%, %) refused for role %: it may prepare at most 10 months, from % to the month of %',
            from_month, months, session_user, (cur - interval '3 months')::date, (cur + interval '6 months')::date
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'rows outside the prepared months go to attempts_default; the owner may prepare any months';
    END IF;
    -- Workers starting together must not race to create the same table.
    PERFORM pg_advisory_xact_lock(hashtextextended('extractq_ensure_attempt_partitions', 0));
    FOR i IN 0 .. months - 1 LOOP
        lo := first + make_interval(months => i);
        hi := lo + interval '1 month';
        part := format('attempts_y%sm%s', to_char(lo, 'YYYY'), to_char(lo, 'MM'));
        CONTINUE WHEN to_regclass(part) IS NOT NULL;
        EXECUTE format('CREATE TABLE %I (LIKE attempts INCLUDING DEFAULTS)', part);
        EXECUTE format(
            'WITH moved AS (DELETE FROM attempts_default WHERE started_at >= %L AND started_at < %L RETURNING *)
             INSERT INTO %I SELECT * FROM moved', lo, hi, part);
        EXECUTE format('ALTER TABLE attempts ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
        created := created + 1;
    END LOOP;
    RETURN created;
END $$;

-- Each document's latest valid result per schema, for the text the
-- document has now: a result of a text the document no longer has is
-- superseded (history still shows it). Results of unknown text (written
-- before version 2 for a document that changed, or of a document whose
-- text was never stored) count as current unless one of the known current
-- text exists. Then the highest schema version, then the newest.
CREATE OR REPLACE VIEW latest_valid_results AS
SELECT DISTINCT ON (r.schema_name, r.document_id)
       r.document_id, r.schema_name, r.schema_version, r.schema_fingerprint, r.model, r.provider,
       r.value, r.attempts, r.prompt_tokens, r.completion_tokens, r.run, r.job_id, r.created_at,
       r.content_hash, r.redacted
FROM results r LEFT JOIN documents d ON d.id = r.document_id
WHERE d.id IS NULL OR r.content_hash = '' OR r.content_hash = d.content_hash
ORDER BY r.schema_name, r.document_id, (r.content_hash = d.content_hash) IS TRUE DESC,
         r.schema_version DESC, r.created_at DESC;
