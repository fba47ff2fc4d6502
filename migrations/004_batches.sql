-- extractq audit schema, version 3: provider batches (OpenAI Batch API,
-- Anthropic Message Batches) of batch pools, recorded so that any worker
-- can resume polling a batch after the worker that submitted it died.

-- One row per provider batch. A worker holds a batch while lease_until is
-- in the future; a batch whose lease ran out is claimed by the next worker
-- that asks (UPDATE ... WHERE lease_until < now RETURNING), so a batch is
-- polled by one worker at a time and never orphaned. closed_at is set once
-- every answer of the batch is durable (results, re-asks or letters): the
-- row then stays as history and is never claimed again.
CREATE TABLE batches (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider          text        NOT NULL,             -- "openai:gpt-4o-mini"
    provider_batch_id text        NOT NULL,             -- "batch_…", "msgbatch_…"
    pool              text        NOT NULL,
    round             integer     NOT NULL CHECK (round >= 1),
    job_ids           text[]      NOT NULL,
    requests          integer     NOT NULL CHECK (requests >= 0),
    -- The provider's status as last polled: validating, in_progress,
    -- finalizing, completed, expired, failed, cancelling, cancelled (OpenAI)
    -- or in_progress, canceling, ended (Anthropic).
    status            text        NOT NULL,
    succeeded         integer     NOT NULL DEFAULT 0,
    errored           integer     NOT NULL DEFAULT 0,
    expired           integer     NOT NULL DEFAULT 0,
    canceled          integer     NOT NULL DEFAULT 0,
    worker_id         text        NOT NULL DEFAULT '',
    lease_until       timestamptz NOT NULL,
    submitted_at      timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    closed_at         timestamptz,
    UNIQUE (provider, provider_batch_id)
);
-- Claiming scans open batches of a pool by lease; closed ones are history.
CREATE INDEX batches_open_idx ON batches (pool, lease_until) WHERE closed_at IS NULL;
