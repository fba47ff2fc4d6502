-- Migration 17: storing documents costs half the Postgres CPU.
--
-- extractq_put_documents (migration 16) cost about 18–20 µs of Postgres CPU
-- per document on the bench machine when the regular expression is left
-- out (28–35 µs with it), for two reasons, both gone here:
--
-- - It took the caller's hash as the document's identity when it matched
--   '^[0-9a-f]{64}$'. PostgreSQL's regular expression engine expands the
--   bounded repetition, and that test alone cost about 10–20 µs per
--   document, more than the insert. The same test without the repetition,
--   64 characters none of which is outside [0-9a-f] (bracket ranges compare
--   code points, as in the old pattern), costs about 1 µs.
-- - Every row went through INSERT … ON CONFLICT DO UPDATE: a speculative
--   insertion (an index probe, the insert, a confirmation, one more WAL
--   record per row), although a submission mostly stores documents the
--   table has never seen. The batch is now first inserted plainly, in a
--   subtransaction; if any of its ids is already stored (or is twice in the
--   batch), the insert fails as a whole with unique_violation, is rolled
--   back, and the batch goes through the upsert as before. A batch of known
--   documents fails at its first row and costs about what it did; only a
--   batch whose known documents come late pays for part of it twice.
--
-- What is stored is unchanged: a new id is inserted, a known id whose
-- identity or text changed is replaced (the row trigger of migration 16
-- keeps its earlier text), the same identity and text change nothing, the
-- text's hash is still computed here, and an id twice in one batch still
-- fails with the upsert's cardinality_violation (the caller stores the
-- halves in order). The function is plpgsql so that its statements are
-- planned once per session, not on every call; it returns the rows
-- inserted or replaced, as before.
--
-- CREATE OR REPLACE with the same signature: the grants (EXECUTE to the
-- submit role) stay, and the four-argument form still calls this one.
CREATE OR REPLACE FUNCTION extractq_put_documents(ids text[], sources text[], metas jsonb[], bodies text[], hashes text[], pages jsonb[])
RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    n integer;
BEGIN
    BEGIN
        INSERT INTO documents (id, content_hash, body_hash, pages, source, metadata, body)
        SELECT id, CASE WHEN length(hash) = 64 AND hash !~ '[^0-9a-f]' THEN hash ELSE bhash END, bhash, page, source, coalesce(meta, '{}'), body
        FROM (SELECT id, source, meta, body, hash, page, encode(sha256(convert_to(body, 'UTF8')), 'hex') AS bhash
              FROM unnest(ids, sources, metas, bodies, hashes, pages) AS u(id, source, meta, body, hash, page)
              WHERE id IS NOT NULL) u;
        GET DIAGNOSTICS n = ROW_COUNT;
        RETURN n;
    EXCEPTION WHEN unique_violation THEN
        NULL; -- some are stored already: the upsert below
    END;
    INSERT INTO documents (id, content_hash, body_hash, pages, source, metadata, body)
    SELECT id, CASE WHEN length(hash) = 64 AND hash !~ '[^0-9a-f]' THEN hash ELSE bhash END, bhash, page, source, coalesce(meta, '{}'), body
    FROM (SELECT id, source, meta, body, hash, page, encode(sha256(convert_to(body, 'UTF8')), 'hex') AS bhash
          FROM unnest(ids, sources, metas, bodies, hashes, pages) AS u(id, source, meta, body, hash, page)
          WHERE id IS NOT NULL) u
    ON CONFLICT (id) DO UPDATE SET content_hash = excluded.content_hash, body_hash = excluded.body_hash,
        pages = excluded.pages, source = excluded.source, metadata = excluded.metadata, body = excluded.body,
        updated_at = now()
    WHERE documents.content_hash <> excluded.content_hash
       OR coalesce(documents.body_hash, documents.content_hash) <> excluded.body_hash;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;
