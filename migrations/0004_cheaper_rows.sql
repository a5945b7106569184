-- 0004: fewer billed rows per call (docs/scaling.md, bench:cost). D1 bills every row written, and
-- every index entry written beside it.
--
-- 1. incoming_calls without AUTOINCREMENT: AUTOINCREMENT rewrites its sqlite_sequence row on every
--    ingest statement (one more row per request: ~0.55 per call at the SDK's batching). Ingest
--    now numbers the calls itself, above every call_seq in use or folded in (the calls watermark),
--    so a number is still never reused even after the table is emptied (src/worker/db/raw-writes.ts).
-- 2. The histogram bucket tables WITHOUT ROWID: keyed by their primary key alone, a new bucket row
--    is one row written instead of a row and its primary-key index entry.
-- Every row is copied as it is; no figure changes.

CREATE TABLE incoming_calls_0004 (
  call_seq INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  started_at_ms REAL NOT NULL,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'bad_args', 'tool_error', 'crashed')),
  response_bytes INTEGER NOT NULL,
  is_empty INTEGER NOT NULL CHECK (is_empty IN (0, 1)),
  args_hash TEXT NOT NULL,
  duration_bucket INTEGER NOT NULL,
  received_at_ms INTEGER NOT NULL
);
INSERT INTO incoming_calls_0004 SELECT * FROM incoming_calls;
-- The highest number AUTOINCREMENT handed out may belong to a call already moved and deleted:
-- keep it in the watermark's reach so ingest never hands it out again.
INSERT INTO rollup_state (name, value)
  SELECT 'calls_seq', COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'incoming_calls'), 0)
  WHERE EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'incoming_calls') AND NOT EXISTS (SELECT 1 FROM incoming_calls) AND NOT EXISTS (SELECT 1 FROM raw_calls WHERE call_seq > COALESCE((SELECT value FROM rollup_state WHERE name = 'calls_seq'), 0))
  ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value);
DROP TABLE incoming_calls;
ALTER TABLE incoming_calls_0004 RENAME TO incoming_calls;

CREATE TABLE tool_hour_duration_buckets_0004 (
  project_id TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  calls INTEGER NOT NULL,
  PRIMARY KEY (project_id, hour_start_ms, tool_name, client_name, bucket)
) WITHOUT ROWID;
INSERT INTO tool_hour_duration_buckets_0004 SELECT project_id, hour_start_ms, tool_name, client_name, bucket, calls FROM tool_hour_duration_buckets;
DROP TABLE tool_hour_duration_buckets;
ALTER TABLE tool_hour_duration_buckets_0004 RENAME TO tool_hour_duration_buckets;

CREATE TABLE tool_day_duration_buckets_0004 (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  calls INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, tool_name, client_name, bucket)
) WITHOUT ROWID;
INSERT INTO tool_day_duration_buckets_0004 SELECT project_id, day_start_ms, tool_name, client_name, bucket, calls FROM tool_day_duration_buckets;
DROP TABLE tool_day_duration_buckets;
ALTER TABLE tool_day_duration_buckets_0004 RENAME TO tool_day_duration_buckets;
