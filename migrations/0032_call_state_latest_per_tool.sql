-- 0032: each call_state row names, in `latest_per_tool_json`, the positions in its calls_json of the
-- two latest calls (by started_at_ms, then call_seq) of every tool it holds. A calls chunk reads, of
-- a row whose calls all come before every new call of its (session, client), only those calls: the
-- only ones there whose retry flags or pairs a new call can change, with the predecessor that decides
-- the latest one's flag (src/worker/rollup/calls.ts). No stored row changes: rows written before
-- this migration have NULL, which means "not known" — such a row is read whole, as before, until its
-- hour is over.
ALTER TABLE call_state ADD COLUMN latest_per_tool_json TEXT;
