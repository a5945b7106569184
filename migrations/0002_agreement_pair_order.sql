-- 0002: agreement pairs in code-point order (SPEC §2.5). Producers name a pair in either order (the
-- PHP SDK puts the earlier tool first), and one pair is one row: ingest now stores (tool_a, tool_b)
-- with tool_a ≤ tool_b by code point, and this migration gives the rows stored before it the same
-- order. One migration is one D1 batch, so it applies whole or not at all.
--
-- The order is SQLite's BINARY collation (the columns' default, spelled out below): memcmp of the
-- stored UTF-8, and UTF-8 byte order is code-point order. (Not JavaScript's `<`, which compares UTF-16
-- units and puts U+1F680 before U+FB01; ingest compares code points with compareByCodePoint.)

-- Raw verdicts: swap the names of every pair stored in the other order. Rows above the agreements
-- watermark are then folded in by the next rollup already in order, and rows below it are only kept for
-- retention and never read again.
UPDATE raw_agreements
SET tool_a = tool_b, tool_b = tool_a
WHERE tool_a > tool_b COLLATE BINARY;

-- Rolled-up days: add every (field, b, a) row into its (field, a, b) twin — created when the pair was
-- only ever stored the other way, summed when both orders were stored — then delete the reversed rows.
-- checks and disagreements are counts, so the merged row is exactly what one order would have summed.
INSERT INTO agreement_days (project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements)
SELECT project_id, day_start_ms, field, tool_b, tool_a, checks, disagreements
FROM agreement_days
WHERE tool_a > tool_b COLLATE BINARY
ON CONFLICT (project_id, day_start_ms, field, tool_a, tool_b) DO UPDATE SET
  checks = agreement_days.checks + excluded.checks,
  disagreements = agreement_days.disagreements + excluded.disagreements;

DELETE FROM agreement_days
WHERE tool_a > tool_b COLLATE BINARY;
