// The daily raw-row retention (`30 3 * * *`, SPEC §2.6) and the hour-row fold (SPEC §7);
// docs/metrics.md "Retention".
// Never deleted: rows a late call could still need for its flags (7 days late + 1 day long + two
// retry reaches, SPEC §1.2, plus an hour for clocks), and each (session, client)'s latest row,
// since pairs have no time window (SPEC §2.4).
import { AGREEMENTS_WATERMARK, AS_OF, RAW_KEPT_FROM, stateValueSql, toolVersionsWatermarkSql } from "../db/rollup-state.ts";
import { DAY_MS, HOUR_MS, hourRowsHorizonMs, hourStartMs } from "../time.ts";
import { MAX_FLAG_REACH_MS } from "../retry-rule.ts";
import { MAX_PAST_MS } from "../../shared/timestamp.ts";
import { CALL_STATE_CALL, FOLD_DAY, tupleField, tupleOf } from "../db/tuples.ts";
import { COUNTER_NAMES } from "../metrics/counters.ts";
import { schemaChangeSpansSql } from "../metrics/schema-change.ts";
import { namedStatement } from "../db/named-sql.ts";

const stateField = (name: (typeof CALL_STATE_CALL)[number]) => tupleField(CALL_STATE_CALL, name, "j.value");
/** A row's calls, latest first: by start, then receive order. */
const LATEST_FIRST = `${stateField("started_at_ms")} DESC, ${stateField("call_seq")} DESC`;

export const DEFAULT_RAW_RETENTION_DAYS = 30;
/** SPEC §2.6: late payloads up to 7 days old are accepted, so raw rows stay at least 8 days. */
export const MIN_RAW_RETENTION_DAYS = 8;

export interface RetentionOptions {
  retentionDays?: number;
  /** D1 statements one invocation may run. Default 45 (under the Free plan's 50). */
  maxQueries?: number;
  chunkRows?: number;
  /** A row holds an hour of a session's calls, so rows alone do not bound the work. */
  chunkCalls?: number;
  /** Days are taken whole, so a step may exceed this by the rest of its last project-day. */
  foldRows?: number;
  foldDays?: number;
  /**
   * A backlog is folded over several days rather than spend the free plan's 5,000,000 rows read a
   * day.
   */
  foldRowsPerRun?: number;
}

export interface RetentionReport {
  cutoffMs: number;
  deletedCallRows: number;
  trimmedCallRows: number;
  deletedStartups: number;
  deletedAgreements: number;
  hourHorizonMs: number;
  foldedHourRows: number;
  /** True when nothing was deleted because the rollup's as_of is older than MAX_ROLLUP_LAG_MS. */
  skippedBecauseRollupBehind: boolean;
  queries: number;
  caughtUp: boolean;
}

export function parseRetentionDays(raw: string | undefined): number {
  const n = raw === undefined || raw.trim() === "" ? NaN : Number(raw);
  if (!Number.isFinite(n)) return DEFAULT_RAW_RETENTION_DAYS;
  return Math.max(MIN_RAW_RETENTION_DAYS, Math.floor(n));
}

/**
 * 7 days late (SPEC §1.2) plus two retry reaches of the longest duration (the predecessor's
 * predecessor, retry-rule.ts).
 */
export const NEEDED_BY_LATE_CALLS_MS = MAX_PAST_MS + MAX_FLAG_REACH_MS;

export function retentionCutoffMs(scheduledTimeMs: number, retentionDays: number): number {
  const days = Math.max(MIN_RAW_RETENTION_DAYS, retentionDays);
  return hourStartMs(scheduledTimeMs - Math.max(days * DAY_MS, NEEDED_BY_LATE_CALLS_MS) - HOUR_MS);
}

/**
 * The margins assume waiting calls arrived recently; if the rollup stalls, a late call could find
 * its neighbours gone. 12 hours keeps 11 hours of margin.
 */
