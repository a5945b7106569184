-- 0025: a project's requests between two rollup runs share ONE call_batches row, appended to, instead
-- of a row each (SPEC §1.1, §2.6; docs/ingest.md "Where a request's calls wait"). D1 bills rows
-- written: a row per request cost its insert and its delete (bench:cost, low traffic: ~0.55–0.83 rows
-- per call for the delete alone); an append is one row written and the row is emptied and deleted once.
--
-- The row a request appends to is its project's newest row when that row is still open — its
-- `epoch` is the current `ingest_epoch` (rollup_state) — and the calls fit under the append limit;
-- otherwise the request starts a row of its own. Each rollup run first closes the open rows by
-- advancing `ingest_epoch`, then takes only closed rows, so no request can append to a row a run has
-- chosen (D1 runs one statement at a time). Rows stored before this migration are closed (epoch NULL).
--
-- A row the rollup has folded in is emptied (call_count 0, calls_json '[]') and kept for the
-- Idempotency-Key window with its batch ids, so a resend is recognised after the rollup took the first
-- copy even when the key's Durable Object has restarted; the rollup deletes it an hour after its last
-- request.
--
-- Column order: the resend guard reads batch_ids without walking calls_json's overflow pages.

CREATE TABLE call_batches_0025 (
  -- Creation order of the rows (rowid: above every row still waiting, which is all the rollup needs).
  batch_seq INTEGER PRIMARY KEY,
  project_id TEXT NOT NULL,
  -- Receive time of the row's first and latest request.
  received_at_ms INTEGER NOT NULL,
  last_received_at_ms INTEGER NOT NULL DEFAULT 0,
  -- The rollup_state `ingest_epoch` the row was opened in; NULL = closed (rows from before 0025).
  epoch INTEGER,
  -- Calls waiting in calls_json; 0 once the rollup has folded them in.
  call_count INTEGER NOT NULL,
  -- length(calls_json), kept so an append never reads the JSON to learn it.
  chars INTEGER NOT NULL DEFAULT 0,
  -- The batch ids (Idempotency-Key, a drawn id, or `id#n` for a queued part) of the row's requests,
  -- each followed by a space, after a leading space: ' id1 id2 '.
  batch_ids TEXT NOT NULL DEFAULT ' ',
  -- JSON array of [session_id, client_name, tool_name, started_at_ms, duration_ms, outcome,
  -- response_bytes, is_empty, args_hash, duration_bucket] in receive order.
  calls_json TEXT NOT NULL
);
INSERT INTO call_batches_0025 (batch_seq, project_id, received_at_ms, last_received_at_ms, epoch, call_count, chars, batch_ids, calls_json)
  SELECT batch_seq, project_id, received_at_ms, received_at_ms, NULL, call_count, length(calls_json),
    CASE WHEN batch_id IS NULL THEN ' ' ELSE ' ' || batch_id || ' ' END, calls_json
  FROM call_batches ORDER BY batch_seq;
DROP TABLE call_batches;
ALTER TABLE call_batches_0025 RENAME TO call_batches;
-- A project's rows: its newest row (the append target) and the resend guard are seeks, not scans of
-- every project's rows. One entry per row, not per request.
CREATE INDEX call_batches_by_project ON call_batches (project_id);

INSERT INTO rollup_state (name, value) VALUES ('ingest_epoch', 1) ON CONFLICT (name) DO NOTHING;
