-- 0005: fewer billed rows per call (docs/scaling.md, bench:cost), no figure changes.
--
-- 1. The rollup derives each call's flags and neighbours in CTEs (src/worker/rollup/calls.ts): the
--    scratch table rollup_chunk_call_rows and the flag columns stored on raw_calls (is_retry,
--    was_retried, next_tool_name) are gone. The counters already hold the contributions of those
--    flags, and the rollup recomputes the flags from the same raw rows, so nothing is lost.
-- 2. Latency histograms are merged into the counter row's JSON in the counter upsert itself: the
--    staging rows carry the chunk's bucket counts, and the two per-bucket tables (a row per bucket
--    of every hour and day, written beside every counter row) are dropped. Every counter row's
--    duration_histogram_json already holds its whole histogram (the rollup rewrote it from the
--    bucket tables after every chunk), so the bucket rows hold nothing the JSON lacks.

DROP TABLE IF EXISTS rollup_chunk_call_rows;
ALTER TABLE raw_calls DROP COLUMN is_retry;
ALTER TABLE raw_calls DROP COLUMN was_retried;
ALTER TABLE raw_calls DROP COLUMN next_tool_name;

DROP TABLE tool_hour_duration_buckets;
DROP TABLE tool_day_duration_buckets;
-- The chunk's new calls per bucket of this counter row: JSON object {"<bucket>": count}, '{}' when none.
ALTER TABLE rollup_chunk_deltas ADD COLUMN duration_histogram_json TEXT NOT NULL DEFAULT '{}';