export const MAX_ROLLUP_LAG_MS = 12 * HOUR_MS;

export const RETENTION_SQL = {
  // Written before anything is deleted: a recompute reads raw calls from here. Nothing is written
  // (so nothing deleted) while the rollup lags.
  keptFrom: `INSERT INTO rollup_state (name, value)
    SELECT '${RAW_KEPT_FROM}', :cutoff_ms WHERE ${stateValueSql(AS_OF)} >= :min_as_of_ms
    ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value)`,

  // Rows whose hour ends by the cutoff, except each (session, client)'s latest such row.
  deleteCalls: `DELETE FROM call_state WHERE (project_id, session_id, client_name, hour_start_ms) IN (
    SELECT project_id, session_id, client_name, hour_start_ms FROM (
      SELECT *, SUM(call_count) OVER (ROWS UNBOUNDED PRECEDING) - call_count AS calls_before FROM (
        SELECT x.project_id, x.session_id, x.client_name, x.hour_start_ms, x.call_count FROM call_state x
        WHERE x.hour_start_ms + ${HOUR_MS} <= :cutoff_ms
          AND EXISTS (SELECT 1 FROM call_state y
            WHERE y.project_id = x.project_id AND y.session_id = x.session_id AND y.client_name = x.client_name
              AND y.hour_start_ms > x.hour_start_ms AND y.hour_start_ms + ${HOUR_MS} <= :cutoff_ms)
        LIMIT :max_rows))
    WHERE calls_before < :max_calls)`,

  // The pairs need only the latest call, at position 0 the latest of its tool (migration 0032).
  trimKeptCalls: `UPDATE call_state SET call_count = 1, min_started_at_ms = max_started_at_ms, latest_per_tool_json = '[0]',
      calls_json = (SELECT json_array(json(j.value)) FROM json_each(call_state.calls_json) AS j
        ORDER BY ${LATEST_FIRST} LIMIT 1),
      max_duration_ms = (SELECT ${stateField("duration_ms")} FROM json_each(call_state.calls_json) AS j
        ORDER BY ${LATEST_FIRST} LIMIT 1)
    WHERE (project_id, session_id, client_name, hour_start_ms) IN (
      SELECT project_id, session_id, client_name, hour_start_ms FROM (
        SELECT *, SUM(call_count) OVER (ROWS UNBOUNDED PRECEDING) - call_count AS calls_before FROM (
          SELECT x.project_id, x.session_id, x.client_name, x.hour_start_ms, x.call_count FROM call_state x
          WHERE x.hour_start_ms + ${HOUR_MS} <= :cutoff_ms AND x.call_count > 1
            AND NOT EXISTS (SELECT 1 FROM call_state y
              WHERE y.project_id = x.project_id AND y.session_id = x.session_id AND y.client_name = x.client_name
                AND y.hour_start_ms > x.hour_start_ms AND y.hour_start_ms + ${HOUR_MS} <= :cutoff_ms)
          LIMIT :max_rows))
      WHERE calls_before < :max_calls)`,

  // Folded in by increments and never re-read, so only the watermark matters.
  deleteStartups: `DELETE FROM raw_startups WHERE startup_seq IN (
    SELECT startup_seq FROM raw_startups
    WHERE startup_seq <= ${toolVersionsWatermarkSql()}
      AND startup_seq < COALESCE((SELECT startup_seq FROM raw_startups WHERE received_at_ms >= :cutoff_ms ORDER BY startup_seq LIMIT 1), 9e18)
    ORDER BY startup_seq LIMIT :max_rows)`,

  deleteAgreements: `DELETE FROM raw_agreements WHERE agreement_seq IN (
    SELECT agreement_seq FROM raw_agreements
    WHERE agreement_seq <= ${stateValueSql(AGREEMENTS_WATERMARK)}
      AND agreement_seq < COALESCE((SELECT agreement_seq FROM raw_agreements WHERE received_at_ms >= :cutoff_ms ORDER BY agreement_seq LIMIT 1), 9e18)
    ORDER BY agreement_seq LIMIT :max_rows)`,
} as const;

