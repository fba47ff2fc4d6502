-- Migration 16: storing documents no longer reads the documents table whole.
--
-- extractq_put_documents (migration 2) found the replaced texts to keep
-- with a join of the batch against documents. For a batch of 500 the
-- planner hashed the whole table, so every batch of a submission cost more
-- as the table grew (34 µs per document at 100,000 stored, 7 µs at none).
-- The earlier text is now kept by a row trigger on the update that replaces
-- it, and the function is the upsert alone: one index probe per document,
-- whatever the table holds. What is stored is unchanged: a new id is
-- inserted, a known id whose identity or text changed is replaced after its
-- current text is copied to document_versions (once per identity), the
-- same identity and text change nothing; the text's hash is still computed
-- here. The trigger keeps the earlier text of any update that changes a
-- document's identity or text, not only the function's.
--
-- It rewrites the six-argument form (identities and pages, migration 12);
-- the four-argument form calls it.

-- extractq_keep_document_version copies the text an update replaces into
-- document_versions. It runs as the role updating documents: the submit
-- role does that only inside extractq_put_documents (SECURITY DEFINER), as
-- the function's owner.
CREATE FUNCTION extractq_keep_document_version() RETURNS trigger
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
BEGIN
    INSERT INTO document_versions (document_id, content_hash, body, created_at)
    VALUES (OLD.id, OLD.content_hash, OLD.body, OLD.updated_at)
    ON CONFLICT DO NOTHING;
    RETURN NEW;
END $$;

CREATE TRIGGER documents_keep_version BEFORE UPDATE ON documents FOR EACH ROW
    WHEN (OLD.content_hash IS DISTINCT FROM NEW.content_hash OR OLD.body IS DISTINCT FROM NEW.body)
    EXECUTE FUNCTION extractq_keep_document_version();

-- CREATE OR REPLACE with the same signature: the grants (EXECUTE to the
-- submit role) stay.
CREATE OR REPLACE FUNCTION extractq_put_documents(ids text[], sources text[], metas jsonb[], bodies text[], hashes text[], pages jsonb[])
RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH u AS (
        SELECT id, source, meta, body, hash, page, encode(sha256(convert_to(body, 'UTF8')), 'hex') AS bhash
        FROM unnest(ids, sources, metas, bodies, hashes, pages) AS u(id, source, meta, body, hash, page)
        WHERE id IS NOT NULL
    ), put AS (
        INSERT INTO documents (id, content_hash, body_hash, pages, source, metadata, body)
        SELECT id, CASE WHEN hash ~ '^[0-9a-f]{64}$' THEN hash ELSE bhash END, bhash, page, source, coalesce(meta, '{}'), body
        FROM u
        ON CONFLICT (id) DO UPDATE SET content_hash = excluded.content_hash, body_hash = excluded.body_hash,
            pages = excluded.pages, source = excluded.source, metadata = excluded.metadata, body = excluded.body,
            updated_at = now()
        WHERE documents.content_hash <> excluded.content_hash
           OR coalesce(documents.body_hash, documents.content_hash) <> excluded.body_hash
        RETURNING 1
    )
    SELECT count(*)::integer FROM put
$$;
