// Folds finished days' hour rows into day rows (migration 0029). The mark moves in the same
// transaction, so a row is added exactly once and reads give the same sums before and after every
// step.
import { addHistogramsSql } from "../db/day-triggers.ts";
import { DAY_MS, dayStartSql } from "../time.ts";
import { COUNTER_NAMES } from "../metrics/counters.ts";
import { NOT_HELD, decideScope, heldParams, type RunScope } from "./scope.ts";
import { namedStatement } from "../db/named-sql.ts";

export const DAY_FOLD_ROWS = 5_000;

// Held projects are skipped: their rows are being copied (db/moves.ts).
const MARK = `mark AS MATERIALIZED (
    SELECT project_id, folded_to_ms, cursor_hour_ms, cursor_tool, cursor_client FROM day_marks
    WHERE folded_to_ms < :today_ms AND ${NOT_HELD} ORDER BY folded_to_ms, project_id LIMIT 1)`;

// The mark changes only in the last statement, so every statement derives the same rows.
const TAKEN = `taken AS MATERIALIZED (
    SELECT h.* FROM mark AS k JOIN tool_hour_metrics AS h ON h.project_id = k.project_id
      AND h.hour_start_ms >= COALESCE(k.cursor_hour_ms, k.folded_to_ms) AND h.hour_start_ms < k.folded_to_ms + ${DAY_MS}
    WHERE k.cursor_hour_ms IS NULL OR (h.hour_start_ms, h.tool_name, h.client_name) > (k.cursor_hour_ms, k.cursor_tool, k.cursor_client)
    ORDER BY h.hour_start_ms, h.tool_name, h.client_name LIMIT :fold_rows)`;

const COLUMNS = COUNTER_NAMES.join(", ");

export const DAY_FOLD_SQL = {
  /** At the last hour row, so every existing row stays in its day row and every later one is folded. */
  markNewProjects: `INSERT INTO day_marks (project_id, folded_to_ms, cursor_hour_ms, cursor_tool, cursor_client)
    SELECT p.project_id, COALESCE(${dayStartSql("l.hour_start_ms")}, :today_ms), l.hour_start_ms, l.tool_name, l.client_name
    FROM (SELECT DISTINCT project_id FROM call_batches WHERE call_count > 0) AS p
    LEFT JOIN tool_hour_metrics AS l ON l.project_id = p.project_id AND (l.hour_start_ms, l.tool_name, l.client_name) = (
      SELECT h.hour_start_ms, h.tool_name, h.client_name FROM tool_hour_metrics AS h WHERE h.project_id = p.project_id
      ORDER BY h.hour_start_ms DESC, h.tool_name DESC, h.client_name DESC LIMIT 1)
    WHERE NOT EXISTS (SELECT 1 FROM day_marks AS k WHERE k.project_id = p.project_id)
    ON CONFLICT (project_id) DO NOTHING`,

  pending: `SELECT EXISTS (SELECT 1 FROM day_marks WHERE folded_to_ms < :today_ms AND ${NOT_HELD}) AS days`,

  addToDays: `INSERT INTO tool_day_metrics (project_id, day_start_ms, tool_name, client_name, ${COLUMNS}, duration_histogram_json)
    WITH ${MARK}, ${TAKEN},
    buckets AS (
      SELECT t.tool_name, t.client_name, j.key AS bucket, SUM(j.value) AS n FROM taken AS t, json_each(t.duration_histogram_json) AS j
      GROUP BY t.tool_name, t.client_name, j.key HAVING SUM(j.value) <> 0),
    histograms AS (
      SELECT tool_name, client_name, json_group_object(bucket, n ORDER BY CAST(bucket AS INTEGER)) AS histogram
      FROM buckets GROUP BY tool_name, client_name)
    SELECT t.project_id, ${dayStartSql("MIN(t.hour_start_ms)")}, t.tool_name, t.client_name,
      ${COUNTER_NAMES.map((c) => `SUM(t.${c})`).join(", ")}, COALESCE(MAX(g.histogram), '{}')
    FROM taken AS t LEFT JOIN histograms AS g ON g.tool_name = t.tool_name AND g.client_name = t.client_name
    WHERE true
    GROUP BY t.project_id, t.tool_name, t.client_name
    ON CONFLICT (project_id, day_start_ms, tool_name, client_name) DO UPDATE SET
      ${COUNTER_NAMES.map((c) => `${c} = ${c} + excluded.${c}`).join(", ")},
      duration_histogram_json = ${addHistogramsSql("tool_day_metrics.duration_histogram_json", "excluded.duration_histogram_json")}`,

  advanceMark: `WITH ${MARK}, ${TAKEN},
    last AS (SELECT hour_start_ms, tool_name, client_name FROM taken ORDER BY hour_start_ms DESC, tool_name DESC, client_name DESC LIMIT 1),
    step AS (SELECT COUNT(*) AS rows FROM taken)
    UPDATE day_marks SET (folded_to_ms, cursor_hour_ms, cursor_tool, cursor_client) = (
      SELECT CASE WHEN step.rows = :fold_rows THEN k.folded_to_ms
          ELSE MIN(:today_ms, ${dayStartSql(`COALESCE((SELECT MIN(h.hour_start_ms) FROM tool_hour_metrics AS h
            WHERE h.project_id = k.project_id AND h.hour_start_ms >= k.folded_to_ms + ${DAY_MS}), :today_ms)`)}) END,
        CASE WHEN step.rows = :fold_rows THEN (SELECT hour_start_ms FROM last) END,
        CASE WHEN step.rows = :fold_rows THEN (SELECT tool_name FROM last) END,
        CASE WHEN step.rows = :fold_rows THEN (SELECT client_name FROM last) END
      FROM mark AS k, step)
    WHERE project_id = (SELECT project_id FROM mark)`,
} as const;

export const DAY_FOLD_STATEMENTS = 3;

/** Answers whether a finished day is left to fold. */
export async function runDayFoldStep(db: D1Database, todayMs: number, rows = DAY_FOLD_ROWS, scope?: RunScope): Promise<{ more: boolean }> {
  const held = heldParams(scope ?? (await decideScope(db)));
  const results = await db.batch([
    namedStatement(db, DAY_FOLD_SQL.addToDays, { today_ms: todayMs, fold_rows: rows, ...held }),
    namedStatement(db, DAY_FOLD_SQL.advanceMark, { today_ms: todayMs, fold_rows: rows, ...held }),
    namedStatement(db, DAY_FOLD_SQL.pending, { today_ms: todayMs, ...held }),
  ]);
  const report = results[2]?.results?.[0] as { days: number } | undefined;
  if (!report) throw new Error("rollup: day fold returned no report");
  return { more: !!report.days };
}
