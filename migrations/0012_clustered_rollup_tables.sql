-- 0012: the rollup's tables are clustered on their primary key (WITHOUT ROWID). A rowid table with
-- a composite TEXT key keeps the key a second time in an automatic index, and D1 bills the index
-- entry as a row: every counter, pair, session and state upsert cost 2 rows written, now 1
-- (bench:cost, docs/scaling.md). Rows and figures are copied as they are.

CREATE TABLE sessions_0012 (
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  first_seen_ms REAL NOT NULL,
  last_seen_ms REAL NOT NULL,
  client_name TEXT NOT NULL,
  calls INTEGER NOT NULL DEFAULT 0,
  response_bytes_sum INTEGER NOT NULL DEFAULT 0,
  -- Sum of schema_bytes of the session's latest startup.
  schema_bytes_sum INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, session_id)
) WITHOUT ROWID;
INSERT INTO sessions_0012 (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum, schema_bytes_sum)
  SELECT project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum, schema_bytes_sum FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_0012 RENAME TO sessions;

CREATE TABLE tool_hour_metrics_0012 (
  project_id TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  calls INTEGER NOT NULL,
  ok INTEGER NOT NULL,
  empty INTEGER NOT NULL,
  bad_args INTEGER NOT NULL,
  tool_error INTEGER NOT NULL,
  crashed INTEGER NOT NULL,
  response_bytes_sum INTEGER NOT NULL,
  duration_ms_sum INTEGER NOT NULL,
  retries INTEGER NOT NULL,
  first_call_attempts INTEGER NOT NULL,
  first_call_ok INTEGER NOT NULL,
  -- JSON object {"<bucket>": count} over src/worker/histogram.ts buckets; sparse.
  duration_histogram_json TEXT NOT NULL,
  PRIMARY KEY (project_id, hour_start_ms, tool_name, client_name)
) WITHOUT ROWID;
INSERT INTO tool_hour_metrics_0012 (project_id, hour_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, duration_histogram_json)
  SELECT project_id, hour_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, duration_histogram_json FROM tool_hour_metrics;
DROP TABLE tool_hour_metrics;
ALTER TABLE tool_hour_metrics_0012 RENAME TO tool_hour_metrics;

CREATE TABLE tool_day_metrics_0012 (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  calls INTEGER NOT NULL,
  ok INTEGER NOT NULL,
  empty INTEGER NOT NULL,
  bad_args INTEGER NOT NULL,
  tool_error INTEGER NOT NULL,
  crashed INTEGER NOT NULL,
  response_bytes_sum INTEGER NOT NULL,
  duration_ms_sum INTEGER NOT NULL,
  retries INTEGER NOT NULL,
  first_call_attempts INTEGER NOT NULL,
  first_call_ok INTEGER NOT NULL,
  duration_histogram_json TEXT NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, tool_name, client_name)
) WITHOUT ROWID;
INSERT INTO tool_day_metrics_0012 (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, duration_histogram_json)
  SELECT project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, duration_histogram_json FROM tool_day_metrics;
DROP TABLE tool_day_metrics;
ALTER TABLE tool_day_metrics_0012 RENAME TO tool_day_metrics;

CREATE TABLE tool_pair_days_0012 (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  client_name TEXT NOT NULL,
  from_tool TEXT NOT NULL,
  to_tool TEXT NOT NULL,
  pair_count INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, client_name, from_tool, to_tool)
) WITHOUT ROWID;
INSERT INTO tool_pair_days_0012 (project_id, day_start_ms, client_name, from_tool, to_tool, pair_count)
  SELECT project_id, day_start_ms, client_name, from_tool, to_tool, pair_count FROM tool_pair_days;
DROP TABLE tool_pair_days;
ALTER TABLE tool_pair_days_0012 RENAME TO tool_pair_days;

CREATE TABLE agreement_days_0012 (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  field TEXT NOT NULL,
  tool_a TEXT NOT NULL,
  tool_b TEXT NOT NULL,
  checks INTEGER NOT NULL,
  disagreements INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, field, tool_a, tool_b)
) WITHOUT ROWID;
INSERT INTO agreement_days_0012 (project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements)
  SELECT project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements FROM agreement_days;
DROP TABLE agreement_days;
ALTER TABLE agreement_days_0012 RENAME TO agreement_days;

CREATE TABLE rollup_state_0012 (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO rollup_state_0012 (name, value)
  SELECT name, value FROM rollup_state;
DROP TABLE rollup_state;
ALTER TABLE rollup_state_0012 RENAME TO rollup_state;

CREATE INDEX tool_pair_days_emptied ON tool_pair_days (pair_count) WHERE pair_count = 0;
