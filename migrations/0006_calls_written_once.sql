-- 0006: ingest writes each call once, into raw_calls, the table the rollup reads (docs/scaling.md,
-- bench:cost). The inbox incoming_calls cost a row per call, then its delete when the rollup moved
-- the call into raw_calls. Calls still waiting in it are moved as they are (same call_seq, above
-- the rollup's watermark, so the next rollup folds them in exactly as it would have).

INSERT INTO raw_calls (call_seq, project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, outcome,
    response_bytes, is_empty, args_hash, duration_bucket, received_at_ms)
  SELECT call_seq, project_id, session_id, client_name, tool_name, started_at_ms, duration_ms, outcome,
    response_bytes, is_empty, args_hash, duration_bucket, received_at_ms
  FROM incoming_calls ORDER BY call_seq;
DROP TABLE incoming_calls;
