-- The floor worker's one table (bench:ingest): the call fields, no indexes beyond the rowid.
CREATE TABLE IF NOT EXISTS floor_calls (
  call_seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  started_at TEXT NOT NULL,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  response_bytes INTEGER NOT NULL,
  is_empty INTEGER NOT NULL,
  args_hash TEXT NOT NULL
);
