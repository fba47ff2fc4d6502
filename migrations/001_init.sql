-- extractq audit schema, version 1. Forward-only: never edit a released
-- migration; add a new numbered file instead.

-- Registered JSON Schemas. A new fingerprint under a name is a new version;
-- old versions are kept so old results stay explainable.
CREATE TABLE schemas (
    name        text        NOT NULL,
    version     integer     NOT NULL CHECK (version > 0),
    fingerprint text        NOT NULL,
    body        jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version),
    UNIQUE (name, fingerprint)
);
CREATE INDEX schemas_fingerprint_idx ON schemas (fingerprint);

-- Documents as submitted, so failed or outdated ones can be resubmitted
-- without the original files. body is TOASTed (compressed out of line).
CREATE TABLE documents (
    id           text        PRIMARY KEY,
    content_hash text        NOT NULL,
    source       text        NOT NULL DEFAULT '',
    metadata     jsonb       NOT NULL DEFAULT '{}',
    body         text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE documents ALTER COLUMN body SET STORAGE EXTENDED;
-- lz4 compresses and decompresses several times faster than the default
-- pglz; servers built without lz4 keep pglz.
DO $$
BEGIN
    ALTER TABLE documents ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    RAISE NOTICE 'lz4 not available, documents.body keeps pglz';
END $$;

-- One row per job (a document under a schema on a pool), updated by each
-- delivery; status is the last delivery's outcome ("retrying" while open).
CREATE TABLE jobs (
    job_id             text        PRIMARY KEY,
    document_id        text        NOT NULL,
    run                text        NOT NULL DEFAULT '',
    schema_name        text        NOT NULL DEFAULT '',
    schema_version     integer     NOT NULL DEFAULT 0,
    schema_fingerprint text        NOT NULL DEFAULT '',
    provider           text        NOT NULL DEFAULT '',
    model              text        NOT NULL DEFAULT '',
    pool               text        NOT NULL DEFAULT '',
    status             text        NOT NULL,
    reason             text        NOT NULL DEFAULT '',
    deliveries         integer     NOT NULL DEFAULT 1,
    attempts           integer     NOT NULL DEFAULT 0,
    prompt_tokens      bigint      NOT NULL DEFAULT 0,
    completion_tokens  bigint      NOT NULL DEFAULT 0,
    worker_id          text        NOT NULL DEFAULT '',
    started_at         timestamptz NOT NULL,
    finished_at        timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
-- Few indexes: every one is paid on every write. Status and prune scan.
CREATE INDEX jobs_document_idx ON jobs (document_id);
CREATE INDEX jobs_schema_idx ON jobs (schema_name, document_id) WHERE status NOT IN ('ok', 'retrying');

-- Every call to a model. The big table: range-partitioned by month on
-- started_at (see extractq_ensure_attempt_partitions); rows outside the
-- prepared months land in attempts_default. Keyed by position so a
-- rewritten record (a retried flush) inserts nothing twice.
CREATE TABLE attempts (
    job_id            text             NOT NULL,
    delivery          integer          NOT NULL,
    seq               integer          NOT NULL,
    started_at        timestamptz      NOT NULL,
    n                 integer          NOT NULL,
    document_id       text             NOT NULL,
    run               text             NOT NULL DEFAULT '',
    schema_name       text             NOT NULL DEFAULT '',
    schema_version    integer          NOT NULL DEFAULT 0,
    provider          text             NOT NULL DEFAULT '',
    model             text             NOT NULL DEFAULT '',
    mode              text             NOT NULL DEFAULT '',
    prompt_chars      integer          NOT NULL DEFAULT 0,
    prompt_tokens     integer          NOT NULL DEFAULT 0,
    completion_tokens integer          NOT NULL DEFAULT 0,
    latency_ms        double precision NOT NULL DEFAULT 0,
    finish_reason     text             NOT NULL DEFAULT '',
    raw_response      text             NOT NULL DEFAULT '',
    value             jsonb,
    repairs           jsonb,
    violations        jsonb,
    error_class       text             NOT NULL DEFAULT '',
    error_message     text             NOT NULL DEFAULT '',
    transport_retries integer          NOT NULL DEFAULT 0,
    worker_id         text             NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, delivery, seq, started_at)
) PARTITION BY RANGE (started_at);
CREATE TABLE attempts_default PARTITION OF attempts DEFAULT;
-- One secondary index (history of a document): the write path pays for
-- every index. Status and failure_reasons aggregate over scans, pruned to
-- recent partitions by started_at.
CREATE INDEX attempts_document_idx ON attempts (document_id, started_at);

-- extractq_ensure_attempt_partitions creates the monthly partitions of
-- attempts covering [from_month, from_month + months). Rows already in the
-- default partition for a new month are moved into it, so it is safe to
-- call at any time, repeatedly.
-- SECURITY DEFINER: workers call it with only EXECUTE, never owning tables.
CREATE FUNCTION extractq_ensure_attempt_partitions(from_month date, months integer)
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    lo      date;
    hi      date;
    part    text;
    created integer := 0;
BEGIN
    -- Workers starting together must not race to create the same table.
    PERFORM pg_advisory_xact_lock(hashtextextended('extractq_ensure_attempt_partitions', 0));
    FOR i IN 0 .. months - 1 LOOP
        lo := date_trunc('month', from_month)::date + make_interval(months => i);
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
REVOKE ALL ON FUNCTION extractq_ensure_attempt_partitions(date, integer) FROM PUBLIC;
SELECT extractq_ensure_attempt_partitions((now() - interval '1 month')::date, 4);

-- Valid results. One per (document, schema fingerprint, model): a
-- redelivered job inserts nothing new (ON CONFLICT DO NOTHING). Results
-- under older schema versions are kept.
CREATE TABLE results (
    document_id        text        NOT NULL,
    schema_fingerprint text        NOT NULL,
    model              text        NOT NULL,
    schema_name        text        NOT NULL DEFAULT '',
    schema_version     integer     NOT NULL DEFAULT 0,
    provider           text        NOT NULL DEFAULT '',
    value              jsonb       NOT NULL,
    attempts           integer     NOT NULL DEFAULT 0,
    prompt_tokens      bigint      NOT NULL DEFAULT 0,
    completion_tokens  bigint      NOT NULL DEFAULT 0,
    run                text        NOT NULL DEFAULT '',
    job_id             text        NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (document_id, schema_fingerprint, model)
);
-- Export and "latest result per document" walk this index in order.
CREATE INDEX results_schema_doc_idx ON results (schema_name, document_id, schema_version DESC, created_at DESC);

-- Jobs moved to the dead-letter stream, referenced by stream and sequence.
CREATE TABLE dead_letters (
    stream         text        NOT NULL,
    seq            bigint      NOT NULL,
    job_id         text        NOT NULL,
    document_id    text        NOT NULL,
    run            text        NOT NULL DEFAULT '',
    schema_name    text        NOT NULL DEFAULT '',
    schema_version integer     NOT NULL DEFAULT 0,
    reason         text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    resubmitted_at timestamptz,
    -- A job is dead-lettered once; a redelivery that dead-letters it again
    -- (crash between publishing and acking) keeps the first reference.
    PRIMARY KEY (job_id)
);
CREATE INDEX dead_letters_stream_idx ON dead_letters (stream, seq);
CREATE INDEX dead_letters_schema_idx ON dead_letters (schema_name, document_id);
CREATE INDEX dead_letters_created_idx ON dead_letters (created_at);

-- Documents already queued again for (schema, version): a second
-- resubmission selects nothing twice.
CREATE TABLE resubmissions (
    schema_name  text        NOT NULL,
    to_version   integer     NOT NULL,
    document_id  text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (schema_name, to_version, document_id)
);

-- For analysts: each document's latest valid result per schema (highest
-- schema version, then newest).
CREATE VIEW latest_valid_results AS
SELECT DISTINCT ON (schema_name, document_id)
       document_id, schema_name, schema_version, schema_fingerprint, model, provider,
       value, attempts, prompt_tokens, completion_tokens, run, job_id, created_at
FROM results
ORDER BY schema_name, document_id, schema_version DESC, created_at DESC;

-- For analysts: why attempts and jobs fail, most frequent first.
CREATE VIEW failure_reasons AS
SELECT source, class, reason, count, last_seen FROM (
    SELECT 'attempt'::text AS source, error_class AS class, left(error_message, 200) AS reason,
           count(*) AS count, max(started_at) AS last_seen
    FROM attempts WHERE error_class <> ''
    GROUP BY error_class, left(error_message, 200)
    UNION ALL
    SELECT 'job', status, left(reason, 200), count(*), max(finished_at)
    FROM jobs WHERE status NOT IN ('ok', 'retrying')
    GROUP BY status, left(reason, 200)
) f
ORDER BY count DESC, last_seen DESC;
