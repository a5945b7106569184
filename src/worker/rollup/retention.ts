// The daily raw-row retention (`30 3 * * *`, SPEC §2.6): raw rows older than RAW_RETENTION_DAYS
// (default 30, never under 8) are deleted in bounded chunks; counters are kept forever. The raw
// calls are the `call_state` rows, one per (project, session, client, hour), so a day of calls
// costs one deleted row per (session, client, hour) it had, not one per call.
//
// What it never deletes (docs/metrics.md, "Retention"):
// - a row that a future call could need for its retry flags. Ingest accepts calls up to 7 days old
//   and a call lasts at most 1 day (SPEC §1.2); a newly arriving call can change the flags of its
//   predecessor, whose first-call success depends on the predecessor's own predecessor, so the
//   rollup may need calls up to 9 days + 60 s before now (NEEDED_BY_LATE_CALLS_MS); the cutoff is
//   at least that and 1 hour back (an hour of margin for clocks), and a row goes only when its
//   whole hour is before it;
// - the latest row of each (session, client) before the cutoff: a new call's predecessor in its
//   (session, client) sequence can be any distance back (tool pairs have no time window, SPEC
//   §2.4), so that row stays to carry the pair (one row per session and client at most).
// Calls still waiting in `call_batches` are not in call_state yet, so nothing here can touch them.
//
// The same job folds old hour rows into their day rows (SPEC §7, "History that fits"): see
// FOLD_SQL below.
import { AGREEMENTS_WATERMARK, AS_OF, RAW_KEPT_FROM, stateValueSql, toolVersionsWatermarkSql } from "../db/rollup-state.ts";
import { DAY_MS, HOUR_MS, hourRowsHorizonMs, hourStartMs } from "../time.ts";
import { MAX_FLAG_REACH_MS } from "../retry-rule.ts";
import { MAX_PAST_MS } from "../../shared/timestamp.ts";
import { CALL_STATE_CALL, FOLD_DAY, tupleField, tupleOf } from "../db/tuples.ts";
import { COUNTER_NAMES } from "../metrics/counters.ts";
import { schemaChangeSpansSql } from "../metrics/schema-change.ts";
import { namedStatement } from "../db/named-sql.ts";

/** SQL reading a field of a `call_state` call (db/tuples.ts). */
const stateField = (name: (typeof CALL_STATE_CALL)[number]) => tupleField(CALL_STATE_CALL, name, "j.value");
/** A row's calls, latest first: by start, then receive order. */
const LATEST_FIRST = `${stateField("started_at_ms")} DESC, ${stateField("call_seq")} DESC`;

export const DEFAULT_RAW_RETENTION_DAYS = 30;
/** SPEC §2.6: late payloads up to 7 days old are accepted, so raw rows stay at least 8 days. */
export const MIN_RAW_RETENTION_DAYS = 8;

export interface RetentionOptions {
  /** RAW_RETENTION_DAYS; clamped to at least 8, default 30. */
  retentionDays?: number;
  /** D1 statements one invocation may run. Default 45 (under the Free plan's 50). */
  maxQueries?: number;
  /** Rows per DELETE statement. Default 20,000. */
  chunkRows?: number;
  /**
   * Calls per call_state statement (the calls of the rows it deletes or cuts, from `call_count`):
   * a row holds an hour of a session's calls, so rows alone do not bound the work. The first row
   * is always taken. Default 30,000.
   */
  chunkCalls?: number;
  /**
   * Hour rows one fold step takes (its days are taken whole, so a step folds at most this plus
   * the rest of its last project-day). Default 20,000 (0.1–0.2 s and ~185,000 rows read in Miniflare).
   */
  foldRows?: number;
  /** Project-days one fold step takes at most. Default 1,000. */
  foldDays?: number;
  /**
   * Old hour rows one run reads at most: a backlog (the first runs after an upgrade) is folded over
   * several days rather than spending the free plan's 5,000,000 rows read a day. Default 100,000.
   */
  foldRowsPerRun?: number;
}

export interface RetentionReport {
  cutoffMs: number;
  /** call_state rows deleted (one per session, client and hour). */
  deletedCallRows: number;
  /** call_state rows cut down to their latest call (each session and client's row kept for its pairs). */
  trimmedCallRows: number;
  deletedStartups: number;
  deletedAgreements: number;
  /** Hour rows of days before this are folded into their day rows (hourRowsHorizonMs). */
  hourHorizonMs: number;
  /** Hour rows deleted because their day row holds them (SPEC §7). */
  foldedHourRows: number;
  /** True when nothing was deleted because the rollup's as_of is older than MAX_ROLLUP_LAG_MS. */
  skippedBecauseRollupBehind: boolean;
  queries: number;
  caughtUp: boolean;
}

