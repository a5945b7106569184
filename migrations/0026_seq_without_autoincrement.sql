-- 0026: raw_startups and raw_agreements without AUTOINCREMENT. AUTOINCREMENT updates
-- sqlite_sequence in every insert statement: one more billed row per request that carries a startup
-- or a verdict (bench:cost, shared HTTP server: 0.18 rows per call). What the rollup needs of the
-- numbers — a new row numbered above every row it has folded in (the `startups_seq` and
-- `agreements_seq` watermarks) — ingest now gives explicitly: above both the table's highest number
-- and the watermark (db/raw-writes.ts), so a number freed by a deletion is never handed out below
-- a watermark. The rows are copied with their numbers.

CREATE TABLE raw_startups_0026 (
  startup_seq INTEGER PRIMARY KEY,
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
INSERT INTO raw_startups_0026 SELECT startup_seq, project_id, session_id, client_name, received_at_ms, sdk, mcp_sdk_version,
  transport, protocol_version, tools_json, agree_declared_json FROM raw_startups ORDER BY startup_seq;
DROP TABLE raw_startups;
ALTER TABLE raw_startups_0026 RENAME TO raw_startups;

CREATE TABLE raw_agreements_0026 (
  agreement_seq INTEGER PRIMARY KEY,
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
INSERT INTO raw_agreements_0026 SELECT agreement_seq, project_id, session_id, field, tool_a, tool_b, agreed, checked_at_ms,
  window_ms, received_at_ms FROM raw_agreements ORDER BY agreement_seq;
DROP TABLE raw_agreements;
ALTER TABLE raw_agreements_0026 RENAME TO raw_agreements;
