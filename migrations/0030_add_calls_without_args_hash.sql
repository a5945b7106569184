-- Adds the counter calls_without_args_hash (src/worker/metrics/counters.ts): its column on hour and day rows, and the
-- day triggers of 0013 recreated with it, so that day rows stay equal to the sum of their hours.
ALTER TABLE tool_hour_metrics ADD COLUMN calls_without_args_hash INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tool_day_metrics ADD COLUMN calls_without_args_hash INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER IF EXISTS tool_hour_metrics_add_to_day;
DROP TRIGGER IF EXISTS tool_hour_metrics_change_day;
CREATE TRIGGER tool_hour_metrics_add_to_day AFTER INSERT ON tool_hour_metrics
  WHEN NOT EXISTS (SELECT 1 FROM day_marks AS k WHERE k.project_id = NEW.project_id
      AND NEW.hour_start_ms >= k.folded_to_ms
      AND NOT (NEW.hour_start_ms < k.folded_to_ms + 86400000 AND k.cursor_hour_ms IS NOT NULL
        AND (NEW.hour_start_ms, NEW.tool_name, NEW.client_name) <= (k.cursor_hour_ms, k.cursor_tool, k.cursor_client))) BEGIN
  INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, retries, first_call_attempts, first_call_ok, calls_without_session, calls_without_args_hash, response_bytes_sum, duration_ms_sum, duration_histogram_json)
    VALUES (NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name,
      NEW.calls, NEW.ok, NEW.empty, NEW.bad_args, NEW.tool_error, NEW.crashed, NEW.retries, NEW.first_call_attempts, NEW.first_call_ok, NEW.calls_without_session, NEW.calls_without_args_hash, NEW.response_bytes_sum, NEW.duration_ms_sum, NEW.duration_histogram_json)
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
      calls = calls + excluded.calls,
      ok = ok + excluded.ok,
      empty = empty + excluded.empty,
      bad_args = bad_args + excluded.bad_args,
      tool_error = tool_error + excluded.tool_error,
      crashed = crashed + excluded.crashed,
      retries = retries + excluded.retries,
      first_call_attempts = first_call_attempts + excluded.first_call_attempts,
      first_call_ok = first_call_ok + excluded.first_call_ok,
      calls_without_session = calls_without_session + excluded.calls_without_session,
      calls_without_args_hash = calls_without_args_hash + excluded.calls_without_args_hash,
      response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum,
      duration_ms_sum = duration_ms_sum + excluded.duration_ms_sum,
      duration_histogram_json = (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(tool_day_metrics.duration_histogram_json) UNION ALL SELECT key, value FROM json_each(excluded.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0));
END;
CREATE TRIGGER tool_hour_metrics_change_day AFTER UPDATE ON tool_hour_metrics
  WHEN NOT EXISTS (SELECT 1 FROM day_marks AS k WHERE k.project_id = NEW.project_id
      AND NEW.hour_start_ms >= k.folded_to_ms
      AND NOT (NEW.hour_start_ms < k.folded_to_ms + 86400000 AND k.cursor_hour_ms IS NOT NULL
        AND (NEW.hour_start_ms, NEW.tool_name, NEW.client_name) <= (k.cursor_hour_ms, k.cursor_tool, k.cursor_client))) BEGIN
  INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, retries, first_call_attempts, first_call_ok, calls_without_session, calls_without_args_hash, response_bytes_sum, duration_ms_sum, duration_histogram_json)
    VALUES (NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name,
      NEW.calls - OLD.calls, NEW.ok - OLD.ok, NEW.empty - OLD.empty, NEW.bad_args - OLD.bad_args, NEW.tool_error - OLD.tool_error, NEW.crashed - OLD.crashed, NEW.retries - OLD.retries, NEW.first_call_attempts - OLD.first_call_attempts, NEW.first_call_ok - OLD.first_call_ok, NEW.calls_without_session - OLD.calls_without_session, NEW.calls_without_args_hash - OLD.calls_without_args_hash, NEW.response_bytes_sum - OLD.response_bytes_sum, NEW.duration_ms_sum - OLD.duration_ms_sum,
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
      retries = retries + excluded.retries,
      first_call_attempts = first_call_attempts + excluded.first_call_attempts,
      first_call_ok = first_call_ok + excluded.first_call_ok,
      calls_without_session = calls_without_session + excluded.calls_without_session,
      calls_without_args_hash = calls_without_args_hash + excluded.calls_without_args_hash,
      response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum,
      duration_ms_sum = duration_ms_sum + excluded.duration_ms_sum,
      duration_histogram_json = (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(tool_day_metrics.duration_histogram_json) UNION ALL SELECT key, value FROM json_each(excluded.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0));
END;
