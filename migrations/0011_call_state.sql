-- 0011: a call is no longer its own row (docs/scaling.md, bench:cost). Each (project, session,
-- client, UTC hour of started_at) keeps its calls as one JSON array in `call_state`, which is what
-- the rollup reads for the SPEC §2.2/§2.4 neighbours and what retention keeps for the raw window.
-- An indexed raw_calls row cost 4 rows written at the rollup (the row and its three indexes) and 1
-- at retention; a state row is written once per chunk that lands in its hour, whatever the number
-- of calls, and WITHOUT ROWID keeps it clustered on its key (no second index).
--
-- Calls already folded in move as they are (same call_seq, the SPEC §2.2 tie-break). Calls not
-- folded in yet (above the watermark) go back to the inbox ahead of the requests waiting there, in
-- receive order, so the next rollup folds them in exactly as it would have; numbering continues
-- above the watermark.

CREATE TABLE call_state (
  project_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  hour_start_ms INTEGER NOT NULL,
  -- Longest duration_ms among the row's calls: how far around new calls the rollup must look.
  max_duration_ms INTEGER NOT NULL,
  -- Earliest and latest started_at_ms among the row's calls: whether the rows around new calls
  -- already hold their (session, client) predecessor and successor.
  min_started_at_ms REAL NOT NULL,
  max_started_at_ms REAL NOT NULL,
  call_count INTEGER NOT NULL,
  -- JSON array of [call_seq, tool_name, started_at_ms, duration_ms, outcome, response_bytes,
  -- is_empty, args_hash], in no particular order.
  calls_json TEXT NOT NULL,
  PRIMARY KEY (project_id, session_id, client_name, hour_start_ms)
) WITHOUT ROWID;

INSERT INTO call_state (project_id, session_id, client_name, hour_start_ms, max_duration_ms, min_started_at_ms,
    max_started_at_ms, call_count, calls_json)
  SELECT project_id, session_id, client_name, CAST(started_at_ms / 3600000 AS INTEGER) * 3600000 AS hour_start_ms,
    MAX(duration_ms), MIN(started_at_ms), MAX(started_at_ms), COUNT(*),
    json_group_array(json_array(call_seq, tool_name, started_at_ms, duration_ms, outcome, response_bytes, is_empty, args_hash) ORDER BY call_seq)
  FROM raw_calls
  WHERE call_seq <= COALESCE((SELECT value FROM rollup_state WHERE name = 'calls_seq'), 0)
  GROUP BY project_id, session_id, client_name, hour_start_ms;

CREATE TABLE call_batches_0011 (
  -- Receive order of the requests (rowid: above every batch still waiting, which is all the rollup needs).
  batch_seq INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  received_at_ms INTEGER NOT NULL,
  call_count INTEGER NOT NULL,
  -- JSON array of [session_id, client_name, tool_name, started_at_ms, duration_ms, outcome,
  -- response_bytes, is_empty, args_hash, duration_bucket] in the request's order.
  calls_json TEXT NOT NULL
);

INSERT INTO call_batches_0011 (batch_seq, project_id, received_at_ms, call_count, calls_json)
  SELECT ROW_NUMBER() OVER (ORDER BY first_seq), project_id, received_at_ms, call_count, calls_json FROM (
    SELECT MIN(call_seq) AS first_seq, project_id, received_at_ms, COUNT(*) AS call_count,
      json_group_array(json_array(session_id, client_name, tool_name, started_at_ms, duration_ms, outcome, response_bytes,
        is_empty, args_hash, duration_bucket) ORDER BY call_seq) AS calls_json
    FROM raw_calls
    WHERE call_seq > COALESCE((SELECT value FROM rollup_state WHERE name = 'calls_seq'), 0)
    GROUP BY project_id, received_at_ms);

INSERT INTO call_batches_0011 (batch_seq, project_id, received_at_ms, call_count, calls_json)
  SELECT (SELECT COUNT(*) FROM call_batches_0011) + ROW_NUMBER() OVER (ORDER BY batch_seq), project_id, received_at_ms,
    call_count, calls_json
  FROM call_batches;

DROP TABLE call_batches;
ALTER TABLE call_batches_0011 RENAME TO call_batches;

DROP INDEX raw_calls_by_start;
DROP INDEX raw_calls_by_client_tool;
DROP INDEX raw_calls_by_client;
DROP TABLE raw_calls;

-- Retention scans call_state by its key; its old scan position over raw_calls means nothing now.
DELETE FROM rollup_state WHERE name = 'retention_scan_from_ms';
