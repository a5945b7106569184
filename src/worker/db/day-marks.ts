// Day rows for past days only (migration 0029, docs/metrics.md "Day rows"): rewriting a day row
// with every hour row change was the largest single cost of a call. Hour rows past a project's mark
// are folded in once their day is over (rollup/day-fold.ts); reads add them meanwhile. No mark:
// everything is in (pre-0029).
// Invariant: a day row is the sum of its hour rows that are "in"; only the fold moves a row in,
// adding it in the same transaction.
import { DAY_MS } from "../time.ts";

/** SQL true when the hour row `h` (a table alias, or NEW in a trigger) is not in its day row yet. */
export const outOfDayRowsSql = (h: string) => `EXISTS (SELECT 1 FROM day_marks AS k WHERE k.project_id = ${h}.project_id
      AND ${h}.hour_start_ms >= k.folded_to_ms
      AND NOT (${h}.hour_start_ms < k.folded_to_ms + ${DAY_MS} AND k.cursor_hour_ms IS NOT NULL
        AND (${h}.hour_start_ms, ${h}.tool_name, ${h}.client_name) <= (k.cursor_hour_ms, k.cursor_tool, k.cursor_client)))`;

/** One statement, so a fold step commits before or after it, never in between. */
export function dayRowsSourceSql(columns: readonly string[], project: string, start: string, end: string): string {
  const list = columns.join(", ");
  const hourList = columns.map((c) => `h.${c}`).join(", ");
  return `(SELECT project_id, day_start_ms, tool_name, client_name, ${list} FROM tool_day_metrics
      WHERE project_id = ${project} AND day_start_ms >= ${start} AND day_start_ms < ${end}
    UNION ALL
    SELECT h.project_id, h.hour_start_ms - h.hour_start_ms % ${DAY_MS} AS day_start_ms, h.tool_name, h.client_name, ${hourList}
      FROM day_marks AS k JOIN tool_hour_metrics AS h ON h.project_id = k.project_id
        AND h.hour_start_ms >= MAX(k.folded_to_ms, ${start}) AND h.hour_start_ms < ${end}
      WHERE k.project_id = ${project}
        AND NOT (h.hour_start_ms < k.folded_to_ms + ${DAY_MS} AND k.cursor_hour_ms IS NOT NULL
          AND (h.hour_start_ms, h.tool_name, h.client_name) <= (k.cursor_hour_ms, k.cursor_tool, k.cursor_client)))`;
}
