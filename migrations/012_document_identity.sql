-- Migration 12: a document a reader made from an original (a PDF, an
-- e-mail, an office file) is stored under its original's sha256, the hash
-- its jobs and results are keyed by, and keeps its pages.
--
-- documents.content_hash was the extracted text's hash for every document,
-- so a document job's results (keyed by the original's hash) never matched
-- their document: exports and the latest-result queries passed them over.
-- Now content_hash is the identity (the original's hash when the submitter
-- gives one, else the text's, as before), body_hash is always the text's
-- (computed here, so it matches the body), and pages holds the text's page
-- ranges as [[start, end], ...] byte offsets, so a re-read can say which
-- pages changed. Rows stored before keep NULL in both: their content_hash
-- is their text's hash.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS body_hash text;
ALTER TABLE documents ADD COLUMN IF NOT EXISTS pages jsonb;

-- extractq_put_documents with identities and pages: a new id is inserted; a
-- known id whose identity or text changed is replaced after its current
-- text is copied to document_versions (once per identity: the first text
-- kept under an identity stays); the same identity and text changes
-- nothing. A hash that is not 64 lower-case hex digits, or NULL, means the
-- text's hash. SECURITY DEFINER, as the four-argument form.
CREATE OR REPLACE FUNCTION extractq_put_documents(ids text[], sources text[], metas jsonb[], bodies text[], hashes text[], pages jsonb[])
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH u AS (
        SELECT id, source, meta, body, hash, page, encode(sha256(convert_to(body, 'UTF8')), 'hex') AS bhash
        FROM unnest(ids, sources, metas, bodies, hashes, pages) AS u(id, source, meta, body, hash, page)
        WHERE id IS NOT NULL
    ), n AS (
        SELECT id, source, meta, body, page, bhash,
               CASE WHEN hash ~ '^[0-9a-f]{64}$' THEN hash ELSE bhash END AS hash
        FROM u
    ), kept AS (
        INSERT INTO document_versions (document_id, content_hash, body, created_at)
        SELECT d.id, d.content_hash, d.body, d.updated_at
        FROM n JOIN documents d ON d.id = n.id
             AND (d.content_hash <> n.hash OR coalesce(d.body_hash, d.content_hash) <> n.bhash)
        ON CONFLICT DO NOTHING
    ), put AS (
        INSERT INTO documents (id, content_hash, body_hash, pages, source, metadata, body)
        SELECT id, hash, bhash, page, source, coalesce(meta, '{}'), body FROM n
        ON CONFLICT (id) DO UPDATE SET content_hash = excluded.content_hash, body_hash = excluded.body_hash,
            pages = excluded.pages, source = excluded.source, metadata = excluded.metadata, body = excluded.body,
            updated_at = now()
        WHERE documents.content_hash <> excluded.content_hash
           OR coalesce(documents.body_hash, documents.content_hash) <> excluded.body_hash
        RETURNING 1
    )
    SELECT count(*)::integer FROM put
$$;
REVOKE ALL ON FUNCTION extractq_put_documents(text[], text[], jsonb[], text[], text[], jsonb[]) FROM PUBLIC;

-- The four-argument form (older submitters) stores texts under their own
-- hash, as it did.
CREATE OR REPLACE FUNCTION extractq_put_documents(ids text[], sources text[], metas jsonb[], bodies text[])
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT extractq_put_documents(ids, sources, metas, bodies, NULL::text[], NULL::jsonb[])
$$;
