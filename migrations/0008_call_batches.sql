-- 0008: ingest writes each request's calls as ONE row (docs/scaling.md, bench:cost): D1 bills rows,
-- not bytes, so a 500-call request is one row written and, once the rollup has numbered its calls
-- into raw_calls, one row deleted. Writing every call as an indexed raw_calls row at ingest
-- (0006) cost ingest half its throughput (bench:ingest 0.31× the floor, target ≥ 0.6×).
-- Nothing moves: raw_calls keeps its rows, and calls not folded in yet stay above the watermark.

CREATE TABLE call_batches (
  -- Receive order of the requests (rowid: above every batch still waiting, which is all the rollup needs).
  batch_seq INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  received_at_ms INTEGER NOT NULL,
  call_count INTEGER NOT NULL,
  -- JSON array of [session_id, client_name, tool_name, started_at_ms, duration_ms, outcome,
  -- response_bytes, is_empty, args_hash, duration_bucket] in the request's order.
  calls_json TEXT NOT NULL
);
