-- Migration 14: a run's done event without a waiting submit, and its
-- registered webhook.
--
-- A run is done when its last job is final. The workers see jobs one at a
-- time; only the submissions know how many a run holds. So each submit
-- counts the jobs it queued into its run here after every batch the
-- server acked (jobs), and when it has finished queueing it seals the run
-- (sealed: a generation, one more per submission). A sweeper (one worker
-- at a time, under an advisory lock) compares a sealed run's jobs with its
-- final jobs in run_totals and announces it: it claims the generation
-- (announced), publishes extractq.events.<run>.done (published) and
-- delivers the run's webhook. A later submission into the run seals it
-- again: another done, with the run's counts then.
CREATE TABLE run_done (
    run            text        PRIMARY KEY,
    jobs           bigint      NOT NULL DEFAULT 0 CHECK (jobs >= 0),           -- queued into the run, all submissions
    sealed         integer     NOT NULL DEFAULT 0 CHECK (sealed >= 0),         -- submissions that finished queueing
    announced      integer     NOT NULL DEFAULT 0 CHECK (announced <= sealed), -- the generation whose done was claimed
    published      integer     NOT NULL DEFAULT 0 CHECK (published <= announced),
    done_event     jsonb,                                                       -- the done event as announced
    announced_by   text,                                                        -- 'submit' (--wait --webhook: it delivers), 'submit without a webhook', or the worker's id
    sealed_at      timestamptz,
    announced_at   timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    -- Sealed and not yet announced, or announced and not yet published:
    -- the sweeper's work. A column (not only the index's predicate), so
    -- that its statistics tell the planner how few rows these are: with a
    -- guessed third of the table, a year of runs made the sweeper's query
    -- look costly enough to be JIT-compiled, 400 ms instead of 0.2 ms.
    open           boolean     GENERATED ALWAYS AS (sealed > announced OR announced > published) STORED
);
CREATE INDEX run_done_open_idx ON run_done (run) WHERE open;

-- The webhook registered with a run (`submit --webhook URL`): one per
-- run, the last registration wins. The URL may carry a token, so it is
-- stored sealed (AES-256-GCM, key derived from EXTRACTQ_WEBHOOK_SECRET):
-- only a process holding the secret can read or sign for it. key_id
-- names the secret (an HMAC of it, not the secret) so that a worker with
-- another secret says so instead of failing to decrypt.
CREATE TABLE run_webhooks (
    run            text        PRIMARY KEY,
    url_redacted   text        NOT NULL,                -- without credentials, query or fragment
    url_sealed     bytea       NOT NULL,                -- nonce || ciphertext
    key_id         text        NOT NULL,
    events         text[]      NOT NULL,                -- the kinds it receives: 'done', 'dead_letter'
    timeout_ms     bigint      NOT NULL CHECK (timeout_ms > 0),
    done_delivered integer     NOT NULL DEFAULT 0,      -- the done generation delivered (or given up on)
    -- With 'dead_letter': the run's dead letters delivered, up to this
    -- position (created_at, job_id) of dead_letters.
    dead_letters_at  timestamptz NOT NULL DEFAULT '-infinity',
    dead_letters_job text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- A run's dead letters in order, for the webhooks that receive them (a
-- dead letter is rare: the index costs the worker's writes little).
CREATE INDEX dead_letters_run_idx ON dead_letters (run, created_at, job_id);
