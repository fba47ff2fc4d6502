-- Version 3: prompt caching and cost per mode.
--
-- Providers serve part of a prompt from their prompt cache and bill it at
-- a lower price (Anthropic also bills writing it, above the input price).
-- prompt_tokens keeps counting every input token; the two new columns say
-- how many of them the cache served (cached_prompt_tokens: OpenAI's
-- prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens,
-- Gemini's cachedContentTokenCount) and stored (cache_creation_tokens:
-- Anthropic's cache_creation_input_tokens). Rows written before version 3
-- read 0: nothing known to be cached.

ALTER TABLE attempts
    ADD COLUMN cached_prompt_tokens  integer NOT NULL DEFAULT 0,
    ADD COLUMN cache_creation_tokens integer NOT NULL DEFAULT 0;

ALTER TABLE jobs
    ADD COLUMN cached_prompt_tokens  bigint NOT NULL DEFAULT 0,
    ADD COLUMN cache_creation_tokens bigint NOT NULL DEFAULT 0;

-- The merge rule of version 2, carrying the new columns.
CREATE OR REPLACE FUNCTION extractq_merge_jobs(rows jsonb)
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH merged AS (
        INSERT INTO jobs (job_id, document_id, content_hash, run, schema_name, schema_version, schema_fingerprint,
                          provider, model, pool, status, reason, deliveries, attempts, prompt_tokens, completion_tokens,
                          cached_prompt_tokens, cache_creation_tokens, worker_id, started_at, finished_at)
        SELECT job_id, document_id, content_hash, run, schema_name, schema_version, schema_fingerprint,
               provider, model, pool, status, reason, deliveries, attempts, prompt_tokens, completion_tokens,
               cached_prompt_tokens, cache_creation_tokens, worker_id, started_at, finished_at
        FROM jsonb_populate_recordset(NULL::jobs, rows)
        ON CONFLICT (job_id) DO UPDATE SET
            status = excluded.status, reason = excluded.reason, deliveries = excluded.deliveries,
            attempts = excluded.attempts, prompt_tokens = excluded.prompt_tokens,
            completion_tokens = excluded.completion_tokens, cached_prompt_tokens = excluded.cached_prompt_tokens,
            cache_creation_tokens = excluded.cache_creation_tokens, provider = excluded.provider, model = excluded.model,
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

-- What a valid document costs, per run, model and mode: requests and
-- tokens of every attempt (those of jobs that failed too: they were paid
-- for), over the documents that ended with a valid value. A job whose
-- attempts used several modes counts once under each.
CREATE VIEW cost_by_mode AS
SELECT a.run, a.provider, a.model, a.mode,
       count(*)                                          AS requests,
       sum(a.prompt_tokens)::bigint                      AS prompt_tokens,
       sum(a.cached_prompt_tokens)::bigint               AS cached_prompt_tokens,
       sum(a.cache_creation_tokens)::bigint              AS cache_creation_tokens,
       sum(a.completion_tokens)::bigint                  AS completion_tokens,
       count(DISTINCT a.job_id) FILTER (WHERE j.status = 'ok') AS valid_documents,
       round(avg(a.prompt_tokens), 1)                    AS prompt_tokens_per_request,
       round(avg(a.completion_tokens), 1)                AS completion_tokens_per_request,
       round(sum(a.prompt_tokens)::numeric / nullif(count(DISTINCT a.job_id) FILTER (WHERE j.status = 'ok'), 0), 1)
                                                         AS prompt_tokens_per_valid_document,
       round(sum(a.completion_tokens)::numeric / nullif(count(DISTINCT a.job_id) FILTER (WHERE j.status = 'ok'), 0), 1)
                                                         AS completion_tokens_per_valid_document
FROM attempts a LEFT JOIN jobs j ON j.job_id = a.job_id
GROUP BY a.run, a.provider, a.model, a.mode;
