-- 0014: calls without a session (SPEC §2.2, §4 "Sessions are conversations"), and a startups chunk
-- without its scratch table (at the end). A producer that cannot
-- tell conversations apart sends a call with an empty session_id; the rollup counts it as a chain
-- of its own and keeps no per-session state for it (no call_state row, no session row, no pair).
-- Each counter row now also counts such calls, so the read API can say which share of a client's
-- calls had a known session (where retries can be measured at all). Existing rows count 0: every
-- call stored before this release was folded in under its session. The day-row triggers of 0013
-- are recreated with the new column (SQLite cannot alter a trigger).

ALTER TABLE tool_hour_metrics ADD COLUMN calls_without_session INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tool_day_metrics ADD COLUMN calls_without_session INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER tool_hour_metrics_add_to_day;
DROP TRIGGER tool_hour_metrics_change_day;

CREATE TRIGGER tool_hour_metrics_add_to_day AFTER INSERT ON tool_hour_metrics BEGIN
  INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, calls_without_session, duration_histogram_json)
    VALUES (NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name,
      NEW.calls, NEW.ok, NEW.empty, NEW.bad_args, NEW.tool_error, NEW.crashed, NEW.response_bytes_sum, NEW.duration_ms_sum, NEW.retries, NEW.first_call_attempts, NEW.first_call_ok, NEW.calls_without_session, NEW.duration_histogram_json)
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
      calls = calls + excluded.calls,
      ok = ok + excluded.ok,
      empty = empty + excluded.empty,
      bad_args = bad_args + excluded.bad_args,
      tool_error = tool_error + excluded.tool_error,
      crashed = crashed + excluded.crashed,
      response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum,
      duration_ms_sum = duration_ms_sum + excluded.duration_ms_sum,
      retries = retries + excluded.retries,
      first_call_attempts = first_call_attempts + excluded.first_call_attempts,
      first_call_ok = first_call_ok + excluded.first_call_ok,
      calls_without_session = calls_without_session + excluded.calls_without_session,
      duration_histogram_json = (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(tool_day_metrics.duration_histogram_json) UNION ALL SELECT key, value FROM json_each(excluded.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0));
END;

CREATE TRIGGER tool_hour_metrics_change_day AFTER UPDATE ON tool_hour_metrics BEGIN
  INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, calls_without_session, duration_histogram_json)
    VALUES (NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name,
      NEW.calls - OLD.calls, NEW.ok - OLD.ok, NEW.empty - OLD.empty, NEW.bad_args - OLD.bad_args, NEW.tool_error - OLD.tool_error, NEW.crashed - OLD.crashed, NEW.response_bytes_sum - OLD.response_bytes_sum, NEW.duration_ms_sum - OLD.duration_ms_sum, NEW.retries - OLD.retries, NEW.first_call_attempts - OLD.first_call_attempts, NEW.first_call_ok - OLD.first_call_ok, NEW.calls_without_session - OLD.calls_without_session,
      (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(NEW.duration_histogram_json) UNION ALL SELECT key, -value FROM json_each(OLD.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0)))
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
      calls = calls + excluded.calls,
      ok = ok + excluded.ok,
      empty = empty + excluded.empty,
      bad_args = bad_args + excluded.bad_args,
      tool_error = tool_error + excluded.tool_error,
      crashed = crashed + excluded.crashed,
      response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum,
      duration_ms_sum = duration_ms_sum + excluded.duration_ms_sum,
      retries = retries + excluded.retries,
      first_call_attempts = first_call_attempts + excluded.first_call_attempts,
      first_call_ok = first_call_ok + excluded.first_call_ok,
      calls_without_session = calls_without_session + excluded.calls_without_session,
      duration_histogram_json = (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(tool_day_metrics.duration_histogram_json) UNION ALL SELECT key, value FROM json_each(excluded.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0));
END;

-- The startups chunk no longer writes its startups into a scratch table and empties it again (two
-- rows written per startup, and a server sends one startup per conversation): each statement of
-- the chunk derives the set from the watermark instead (src/worker/rollup/startups.ts). The table
-- is always empty between rollup runs.
DROP TABLE IF EXISTS rollup_chunk_startups;
