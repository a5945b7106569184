-- 0003: retries, chains and first-call success are computed per (session, client, tool), tool pairs
-- per (session, client) (SPEC §2.2, §2.4 as changed for real SDKs, which keep one session per
-- process while an HTTP server serves many clients from it).
--
-- 1. The rollup's two lookup indexes follow the new sequence key.
-- 2. The derived flags of every raw call already folded in (call_seq at or below the calls
--    watermark) are recomputed under the new key, exactly as a batch computation over the kept
--    calls gives them, and every counter they feed (hour and day rows, pairs) moves by the exact
--    difference between the new and the stored contribution — the same bookkeeping the rollup
--    does (src/worker/rollup/calls.ts), so counters keep equalling the sum of the stored flags.
--    Calls the rollup treats as frozen (started before `raw_kept_from_ms`, whose neighbours
--    retention may have deleted) keep their retry flags, as the rollup would; counters of calls
--    retention already deleted cannot be recomputed and stay as they were (docs/metrics.md).
-- Calls not folded in yet are left alone: the next rollup computes them under the new key.

DROP INDEX IF EXISTS raw_calls_by_session_tool;
DROP INDEX IF EXISTS raw_calls_by_session;
CREATE INDEX IF NOT EXISTS raw_calls_by_client_tool
  ON raw_calls (project_id, session_id, client_name, tool_name, started_at_ms, call_seq);
CREATE INDEX IF NOT EXISTS raw_calls_by_client
  ON raw_calls (project_id, session_id, client_name, started_at_ms, call_seq);

-- Scratch table of this migration only (dropped at its end).
CREATE TABLE migration_0003_flags AS
WITH bounds AS (
  SELECT COALESCE((SELECT value FROM rollup_state WHERE name = 'calls_seq'), 0) AS watermark,
         COALESCE((SELECT value FROM rollup_state WHERE name = 'raw_kept_from_ms'), 0) AS kept_from
),
neighbours AS (
  SELECT r.call_seq, r.project_id, r.session_id, r.client_name, r.tool_name, r.started_at_ms, r.duration_ms,
    r.outcome, r.is_empty, r.args_hash, r.is_retry AS old_is_retry, r.was_retried AS old_was_retried,
    r.next_tool_name AS old_next_tool_name, b.kept_from,
    LAG(r.started_at_ms) OVER tool_sequence AS prev_started_at_ms,
    LAG(r.duration_ms) OVER tool_sequence AS prev_duration_ms,
    LAG(r.args_hash) OVER tool_sequence AS prev_args_hash,
    LEAD(r.started_at_ms) OVER tool_sequence AS next_started_at_ms,
    LEAD(r.args_hash) OVER tool_sequence AS next_args_hash,
    LEAD(r.tool_name) OVER client_sequence AS next_tool_name
  FROM raw_calls r, bounds b
  WHERE r.call_seq <= b.watermark
  WINDOW tool_sequence AS (PARTITION BY r.project_id, r.session_id, r.client_name, r.tool_name ORDER BY r.started_at_ms, r.call_seq),
    client_sequence AS (PARTITION BY r.project_id, r.session_id, r.client_name ORDER BY r.started_at_ms, r.call_seq)
),
flags AS (
  -- SPEC §2.2 with gaps in whole microseconds (src/worker/rollup/time.ts, gapMicrosSql).
  SELECT *,
    CASE WHEN started_at_ms < kept_from THEN old_is_retry ELSE COALESCE(
      (ROUND(started_at_ms * 1000) - ROUND(prev_started_at_ms * 1000) - prev_duration_ms * 1000) BETWEEN 0 AND 30000000
        AND prev_args_hash <> args_hash, 0) END AS is_retry,
    CASE WHEN started_at_ms < kept_from THEN old_was_retried ELSE COALESCE(
      (ROUND(next_started_at_ms * 1000) - ROUND(started_at_ms * 1000) - duration_ms * 1000) BETWEEN 0 AND 30000000
        AND next_args_hash <> args_hash, 0) END AS was_retried
  FROM neighbours
)
SELECT call_seq, project_id, client_name, tool_name, started_at_ms, outcome, is_empty,
  old_is_retry, old_was_retried, old_next_tool_name, is_retry, was_retried, next_tool_name
