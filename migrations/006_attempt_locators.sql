-- Migration 6: where in the document, and in the value, an attempt worked.
--
-- A long document is split into parts (chunks) extracted separately; each
-- attempt of a part records the part's 0-based index and its [start, end)
-- character (code point) offsets in the original document. A prefill-mode
-- attempt generates one value at a time: prefill_pointer is the JSON
-- pointer of that value ('' for the root) and prefill_step what the call
-- asked for (value, presence, more, choice, whole). All are NULL for an
-- attempt that is not of that kind, and for rows written before this
-- migration. Adding nullable columns without defaults rewrites no rows.

ALTER TABLE attempts
    ADD COLUMN chunk_index     integer,
    ADD COLUMN chunk_start     integer,
    ADD COLUMN chunk_end       integer,
    ADD COLUMN prefill_pointer text,
    ADD COLUMN prefill_step    text;
