-- 0029: day rows for past days only (docs/metrics.md "Day rows", src/worker/db/day-marks.ts). The
-- day triggers of 0013 wrote a project's day row again with every change of one of its hour rows:
-- a row written per hour row changed, every 5 minutes. Now a project's mark says which of its hour
-- rows are in their day rows: those before folded_to_ms, and those of that day up to the cursor
-- (hour, tool, client) in key order. The triggers fire for those only; the rollup folds the later
-- ones in once their day is over (src/worker/rollup/day-fold.ts), and reads add them meanwhile. A
-- project without a mark (every project at this migration) has all its hour rows in: the rollup
-- gives it a mark past its latest hour row when it next folds in its calls.
CREATE TABLE day_marks (
  project_id TEXT PRIMARY KEY,
  -- A UTC day start: hour rows before it are in their day rows.
  folded_to_ms INTEGER NOT NULL,
  -- The last hour row of day folded_to_ms folded in, in key order; NULL: none yet.
  cursor_hour_ms INTEGER,
  cursor_tool TEXT,
  cursor_client TEXT
) WITHOUT ROWID;
-- The rollup looks for the marks before today on every run: by this index, not a scan of every
-- project's mark (a mark moves once a day, two index rows written).
CREATE INDEX day_marks_by_day ON day_marks (folded_to_ms);
DROP TRIGGER tool_hour_metrics_add_to_day;
DROP TRIGGER tool_hour_metrics_change_day;
CREATE TRIGGER tool_hour_metrics_add_to_day AFTER INSERT ON tool_hour_metrics
  WHEN NOT EXISTS (SELECT 1 FROM day_marks AS k WHERE k.project_id = NEW.project_id
      AND NEW.hour_start_ms >= k.folded_to_ms
      AND NOT (NEW.hour_start_ms < k.folded_to_ms + 86400000 AND k.cursor_hour_ms IS NOT NULL
        AND (NEW.hour_start_ms, NEW.tool_name, NEW.client_name) <= (k.cursor_hour_ms, k.cursor_tool, k.cursor_client))) BEGIN
  INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, retries, first_call_attempts, first_call_ok, calls_without_session, response_bytes_sum, duration_ms_sum, duration_histogram_json)
    VALUES (NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name,
      NEW.calls, NEW.ok, NEW.empty, NEW.bad_args, NEW.tool_error, NEW.crashed, NEW.retries, NEW.first_call_attempts, NEW.first_call_ok, NEW.calls_without_session, NEW.response_bytes_sum, NEW.duration_ms_sum, NEW.duration_histogram_json)
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
  INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, calls, ok, empty, bad_args, tool_error, crashed, retries, first_call_attempts, first_call_ok, calls_without_session, response_bytes_sum, duration_ms_sum, duration_histogram_json)
    VALUES (NEW.project_id, NEW.hour_start_ms - NEW.hour_start_ms % 86400000, NEW.tool_name, NEW.client_name,
      NEW.calls - OLD.calls, NEW.ok - OLD.ok, NEW.empty - OLD.empty, NEW.bad_args - OLD.bad_args, NEW.tool_error - OLD.tool_error, NEW.crashed - OLD.crashed, NEW.retries - OLD.retries, NEW.first_call_attempts - OLD.first_call_attempts, NEW.first_call_ok - OLD.first_call_ok, NEW.calls_without_session - OLD.calls_without_session, NEW.response_bytes_sum - OLD.response_bytes_sum, NEW.duration_ms_sum - OLD.duration_ms_sum,
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
      response_bytes_sum = response_bytes_sum + excluded.response_bytes_sum,
      duration_ms_sum = duration_ms_sum + excluded.duration_ms_sum,
      duration_histogram_json = (SELECT COALESCE(json_group_object(key, calls ORDER BY CAST(key AS INTEGER)), '{}') FROM (
        SELECT key, SUM(value) AS calls FROM (
          SELECT key, value FROM json_each(tool_day_metrics.duration_histogram_json) UNION ALL SELECT key, value FROM json_each(excluded.duration_histogram_json))
        GROUP BY key HAVING SUM(value) <> 0));
END;