FROM flags
WHERE is_retry IS NOT old_is_retry OR was_retried IS NOT old_was_retried OR next_tool_name IS NOT old_next_tool_name;

-- Counter rows of the changed calls (each already exists: the call was counted in it).
CREATE TABLE migration_0003_deltas AS
SELECT project_id, CAST(started_at_ms / 3600000 AS INTEGER) * 3600000 AS hour_start_ms, tool_name, client_name,
  SUM(is_retry) - SUM(old_is_retry) AS retries,
  SUM(1 - is_retry) - SUM(1 - old_is_retry) AS first_call_attempts,
  SUM(is_retry = 0 AND outcome = 'ok' AND is_empty = 0 AND was_retried = 0)
    - SUM(old_is_retry = 0 AND outcome = 'ok' AND is_empty = 0 AND old_was_retried = 0) AS first_call_ok
FROM migration_0003_flags
GROUP BY project_id, hour_start_ms, tool_name, client_name;

UPDATE tool_hour_metrics SET
  retries = tool_hour_metrics.retries + d.retries,
  first_call_attempts = tool_hour_metrics.first_call_attempts + d.first_call_attempts,
  first_call_ok = tool_hour_metrics.first_call_ok + d.first_call_ok
FROM migration_0003_deltas d
WHERE d.project_id = tool_hour_metrics.project_id AND d.hour_start_ms = tool_hour_metrics.hour_start_ms
  AND d.tool_name = tool_hour_metrics.tool_name AND d.client_name = tool_hour_metrics.client_name;

UPDATE tool_day_metrics SET
  retries = tool_day_metrics.retries + d.retries,
  first_call_attempts = tool_day_metrics.first_call_attempts + d.first_call_attempts,
  first_call_ok = tool_day_metrics.first_call_ok + d.first_call_ok
FROM (
  SELECT project_id, hour_start_ms - hour_start_ms % 86400000 AS day_start_ms, tool_name, client_name,
    SUM(retries) AS retries, SUM(first_call_attempts) AS first_call_attempts, SUM(first_call_ok) AS first_call_ok
  FROM migration_0003_deltas GROUP BY project_id, day_start_ms, tool_name, client_name
) d
WHERE d.project_id = tool_day_metrics.project_id AND d.day_start_ms = tool_day_metrics.day_start_ms
  AND d.tool_name = tool_day_metrics.tool_name AND d.client_name = tool_day_metrics.client_name;

-- Pairs: the old next tool's pair leaves, the new one's arrives (on the first call's day and client).
INSERT INTO tool_pair_days (project_id, day_start_ms, client_name, from_tool, to_tool, pair_count)
SELECT project_id, day_start_ms, client_name, from_tool, to_tool, SUM(delta) FROM (
  SELECT project_id, CAST(started_at_ms / 86400000 AS INTEGER) * 86400000 AS day_start_ms, client_name,
    tool_name AS from_tool, old_next_tool_name AS to_tool, -1 AS delta
  FROM migration_0003_flags
  WHERE old_next_tool_name IS NOT next_tool_name AND old_next_tool_name IS NOT NULL AND old_next_tool_name <> tool_name
  UNION ALL
  SELECT project_id, CAST(started_at_ms / 86400000 AS INTEGER) * 86400000, client_name, tool_name, next_tool_name, 1
  FROM migration_0003_flags
  WHERE old_next_tool_name IS NOT next_tool_name AND next_tool_name IS NOT NULL AND next_tool_name <> tool_name
) WHERE true
GROUP BY project_id, day_start_ms, client_name, from_tool, to_tool HAVING SUM(delta) <> 0
ON CONFLICT (project_id, day_start_ms, client_name, from_tool, to_tool)
  DO UPDATE SET pair_count = pair_count + excluded.pair_count;

DELETE FROM tool_pair_days WHERE pair_count = 0;

UPDATE raw_calls SET is_retry = f.is_retry, was_retried = f.was_retried, next_tool_name = f.next_tool_name
FROM migration_0003_flags f WHERE f.call_seq = raw_calls.call_seq;

DROP TABLE migration_0003_flags;
DROP TABLE migration_0003_deltas;
