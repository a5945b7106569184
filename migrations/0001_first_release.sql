-- 0001: the schema the first release created with `schema.sql`. Every statement is IF NOT EXISTS, so
-- on a database made by that schema.sql this migration changes nothing and is only recorded as applied
-- (docs/migrations.md). Never edit a migration that has shipped: add the next one.
-- Times are UTC epoch milliseconds (`*_ms`); `*_start_ms` columns are the start of an hour or day.

-- ---------------------------------------------------------------------------------------------
-- Projects and keys (SPEC §3). Keys are stored only as SHA-256; `key_id` is the key's first
-- 16 characters, kept in clear to name it.
-- ---------------------------------------------------------------------------------------------
CREATE TABLE IF NOT EXISTS projects (
  project_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  -- Payloads a key of this project may send per minute (SPEC §1.1, default 10,000).
  payload_budget_per_minute INTEGER NOT NULL DEFAULT 10000,
  created_at_ms INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS api_keys (
  key_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (project_id),
  kind TEXT NOT NULL CHECK (kind IN ('ingest', 'read')),
  key_sha256 TEXT NOT NULL UNIQUE,
  created_at_ms INTEGER NOT NULL,
  revoked_at_ms INTEGER
);

-- ---------------------------------------------------------------------------------------------
-- Raw rows written by ingest (SPEC §1.2), exactly the listed fields and nothing else.
-- `*_seq` columns are the receive order: ties in `started_at_ms` resolve by it (SPEC §2.2).
-- ---------------------------------------------------------------------------------------------
-- Ingest appends calls here and nothing else: a table with no secondary index keeps the hot path
-- as cheap as a bare insert (docs/benchmarks.md). Each rollup chunk moves the oldest rows, in
-- call_seq order, into raw_calls (below) where the rollup's lookup indexes live.
-- AUTOINCREMENT: a call_seq is never reused, even after the table is emptied.
CREATE TABLE IF NOT EXISTS incoming_calls (
  call_seq INTEGER PRIMARY KEY AUTOINCREMENT,
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

-- Calls the rollup has taken in (kept RAW_RETENTION_DAYS), with the call_seq ingest gave them.
CREATE TABLE IF NOT EXISTS raw_calls (
  call_seq INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  -- Fractional milliseconds are kept (producers may send micro- or nanoseconds).
  started_at_ms REAL NOT NULL,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'bad_args', 'tool_error', 'crashed')),
  response_bytes INTEGER NOT NULL,
  is_empty INTEGER NOT NULL CHECK (is_empty IN (0, 1)),
  args_hash TEXT NOT NULL,
  -- Latency histogram bucket of duration_ms (src/worker/histogram.ts), computed at ingest.
  duration_bucket INTEGER NOT NULL,
  received_at_ms INTEGER NOT NULL,
  -- Derived by the rollup (NULL until rolled up), SPEC §2.2/§2.4: whether this call is a retry of
  -- its predecessor / was retried by its successor in its (session, tool) sequence, and the tool of
  -- the session's very next call (NULL when there is none).
  is_retry INTEGER,
  was_retried INTEGER,
  next_tool_name TEXT
);

CREATE TABLE IF NOT EXISTS raw_startups (
  startup_seq INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  received_at_ms INTEGER NOT NULL,
  sdk TEXT,
  mcp_sdk_version TEXT,
  transport TEXT,
  protocol_version TEXT,
  -- The validated tool list: JSON array of {name, schema_bytes, schema_hash, description_hash,
  -- description_norm, policy} (absent optional fields as null).
  tools_json TEXT NOT NULL,
  -- JSON array of {field, tools: [names]} (empty array when not sent).
  agree_declared_json TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS raw_agreements (
  agreement_seq INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  field TEXT NOT NULL,
  tool_a TEXT NOT NULL,
  tool_b TEXT NOT NULL,
  agreed INTEGER NOT NULL CHECK (agreed IN (0, 1)),
  checked_at_ms REAL NOT NULL,
  window_ms INTEGER NOT NULL,
  received_at_ms INTEGER NOT NULL
);

-- Sessions (SPEC §2.4), upserted by ingest: first/last seen over call `started_at` and startup
-- receive times; `client_name` is the client of the payload with the latest such time.
-- The counters are filled by the rollup.
CREATE TABLE IF NOT EXISTS sessions (
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
);

-- ---------------------------------------------------------------------------------------------
-- Rollup tables (SPEC §2), written only by the cron. Recomputed and overwritten, never blindly
-- incremented, so a rollup can run twice without changing anything.
-- ---------------------------------------------------------------------------------------------

-- Additive counters per (project, hour UTC, tool, client), SPEC §2.1–2.3.
CREATE TABLE IF NOT EXISTS tool_hour_metrics (
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
);

-- The same counters per UTC day: the sum of that day's hour rows (what range reads use).
CREATE TABLE IF NOT EXISTS tool_day_metrics (
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
);

-- Tool pairs (SPEC §2.4): (A's tool → the session's very next call's tool), counted on A's UTC day
-- and A's client.
CREATE TABLE IF NOT EXISTS tool_pair_days (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  client_name TEXT NOT NULL,
  from_tool TEXT NOT NULL,
  to_tool TEXT NOT NULL,
  pair_count INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, client_name, from_tool, to_tool)
);

-- The project's registered tools: the tool list of its most recently received startup (SPEC §2.4).
CREATE TABLE IF NOT EXISTS registered_tools (
  project_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  schema_bytes INTEGER NOT NULL,
  schema_hash TEXT,
  description_hash TEXT,
  description_norm TEXT,
  requires_authorization INTEGER NOT NULL DEFAULT 0,
  requires_verified_identity INTEGER NOT NULL DEFAULT 0,
  startup_seq INTEGER NOT NULL,
  PRIMARY KEY (project_id, tool_name)
);

-- Every distinct (schema_hash, description_hash) a tool has been registered with, for churn and
-- schema regressions (SPEC §2.5; issue: before/after the latest schema_hash change).
CREATE TABLE IF NOT EXISTS tool_versions (
  project_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  schema_hash TEXT NOT NULL,
  description_hash TEXT NOT NULL,
  description_norm TEXT,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  startups INTEGER NOT NULL,
  PRIMARY KEY (project_id, tool_name, schema_hash, description_hash)
);

-- Agreement verdicts per (project, UTC day of checked_at, field, tool_a, tool_b), SPEC §2.5.
CREATE TABLE IF NOT EXISTS agreement_days (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  field TEXT NOT NULL,
  tool_a TEXT NOT NULL,
  tool_b TEXT NOT NULL,
  checks INTEGER NOT NULL,
  disagreements INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, field, tool_a, tool_b)
);

