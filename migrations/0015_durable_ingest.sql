-- 0015: durable ingest (SPEC §1.1, turn 3). Every stored request now has a batch id — its
-- Idempotency-Key, or one the worker draws — kept on the row the request writes anyway, so a resend
-- costs no row of its own (bench:cost: a row per request would add ~0.75 rows per call).
--
-- call_batches is rebuilt rather than altered so that batch_id sits before calls_json: a guard
-- that looks a batch id up reads the row's first columns and never walks calls_json's overflow
-- pages. Only the batches still waiting for the rollup live here; they are copied in order.

CREATE TABLE call_batches_0015 (
  -- Receive order of the requests (rowid: above every batch still waiting, which is all the rollup needs).
  batch_seq INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  received_at_ms INTEGER NOT NULL,
  call_count INTEGER NOT NULL,
  -- The request's Idempotency-Key or a drawn id (NULL for rows stored before 0015). No index: an
  -- index entry is one more row written per request; the guard scans only the newest batches.
  batch_id TEXT,
  -- JSON array of [session_id, client_name, tool_name, started_at_ms, duration_ms, outcome,
  -- response_bytes, is_empty, args_hash, duration_bucket] in the request's order.
  calls_json TEXT NOT NULL
);
INSERT INTO call_batches_0015 (batch_seq, project_id, received_at_ms, call_count, batch_id, calls_json)
  SELECT batch_seq, project_id, received_at_ms, call_count, NULL, calls_json FROM call_batches ORDER BY batch_seq;
DROP TABLE call_batches;
ALTER TABLE call_batches_0015 RENAME TO call_batches;

-- Batches written on the slow paths only — a write retried after a failed attempt, or a batch the
-- ingest queue's consumer writes — so that a redelivered message or a retried write whose first
-- attempt did commit is stored once. A healthy request writes no row here.
CREATE TABLE ingest_receipts (
  project_id TEXT NOT NULL,
  batch_id TEXT NOT NULL,
  -- A value drawn per write attempt: the attempt that inserted the receipt writes the batch's rows.
  attempt_id TEXT NOT NULL,
  written_at_ms INTEGER NOT NULL,
  PRIMARY KEY (project_id, batch_id)
) WITHOUT ROWID;