/**
 * SPEC §7: a day row holds the sum of its hour rows (migration 0013 triggers), so folding is
 * deleting hour rows once the day row is checked to equal their sum.
 * Kept: hours at or after the 90-day horizon, hours whose day row differs, and the windows around
 * each tool's latest schema change (metrics/schema-change.ts). The rollup never rewrites hours that
 * old, and a later insert would reach the day row by trigger anyway.
 */
export const FOLD_SQL = {
  // A loose index scan, so no hour after the horizon is read (history-fold.test.ts checks the
  // plan).
  nextDays: `WITH RECURSIVE projects_from (id) AS (
      SELECT :cursor_project_id
      UNION ALL
      SELECT (SELECT MIN(project_id) FROM tool_hour_metrics WHERE project_id > projects_from.id) FROM projects_from WHERE id IS NOT NULL),
    old_rows AS (
      SELECT h.project_id, h.hour_start_ms FROM projects_from AS p JOIN tool_hour_metrics AS h
        ON h.project_id = p.id AND h.hour_start_ms >= (CASE WHEN p.id = :cursor_project_id THEN :cursor_hour_ms ELSE 0 END) AND h.hour_start_ms < :horizon_ms
      LIMIT :max_rows)
    SELECT project_id, hour_start_ms - hour_start_ms % ${DAY_MS} AS day_start_ms, COUNT(*) AS hour_rows
    FROM old_rows GROUP BY project_id, day_start_ms ORDER BY project_id, day_start_ms`,

  // Counters only, not each histogram bucket: the triggers write both in one statement, and
  // json_each would read several times the rows.
  foldDays: `WITH units AS MATERIALIZED (
      SELECT ${tupleField(FOLD_DAY, "project_id", "u.value")} AS project_id, ${tupleField(FOLD_DAY, "day_start_ms", "u.value")} AS day_start_ms
      FROM json_each(:units) AS u),
    unit_hours AS MATERIALIZED (
      SELECT h.*, u.day_start_ms FROM units AS u JOIN tool_hour_metrics AS h
        ON h.project_id = u.project_id AND h.hour_start_ms >= u.day_start_ms AND h.hour_start_ms < u.day_start_ms + ${DAY_MS}),
    sums AS (
      SELECT project_id, day_start_ms, tool_name, client_name, ${COUNTER_NAMES.map((c) => `SUM(${c}) AS ${c}`).join(", ")}
      FROM unit_hours GROUP BY project_id, day_start_ms, tool_name, client_name),
    kept_spans AS MATERIALIZED (${schemaChangeSpansSql("SELECT project_id FROM units")}),
    folded AS (
      SELECT s.project_id, s.day_start_ms, s.tool_name, s.client_name FROM sums AS s
        JOIN tool_day_metrics AS d USING (project_id, day_start_ms, tool_name, client_name)
        LEFT JOIN kept_spans AS k ON k.project_id = s.project_id AND k.tool_name = s.tool_name
          AND k.first_ms < s.day_start_ms + ${DAY_MS} AND k.end_ms > s.day_start_ms
      WHERE ${COUNTER_NAMES.map((c) => `d.${c} = s.${c}`).join(" AND ")} AND k.tool_name IS NULL)
    DELETE FROM tool_hour_metrics WHERE (project_id, hour_start_ms, tool_name, client_name) IN (
      SELECT project_id, hour_start_ms, tool_name, client_name FROM unit_hours
      WHERE (project_id, day_start_ms, tool_name, client_name) IN (SELECT * FROM folded))`,
} as const;

