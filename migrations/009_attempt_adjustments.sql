-- Migration 8: what a provider adapter learned during an attempt.
--
-- When a model's server refuses a part of a request with a 400 that names
-- it (a temperature, a forced tool, the system role, a schema keyword), the
-- adapter drops or changes that part and sends the call again without
-- spending a re-ask. The attempt records each such llm.Adjustment as a JSON
-- array of strings, e.g. ["no_temperature","tool_choice_auto"]; NULL when
-- the call needed none, and for rows written before this migration. A
-- nullable column without a default rewrites no rows.

ALTER TABLE attempts ADD COLUMN adjustments jsonb;