-- Fields declared in `agree_declared` of the project's startups, with when they were last declared.
CREATE TABLE IF NOT EXISTS agreement_declarations (
  project_id TEXT NOT NULL,
  field TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  last_declared_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, field, tool_name)
);

-- Rollup bookkeeping: watermarks (highest *_seq folded in) and `as_of`, per name.
CREATE TABLE IF NOT EXISTS rollup_state (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);

-- Latency histogram counts per bucket (src/worker/histogram.ts) behind duration_histogram_json
-- of tool_hour_metrics / tool_day_metrics: the rollup adds new calls here and rewrites the JSON of
-- the rows it touched from these, so it never re-reads old raw calls.
CREATE TABLE IF NOT EXISTS tool_hour_duration_buckets (
  project_id TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  calls INTEGER NOT NULL,
  PRIMARY KEY (project_id, hour_start_ms, tool_name, client_name, bucket)
);
CREATE TABLE IF NOT EXISTS tool_day_duration_buckets (
  project_id TEXT NOT NULL,
  day_start_ms INTEGER NOT NULL,
  tool_name TEXT NOT NULL,
  client_name TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  calls INTEGER NOT NULL,
  PRIMARY KEY (project_id, day_start_ms, tool_name, client_name, bucket)
);

-- Rollup lookups (src/worker/rollup): a call's neighbours in its (session, tool) sequence and in
-- its session, ordered by (started_at, receive order) as SPEC §2.2/§2.4 say; and the calls before
-- a time, which retention deletes.
CREATE INDEX IF NOT EXISTS raw_calls_by_session_tool
  ON raw_calls (project_id, session_id, tool_name, started_at_ms, call_seq);
CREATE INDEX IF NOT EXISTS raw_calls_by_session
  ON raw_calls (project_id, session_id, started_at_ms, call_seq);
CREATE INDEX IF NOT EXISTS raw_calls_by_start
  ON raw_calls (project_id, started_at_ms);
-- Pair counts that a late call moved to another pair drop to 0 and are deleted through this.
CREATE INDEX IF NOT EXISTS tool_pair_days_emptied ON tool_pair_days (pair_count) WHERE pair_count = 0;

-- Rollup scratch space, filled and emptied inside one D1 batch (one transaction), so it is
-- always empty between batches. `rollup_chunk_call_rows` holds the calls whose derived columns
-- are recomputed in the current chunk (the new calls and their neighbours): a copy of their raw
-- columns with the stored (`old_*`) and the recomputed derived columns, so the chunk reads each
-- raw row once.
CREATE TABLE IF NOT EXISTS rollup_chunk_call_rows (
  call_seq INTEGER PRIMARY KEY,
  is_new INTEGER NOT NULL,
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  started_at_ms REAL NOT NULL,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  response_bytes INTEGER NOT NULL,
  is_empty INTEGER NOT NULL,
  args_hash TEXT NOT NULL,
  duration_bucket INTEGER NOT NULL,
  old_is_retry INTEGER,
  old_was_retried INTEGER,
  old_next_tool_name TEXT,
  -- The call's neighbours (call_seq) among the calls visible to the chunk, once looked up.
  neighbours_found INTEGER NOT NULL DEFAULT 0,
  prev_tool_seq INTEGER,
  next_tool_seq INTEGER,
  prev_session_seq INTEGER,
  next_session_seq INTEGER,
  is_retry INTEGER,
  was_retried INTEGER,
  next_tool_name TEXT
);
-- The chunk's change to each (project, hour, tool, client) counter row.
CREATE TABLE IF NOT EXISTS rollup_chunk_deltas (
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
  PRIMARY KEY (project_id, hour_start_ms, tool_name, client_name)
);
CREATE TABLE IF NOT EXISTS rollup_chunk_startups (
  startup_seq INTEGER PRIMARY KEY
);
