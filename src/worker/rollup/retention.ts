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
import { AGREEMENTS_WATERMARK, AS_OF, RAW_KEPT_FROM, STARTUPS_WATERMARK, stateValueSql } from "../db/rollup-state.ts";
import { DAY_MS, HOUR_MS, hourStartMs } from "../time.ts";
import { MAX_FLAG_REACH_MS } from "../retry-rule.ts";
import { MAX_PAST_MS } from "../../shared/timestamp.ts";
import { CALL_STATE_CALL, tupleField } from "../db/tuples.ts";

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
   * is always taken. Default 30,000 (the rollup's own bound per calls chunk).
   */
  chunkCalls?: number;
}

export interface RetentionReport {
  cutoffMs: number;
  /** call_state rows deleted (one per session, client and hour). */
  deletedCallRows: number;
  /** call_state rows cut down to their latest call (each session and client's row kept for its pairs). */
  trimmedCallRows: number;
  deletedStartups: number;
  deletedAgreements: number;
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
  // Only while the rollup keeps up (as_of at most ?2 old, see MAX_ROLLUP_LAG_MS); otherwise
  // nothing is written and the run deletes nothing.
  keptFrom: `INSERT INTO rollup_state (name, value)
    SELECT '${RAW_KEPT_FROM}', ?1 WHERE ${stateValueSql(AS_OF)} >= ?2
    ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value)`,

  // Rows whose hour ends by the cutoff, except each (session, client)'s latest such row.
  deleteCalls: `DELETE FROM call_state WHERE (project_id, session_id, client_name, hour_start_ms) IN (
    SELECT project_id, session_id, client_name, hour_start_ms FROM (
      SELECT *, SUM(call_count) OVER (ROWS UNBOUNDED PRECEDING) - call_count AS calls_before FROM (
        SELECT x.project_id, x.session_id, x.client_name, x.hour_start_ms, x.call_count FROM call_state x
        WHERE x.hour_start_ms + ${HOUR_MS} <= ?1
          AND EXISTS (SELECT 1 FROM call_state y
            WHERE y.project_id = x.project_id AND y.session_id = x.session_id AND y.client_name = x.client_name
              AND y.hour_start_ms > x.hour_start_ms AND y.hour_start_ms + ${HOUR_MS} <= ?1)
        LIMIT ?2))
    WHERE calls_before < ?3)`,

  // The row kept for the pairs needs only its latest call: the others go, so what is kept for
  // ever is one call per (session, client), not an hour of them.
  trimKeptCalls: `UPDATE call_state SET call_count = 1, min_started_at_ms = max_started_at_ms,
      calls_json = (SELECT json_array(json(j.value)) FROM json_each(call_state.calls_json) AS j
        ORDER BY ${LATEST_FIRST} LIMIT 1),
      max_duration_ms = (SELECT ${stateField("duration_ms")} FROM json_each(call_state.calls_json) AS j
        ORDER BY ${LATEST_FIRST} LIMIT 1)
    WHERE (project_id, session_id, client_name, hour_start_ms) IN (
      SELECT project_id, session_id, client_name, hour_start_ms FROM (
        SELECT *, SUM(call_count) OVER (ROWS UNBOUNDED PRECEDING) - call_count AS calls_before FROM (
          SELECT x.project_id, x.session_id, x.client_name, x.hour_start_ms, x.call_count FROM call_state x
          WHERE x.hour_start_ms + ${HOUR_MS} <= ?1 AND x.call_count > 1
            AND NOT EXISTS (SELECT 1 FROM call_state y
              WHERE y.project_id = x.project_id AND y.session_id = x.session_id AND y.client_name = x.client_name
                AND y.hour_start_ms > x.hour_start_ms AND y.hour_start_ms + ${HOUR_MS} <= ?1)
          LIMIT ?2))
      WHERE calls_before < ?3)`,

  // Startups and verdicts are folded in by increments (never re-read), so only the watermark
  // matters. Receive order follows *_seq: delete the run of seqs before the first young row.
  deleteStartups: `DELETE FROM raw_startups WHERE startup_seq IN (
    SELECT startup_seq FROM raw_startups
    WHERE startup_seq <= ${stateValueSql(STARTUPS_WATERMARK)}
      AND startup_seq < COALESCE((SELECT startup_seq FROM raw_startups WHERE received_at_ms >= ?1 ORDER BY startup_seq LIMIT 1), 9e18)
    ORDER BY startup_seq LIMIT ?2)`,

  deleteAgreements: `DELETE FROM raw_agreements WHERE agreement_seq IN (
    SELECT agreement_seq FROM raw_agreements
    WHERE agreement_seq <= ${stateValueSql(AGREEMENTS_WATERMARK)}
      AND agreement_seq < COALESCE((SELECT agreement_seq FROM raw_agreements WHERE received_at_ms >= ?1 ORDER BY agreement_seq LIMIT 1), 9e18)
    ORDER BY agreement_seq LIMIT ?2)`,
} as const;

export async function runRetention(db: D1Database, scheduledTimeMs: number, options: RetentionOptions = {}): Promise<RetentionReport> {
  const retentionDays = options.retentionDays ?? DEFAULT_RAW_RETENTION_DAYS;
  const maxQueries = options.maxQueries ?? 45;
  const chunkRows = options.chunkRows ?? 20_000;
  const chunkCalls = options.chunkCalls ?? 30_000;
  const cutoffMs = retentionCutoffMs(scheduledTimeMs, retentionDays);
  const report: RetentionReport = { cutoffMs, deletedCallRows: 0, trimmedCallRows: 0, deletedStartups: 0, deletedAgreements: 0, skippedBecauseRollupBehind: false, queries: 0, caughtUp: false };

  const kept = await db.prepare(RETENTION_SQL.keptFrom).bind(cutoffMs, scheduledTimeMs - MAX_ROLLUP_LAG_MS).run();
  report.queries += 1;
  if ((kept.meta.changes ?? 0) === 0) {
    report.skippedBecauseRollupBehind = true;
    return report;
  }

  // A call_state statement stops at ?3 calls as well as ?2 rows: it may change fewer rows than
  // ?2 with more left, so that stream is done only when a statement changes nothing.
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
      const statement = db.prepare(stream.sql);
      const result = await (stream.boundedByCalls ? statement.bind(cutoffMs, chunkRows, chunkCalls) : statement.bind(cutoffMs, chunkRows)).run();
      report.queries += 1;
      const deleted = result.meta.changes ?? 0;
      report[stream.key] += deleted;
      if (stream.boundedByCalls ? deleted === 0 : deleted < chunkRows) break;
    }
  }
  report.caughtUp = !unfinished;
  return report;
}