/** Fold steps from the start of the keys; answers whether the fold got past the last old hour row. */
async function foldOldHours(
  db: D1Database,
  report: RetentionReport,
  budget: { maxQueries: number; rows: number; days: number; rowsPerRun: number },
): Promise<boolean> {
  let cursor: [string, number] = ["", 0];
  let readRows = 0;
  while (report.queries + 2 <= budget.maxQueries && readRows < budget.rowsPerRun) {
    const { results } = await namedStatement(db, FOLD_SQL.nextDays, {
      cursor_project_id: cursor[0], cursor_hour_ms: cursor[1], horizon_ms: report.hourHorizonMs, max_rows: budget.rows,
    }).all<{ project_id: string; day_start_ms: number; hour_rows: number }>();
    report.queries += 1;
    const units = results.slice(0, budget.days);
    const last = units.at(-1);
    if (!last) return true;
    const deleted = await namedStatement(db, FOLD_SQL.foldDays, { units: JSON.stringify(units.map((u) => tupleOf(FOLD_DAY, u))) }).run();
    report.queries += 1;
    report.foldedHourRows += deleted.meta.changes ?? 0;
    cursor = [last.project_id, last.day_start_ms + DAY_MS];
    const read = results.reduce((n, u) => n + u.hour_rows, 0);
    readRows += read;
    if (read < budget.rows && units.length === results.length) return true;
  }
  return false;
}

export async function runRetention(db: D1Database, scheduledTimeMs: number, options: RetentionOptions = {}): Promise<RetentionReport> {
  const retentionDays = options.retentionDays ?? DEFAULT_RAW_RETENTION_DAYS;
  const maxQueries = options.maxQueries ?? 45;
  const chunkRows = options.chunkRows ?? 20_000;
  const chunkCalls = options.chunkCalls ?? 30_000;
  const cutoffMs = retentionCutoffMs(scheduledTimeMs, retentionDays);
  const report: RetentionReport = {
    cutoffMs,
    deletedCallRows: 0,
    trimmedCallRows: 0,
    deletedStartups: 0,
    deletedAgreements: 0,
    hourHorizonMs: hourRowsHorizonMs(scheduledTimeMs),
    foldedHourRows: 0,
    skippedBecauseRollupBehind: false,
    queries: 0,
    caughtUp: false,
  };

  const kept = await namedStatement(db, RETENTION_SQL.keptFrom, { cutoff_ms: cutoffMs, min_as_of_ms: scheduledTimeMs - MAX_ROLLUP_LAG_MS }).run();
  report.queries += 1;
  if ((kept.meta.changes ?? 0) === 0) {
    report.skippedBecauseRollupBehind = true;
    return report;
  }

  // A statement may stop at :max_calls with rows left, so a stream is done only when a statement
  // changes nothing.
  const streams = [
    { sql: RETENTION_SQL.deleteCalls, key: "deletedCallRows", boundedByCalls: true },
    { sql: RETENTION_SQL.trimKeptCalls, key: "trimmedCallRows", boundedByCalls: true },
    { sql: RETENTION_SQL.deleteStartups, key: "deletedStartups", boundedByCalls: false },
    { sql: RETENTION_SQL.deleteAgreements, key: "deletedAgreements", boundedByCalls: false },
  ] as const;
  let unfinished = false;
  for (const stream of streams) {
    for (;;) {
      if (report.queries >= maxQueries) {
        unfinished = true;
        break;
      }
      const bounds = { cutoff_ms: cutoffMs, max_rows: chunkRows };
      const result = await namedStatement(db, stream.sql, stream.boundedByCalls ? { ...bounds, max_calls: chunkCalls } : bounds).run();
      report.queries += 1;
      const deleted = result.meta.changes ?? 0;
      report[stream.key] += deleted;
      if (stream.boundedByCalls ? deleted === 0 : deleted < chunkRows) break;
    }
  }
  const folded = await foldOldHours(db, report, {
    maxQueries,
    rows: options.foldRows ?? 20_000,
    days: options.foldDays ?? 1_000,
    rowsPerRun: options.foldRowsPerRun ?? 100_000,
  });
  report.caughtUp = !unfinished && folded;
  return report;
}
