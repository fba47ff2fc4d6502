-- Migration 13: where each value of a result was found ("pages to the
-- end").
--
-- sources is the result's grounding, written by the worker in the same
-- COPY as the result: a JSON object from each string and number's JSON
-- pointer to its source, in llm.Source's shape (chunk only when not 0):
--   {"/total": {"start": 812, "end": 820, "chunk": 0, "match": "exact",
--               "page": 2, "page_start": 95, "page_end": 103,
--               "box": {"x0": 72, "y0": 640, "x1": 540, "y1": 652},
--               "snippet": "Total due: 1,234.50 EUR"}}
-- start/end count characters of the document's text, page_start/page_end
-- of the page; page, page_label, page_start, page_end and box are absent
-- for a document without pages. NULL: the result has no sources (written
-- before this migration, or of a text that was neither split nor read by a
-- format reader). Adding a nullable column without a default rewrites
-- nothing: old rows read as NULL.
--
-- json, not jsonb: a dozen sources are about 2.5 KB, and PostgreSQL took
-- twice as long to convert that into jsonb as to check it as json, on the
-- audit writer's hot path (measured: 20,000 rows, 3.0 s against 1.0 s).
-- The -> and ->> operators work on json; cast to jsonb for containment or
-- an index: sources::jsonb @> '{"/total": {"page": 2}}'.
ALTER TABLE results ADD COLUMN IF NOT EXISTS sources json;

-- Rows with sources pass the 2 KB at which PostgreSQL compresses a row's
-- largest values as it writes them: lz4 does that for less CPU than the
-- default pglz. A server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE results ALTER COLUMN sources SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    NULL;
END $$;

-- The view gains the column at its end (CREATE OR REPLACE VIEW may only
-- append columns), and shows the results of documents a format reader
-- made (a PDF, an e-mail: metadata has "reader"). Their results are keyed
-- by the original's hash, never the stored text's, so the view hid every
-- one of them; now the newest under the highest schema version counts (a
-- changed original's new result replaces the old one once it is made).
CREATE OR REPLACE VIEW latest_valid_results AS
SELECT DISTINCT ON (r.schema_name, r.document_id)
       r.document_id, r.schema_name, r.schema_version, r.schema_fingerprint, r.model, r.provider,
       r.value, r.attempts, r.prompt_tokens, r.completion_tokens, r.run, r.job_id, r.created_at,
       r.content_hash, r.redacted, r.sources
FROM results r LEFT JOIN documents d ON d.id = r.document_id
WHERE d.id IS NULL OR r.content_hash = '' OR r.content_hash = d.content_hash OR d.metadata ? 'reader'
ORDER BY r.schema_name, r.document_id, (r.content_hash = d.content_hash) IS TRUE DESC,
         r.schema_version DESC, r.created_at DESC;