/** RAW_RETENTION_DAYS from the environment: a whole number of days, at least 8; default 30. */
export function parseRetentionDays(raw: string | undefined): number {
  const n = raw === undefined || raw.trim() === "" ? NaN : Number(raw);
  if (!Number.isFinite(n)) return DEFAULT_RAW_RETENTION_DAYS;
  return Math.max(MIN_RAW_RETENTION_DAYS, Math.floor(n));
}

/**
 * How far back a call that can still arrive may need raw calls: it may be 7 days old (SPEC §1.2),
 * and the rollup loads up to two retry reaches of the longest duration before it (the
 * predecessor's predecessor, retry-rule.ts and src/worker/rollup/calls.ts).
 */
export const NEEDED_BY_LATE_CALLS_MS = MAX_PAST_MS + MAX_FLAG_REACH_MS;

/**
 * Raw calls starting before this may be deleted: `days` back (never under 8), and never closer than
 * what a late call may still need, one more hour, floored to the hour.
 */
export function retentionCutoffMs(scheduledTimeMs: number, retentionDays: number): number {
  const days = Math.max(MIN_RAW_RETENTION_DAYS, retentionDays);
  return hourStartMs(scheduledTimeMs - Math.max(days * DAY_MS, NEEDED_BY_LATE_CALLS_MS) - HOUR_MS);
}

/**
 * Retention runs only while the rollup is at most this far behind. The margins above assume
 * that every call still waiting for the rollup arrived recently (so started at most 7 days
 * before now); if the rollup stalls, a call that waited long enough could start before the cutoff
 * and find its neighbours gone. 12 hours keeps 11 hours of margin.
 */
export const MAX_ROLLUP_LAG_MS = 12 * HOUR_MS;

export const RETENTION_SQL = {
  // Written before anything is deleted: raw calls are whole from it on, which is where a recompute (recompute.ts) reads them.
  // Only while the rollup keeps up (as_of no earlier than :min_as_of_ms, MAX_ROLLUP_LAG_MS back); otherwise
  // nothing is written and the run deletes nothing.
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

  // The row kept for the pairs needs only its latest call: the others go, so what is kept for
  // ever is one call per (session, client), not an hour of them. That call, at position 0, is the
  // latest of its tool (migration 0032).
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

  // Startups and verdicts are folded in by increments (never re-read), so only the watermark
  // matters. Receive order follows *_seq: delete the run of seqs before the first young row.
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
 * The hour-row fold (SPEC §7): day rows already hold everything the answers over a day need — the
 * same counters and histogram as the sum of the day's hour rows (kept equal by the triggers of
 * migration 0013); pairs are per day (pair_days) and sessions per session. So folding the hour rows
 * of a day before hourRowsHorizonMs() into its day row is deleting them, once the day row is
 * checked to hold exactly their sum.
 *
 * What it never deletes:
 * - an hour row of a day at or after the horizon (90 days back from the job's scheduledTime);
 * - the hour rows of a (project, day, tool, client) whose day row is missing or differs from
 *   their sum in any counter (left as they are, read at hour grain as before);
 * - the hours a schema regression compares: the days overlapping the windows around each
 *   registered tool's latest schema change (metrics/schema-change.ts), so that answer stays equal
 *   however old the change (a few weeks of one tool's hours, not growing with time).
 *
 * Nothing can write those hours again: the rollup changes hours at most NEEDED_BY_LATE_CALLS_MS
 * back, and the fold runs only while the rollup keeps up (MAX_ROLLUP_LAG_MS), like the raw deletes.
 * Even so, a change to a folded hour would insert a fresh hour row and add it to the day row by
 * trigger: the day row stays right.
 *
 * Bounded work: a step reads up to `foldRows` old hour rows from a cursor (project, hour) carried
 * by the run, in key order, and folds the project-days they belong to, whole. Each run starts from
 * the first key again, so what stays before the horizon (the schema-change hours, a day row that
 * differs) is read again each day: a few weeks of a few tools' hours at most.
 */
export const FOLD_SQL = {
  // The (project, day) units of the next :max_rows hour rows before the horizon :horizon_ms, from the cursor
  // (project :cursor_project_id, hour :cursor_hour_ms), in key order: the plan walks the projects by seeks on the key (a loose
  // index scan), then each one's hours before the horizon by its key, so no hour after the horizon
  // is read (test/worker/rollup/history-fold.test.ts checks the plan).
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

  // Deletes the hour rows of the units :units (a JSON list of FOLD_DAY tuples) whose day row
  // holds exactly their sum, outside the schema-change windows. The counters are compared, not
  // each histogram bucket: the triggers write both in one statement, so a day row whose counters
  // (calls and duration_ms_sum among them) hold its hours holds their histogram too, and
  // comparing the buckets with json_each would read several times the rows.
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

  // A call_state statement stops at :max_calls calls as well as :max_rows rows: it may change fewer rows than
  // :max_rows with more left, so that stream is done only when a statement changes nothing.
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
