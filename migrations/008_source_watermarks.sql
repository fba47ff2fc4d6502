-- extractq audit schema: incremental runs over remote sources
-- (`submit --incremental NAME`) and exports that write each result once
-- (`results export --since-export NAME`).
--
-- A watermark remembers, per name, which version (an object's ETag and
-- size, a SQL watermark column, else a content hash) of each document was
-- last queued, so that the next run reads and queues only what is new or
-- changed. A listing in progress records the last key it queued
-- (position): a run that crashed continues after it.

CREATE TABLE source_watermarks (
    name        text        PRIMARY KEY,
    source      text        NOT NULL,          -- the source URI it tracks
    format      integer     NOT NULL DEFAULT 1,
    generation  bigint      NOT NULL DEFAULT 0 CHECK (generation >= 0),  -- completed listings
    position    text,                          -- listing in progress: the last key queued
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE source_items (
    name     text   NOT NULL REFERENCES source_watermarks (name) ON DELETE CASCADE,
    item_id  text   NOT NULL,
    version  text   NOT NULL,
    size     bigint NOT NULL,
    seen     bigint NOT NULL,   -- the generation of the listing that last saw it
    PRIMARY KEY (name, item_id)
);

-- `results export --since-export NAME`: the results each export name has
-- written, so that nightly exports write each result exactly once. A
-- result is its document, text, schema and model (the results key).
-- Recorded in the snapshot the export read, after its file was written.
CREATE TABLE export_ledger (
    name               text        NOT NULL,
    document_id        text        NOT NULL,
    content_hash       text        NOT NULL,
    schema_fingerprint text        NOT NULL,
    model              text        NOT NULL,
    exported_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, document_id, content_hash, schema_fingerprint, model)
);
