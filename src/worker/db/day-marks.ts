// Day rows for past days only (migration 0029, docs/metrics.md "Day rows"). A day row used to be
// rewritten by trigger with every change of one of its hour rows: with the rollup running every 5
// minutes that was one more row written per hour row changed, the largest single cost of a call.
// Now each project has a mark in `day_marks`: its hour rows before `folded_to_ms` (a
// UTC day start), and those of that day up to the cursor (hour, tool, client) in key order, are in
// their day rows — kept there by the triggers as before, so a late call still moves its day row —
// and the later ones are not: the rollup folds them in once their day is over (rollup/day-fold.ts),
// in bounded steps, and reads add them to the day rows meanwhile (dayRowsSourceSql). A project
// without a mark has every hour row in its day rows (so it was before 0029).
//
// Invariant: a day row is the sum of its project's hour rows of that day that are "in". Only the
// fold changes which rows are in, and only from out to in, adding each such row's value to its day
// row in the same transaction; a mark is first written past every hour row its project has.
import { DAY_MS } from "../time.ts";

/** SQL true when the hour row `h` (a table alias, or NEW in a trigger) is not in its day row yet. */
export const outOfDayRowsSql = (h: string) => `EXISTS (SELECT 1 FROM day_marks AS k WHERE k.project_id = ${h}.project_id
      AND ${h}.hour_start_ms >= k.folded_to_ms
      AND NOT (${h}.hour_start_ms < k.folded_to_ms + ${DAY_MS} AND k.cursor_hour_ms IS NOT NULL
        AND (${h}.hour_start_ms, ${h}.tool_name, ${h}.client_name) <= (k.cursor_hour_ms, k.cursor_tool, k.cursor_client)))`;

/**
 * A FROM source with the columns of `tool_day_metrics` (`columns`: the counters and
 * duration_histogram_json) holding every day row of project `project` for days in [`start`, `end`)
 * (SQL expressions, day starts) plus each hour row of those days not in its day row yet, as a
 * row of its day: summed by (day, tool, client), they are the days' exact counters. Read in one
 * statement, so a fold step commits before or after it, never in between.
 */
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
