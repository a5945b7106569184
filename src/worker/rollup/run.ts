// One rollup invocation (`*/5 * * * *`, SPEC §2.6). Each chunk is its own transaction behind its
// watermark, so nothing is lost or counted twice when a run stops or dies half-way.
import { AGREEMENT_CHUNK_STATEMENTS, rollupAgreementChunk } from "./agreements.ts";
import { CALL_CHUNK_STATEMENTS, rollupCallChunk } from "./calls.ts";
import { DECIDING_SCOPE, SCOPE_COLUMNS, foldableSql, notHeldSql, parseScope, type RunScope } from "./scope.ts";
import { DAY_FOLD_ROWS, DAY_FOLD_SQL, DAY_FOLD_STATEMENTS, runDayFoldStep } from "./day-fold.ts";
import { RECOMPUTE_STEP_STATEMENTS, runRecomputeStep } from "./recompute.ts";
import {
  AGREEMENTS_WATERMARK, AS_OF, INGEST_EPOCH, RELEASE_LEASE_SQL, TAKE_LEASE_SQL, rollupLeaseHeldSql, stateValueSql, startupsWatermarkSql,
} from "../db/rollup-state.ts";
import { IDEMPOTENCY_WINDOW_MS, dayStartMs, hourStartMs } from "../time.ts";
import { STARTUP_CHUNK_STATEMENTS, rollupStartupChunk } from "./startups.ts";
import { TOOL_VERSION_FOLD_STATEMENTS, runToolVersionFoldStep, toolVersionsPendingSql } from "./tool-versions.ts";
import { log } from "../log.ts";
import { namedStatement } from "../db/named-sql.ts";

export interface RollupOptions {
  /** Under the Workers Free plan's 50 queries per invocation (1,000 on Paid). */
  maxQueries?: number;
  /**
   * A chunk is 7 statements: a free-plan run fits four chunks even with startups and verdicts
   * pending.
   */
  chunkCalls?: number;
  /**
   * Estimated from `call_count` before any JSON is read; D1 counts several rows read per call of
   * work, so this keeps a chunk under CHUNK_ROWS_READ_BOUND.
   */
  chunkTouchedCalls?: number;
  /**
   * Also bounds the requests the chunk's first statement looks at, each of which costs it rows
   * whatever its size.
   */
  chunkSpans?: number;
  /** So that a day-long call nearby does not make the chunk load the whole day. */
  nearCalls?: number;
  /** New startups per chunk; each lists up to 500 tools (SPEC §1.2). Default 200. */
  chunkStartups?: number;
  chunkAgreements?: number;
  /** About as long as a calls chunk. */
  recomputeCalls?: number;
  /** Each hour row written moves its day row too. */
  recomputeRows?: number;
  recomputeSequences?: number;
  dayFoldRows?: number;
  /** So requests queued on the database meanwhile get through. */
  pauseMs?: number;
  /**
   * Bounds how long a queued request waits (a quiet project may wait ~1 s), with room for a
   * transaction that overruns its prediction.
   */
  holdMs?: number;
  /** How long the run's lease on the database lasts unless renewed (ms). Default 60,000. */
  leaseMs?: number;
  wallClock?: () => number;
  /** Real time, not the cron's scheduled time: leases of different runs are compared. */
  clock?: () => number;
}

export const DEFAULT_ROLLUP_OPTIONS: Required<RollupOptions> = {
  maxQueries: 48,
  chunkCalls: 12_000,
  chunkTouchedCalls: 12_000,
  chunkSpans: 2_000,
  nearCalls: 5_000,
  chunkStartups: 200,
  chunkAgreements: 10_000,
  recomputeCalls: 20_000,
  recomputeRows: 10_000,
  recomputeSequences: 2_000,
  dayFoldRows: DAY_FOLD_ROWS,
  pauseMs: 50,
  holdMs: 800,
  leaseMs: 60_000,
  clock: () => Date.now(),
  wallClock: () => Date.now(),
};

/**
 * Sum of D1's meta.rows_read under the default bounds; the rollup tests check every generated shape
 * stays under it, a run logs any chunk over it.
 */
export const CHUNK_ROWS_READ_BOUND = 600_000;

export interface RollupRunReport {
  queries: number;
  newCalls: number;
  newStartups: number;
  callChunks: number;
  maxChunkTouched: number;
  chunkRowsRead: number[];
  maxChunkRowsRead: number;
  /** The longest transaction (chunk or step) of the run, in ms of wall time: how long it held the database. */
  longestTransactionMs: number;
  pauses: number;
  /** True when another rollup job of the database held the lease: this run did nothing. */
  leaseHeld: boolean;
  dayFoldSteps: number;
  recomputeSteps: number;
  recomputesDone: number;
  caughtUp: boolean;
}


/** Two rows written each, with the project index. */
export const EMPTIED_BATCHES_PER_RUN = 5_000;

/** Kept until the Idempotency-Key window passes: their batch ids let ingest recognise a resend. */
const DELETE_EMPTIED_BATCHES_SQL = `DELETE FROM call_batches WHERE batch_seq IN (
  SELECT batch_seq FROM call_batches WHERE call_count = 0 AND last_received_at_ms < :scheduled_time_ms - ${IDEMPOTENCY_WINDOW_MS}
  ORDER BY batch_seq LIMIT ${EMPTIED_BATCHES_PER_RUN})`;

/**
 * Statements a run reserves whatever is pending: the new day marks, closing the open rows (which
 * takes the lease), the probe, the cleanup, as_of (which releases it).
 */
export const ROLLUP_FIXED_STATEMENTS = 5;

/**
 * Read with the lease, in the transaction that decides which projects the run leaves alone
 * (scope.ts).
 */
const PENDING = {
  calls: `EXISTS (SELECT 1 FROM call_batches WHERE call_count > 0 AND ${foldableSql(DECIDING_SCOPE)})`,
  recompute: `EXISTS ${DECIDING_SCOPE.recomputing}`,
  startups: `EXISTS (SELECT 1 FROM raw_startups WHERE startup_seq > ${startupsWatermarkSql()} AND ${notHeldSql(DECIDING_SCOPE)})`,
  agreements: `EXISTS (SELECT 1 FROM raw_agreements WHERE agreement_seq > ${stateValueSql(AGREEMENTS_WATERMARK)} AND ${notHeldSql(DECIDING_SCOPE)})`,
  days: `EXISTS (SELECT 1 FROM day_marks WHERE folded_to_ms < :today_ms AND ${notHeldSql(DECIDING_SCOPE)})`,
  versions: toolVersionsPendingSql(DECIDING_SCOPE),
} as const;

const PENDING_SQL = `SELECT
  ${Object.entries(PENDING).map(([name, sql]) => `${sql} AS ${name}`).join(",\n  ")}`;

/**
 * Run before the chunks so they take every request received before the run, and none is appended to
 * meanwhile (migration 0025). The same write takes the lease (migration 0031) when there is work,
 * so the lease costs no row of its own; a crashed job's lease expires.
 */
const CLOSE_AND_TAKE_LEASE_SQL = `INSERT INTO rollup_state (name, value, lease_holder, lease_until_ms)
  SELECT '${INGEST_EPOCH}', epoch + open, CASE WHEN take THEN :holder ELSE holder END, CASE WHEN take THEN :lease_until_ms ELSE until_ms END
  FROM (
    SELECT e.epoch, e.holder, e.until_ms, EXISTS (SELECT 1 FROM call_batches WHERE call_count > 0 AND epoch = e.epoch) AS open,
      (${Object.values(PENDING).join("\n        OR ")}) AND NOT ${rollupLeaseHeldSql(":now_ms")} AS take
    FROM (SELECT COALESCE(x.value, 0) AS epoch, x.lease_holder AS holder, x.lease_until_ms AS until_ms
      FROM (SELECT 1) LEFT JOIN rollup_state x ON x.name = '${INGEST_EPOCH}') AS e)
  WHERE open OR take
  ON CONFLICT (name) DO UPDATE SET value = excluded.value, lease_holder = excluded.lease_holder, lease_until_ms = excluded.lease_until_ms
  RETURNING lease_holder AS holder, ${SCOPE_COLUMNS}`;
/** No row back when another job took over an expired lease. */
const RENEW_LEASE_SQL = `UPDATE rollup_state SET lease_until_ms = :lease_until_ms
  WHERE name = '${INGEST_EPOCH}' AND lease_holder = :holder RETURNING 1 AS renewed`;
/** The first payload not folded in yet of one stream: everything received before it is in. */
const firstPendingReceivedSql = (table: string, seq: string, watermarkSql: string) =>
  `COALESCE((SELECT received_at_ms - 1 FROM ${table} WHERE ${seq} > ${watermarkSql} ORDER BY ${seq} LIMIT 1), :scheduled_time_ms)`;

// SPEC §2.6: as_of never moves backwards. The same write releases the lease unless another job took
// it over.
const AS_OF_SQL = `INSERT INTO rollup_state (name, value, lease_holder)
  SELECT '${AS_OF}', MAX(${stateValueSql(AS_OF)}, MIN(:scheduled_time_ms,
    COALESCE((SELECT received_at_ms - 1 FROM call_batches WHERE call_count > 0 ORDER BY batch_seq LIMIT 1), :scheduled_time_ms),
    ${firstPendingReceivedSql("raw_startups", "startup_seq", startupsWatermarkSql())},
    ${firstPendingReceivedSql("raw_agreements", "agreement_seq", stateValueSql(AGREEMENTS_WATERMARK))})), :holder
  WHERE true
  ON CONFLICT (name) DO UPDATE SET value = excluded.value, lease_holder = CASE
    WHEN excluded.lease_holder IS NOT NULL AND excluded.lease_holder IS (SELECT lease_holder FROM rollup_state WHERE name = '${INGEST_EPOCH}')
    THEN excluded.lease_holder ELSE rollup_state.lease_holder END`;

/** The run's own statements, by name (the SQL snapshots in sql/rollup/ read them). */
export const RUN_SQL = {
  closeOpenBatchesAndTakeLease: CLOSE_AND_TAKE_LEASE_SQL, pending: PENDING_SQL, renewLease: RENEW_LEASE_SQL,
  releaseLease: RELEASE_LEASE_SQL, deleteEmptiedBatches: DELETE_EMPTIED_BATCHES_SQL, asOf: AS_OF_SQL, takeLeaseForAnotherJob: TAKE_LEASE_SQL,
} as const;

export async function runRollup(db: D1Database, scheduledTimeMs: number, options: RollupOptions = {}): Promise<RollupRunReport> {
  const o = { ...DEFAULT_ROLLUP_OPTIONS, ...options };
  const report: RollupRunReport = {
    queries: 0, newCalls: 0, newStartups: 0, callChunks: 0, maxChunkTouched: 0, chunkRowsRead: [], maxChunkRowsRead: 0, longestTransactionMs: 0, pauses: 0, leaseHeld: false, dayFoldSteps: 0,
    recomputeSteps: 0, recomputesDone: 0, caughtUp: false,
  };
  if (o.maxQueries < ROLLUP_FIXED_STATEMENTS) throw new Error(`rollup: maxQueries must be at least ${ROLLUP_FIXED_STATEMENTS}`);

  // A cron run can start while the previous one still runs.
  const holder = crypto.randomUUID();
  let leaseFrom = o.clock();
  try {
    return await runFrom(db, scheduledTimeMs, o, report, holder, () => leaseFrom, (t) => (leaseFrom = t));
  } catch (err) {
    // Best effort: the lease expires anyway.
    await namedStatement(db, RELEASE_LEASE_SQL, { holder }).run().catch(() => undefined);
    throw err;
  }
}

async function runFrom(
  db: D1Database, scheduledTimeMs: number, o: Required<RollupOptions>, report: RollupRunReport, holder: string,
  leaseFrom: () => number, renewed: (t: number) => void,
): Promise<RollupRunReport> {
  const todayMs = dayStartMs(scheduledTimeMs);
  const hourMs = hourStartMs(scheduledTimeMs);
  // Safe while another run works: closing rows again only closes more, and day marks are added
  // once.
  const [, lease, probe] = await db.batch([
    namedStatement(db, DAY_FOLD_SQL.markNewProjects, { today_ms: todayMs }),
    namedStatement(db, CLOSE_AND_TAKE_LEASE_SQL, {
      today_ms: todayMs, hour_ms: hourMs, holder, now_ms: leaseFrom(), lease_until_ms: leaseFrom() + o.leaseMs,
    }),
    namedStatement(db, PENDING_SQL, { today_ms: todayMs, hour_ms: hourMs }),
  ]);
  report.queries += 3;
  const pendingRow = probe?.results?.[0] as
    | { calls: number; recompute: number; startups: number; agreements: number; days: number; versions: number }
    | undefined;
  const pending = {
    startups: !!pendingRow?.startups, agreements: !!pendingRow?.agreements, calls: !!pendingRow?.calls, recompute: !!pendingRow?.recompute,
    days: !!pendingRow?.days, versions: !!pendingRow?.versions,
  };
  const idle = !Object.values(pending).some(Boolean);
  if (idle) {
    // No lease taken: an idle run writes only as_of.
    await finish(db, scheduledTimeMs, null);
    report.queries += 2;
    report.caughtUp = true;
    return report;
  }
  const taken = lease?.results?.[0] as { holder?: string; held_projects?: string; recomputing_projects?: string } | undefined;
  if (taken?.holder !== holder) {
    report.leaseHeld = true;
    return report;
  }
  return runHeld(db, scheduledTimeMs, o, report, pending, parseScope(taken), holder, leaseFrom, renewed);
}

async function finish(db: D1Database, scheduledTimeMs: number, holder: string | null): Promise<void> {
  await db.batch([
    namedStatement(db, DELETE_EMPTIED_BATCHES_SQL, { scheduled_time_ms: scheduledTimeMs }),
    namedStatement(db, AS_OF_SQL, { scheduled_time_ms: scheduledTimeMs, holder }),
  ]);
}

type Pending = Record<"startups" | "agreements" | "calls" | "recompute" | "days" | "versions", boolean>;

async function runHeld(
  db: D1Database, scheduledTimeMs: number, o: Required<RollupOptions>, report: RollupRunReport, pending: Pending, scope: RunScope, holder: string,
  leaseFrom: () => number, renewed: (t: number) => void,
): Promise<RollupRunReport> {
  const todayMs = dayStartMs(scheduledTimeMs);
  const hourMs = hourStartMs(scheduledTimeMs);
  let budget = o.maxQueries - ROLLUP_FIXED_STATEMENTS;
  let lost = false;
  let heldFrom = o.wallClock();
  let lastTransactionMs = 0;
  /**
   * D1 runs one statement at a time per database, so pause to let queued requests through; renew
   * the lease at half-time. False when the lease was lost.
   */
  const between = async (statements: number): Promise<boolean> => {
    if (lost) return false;
    if (o.pauseMs > 0 && o.wallClock() - heldFrom + lastTransactionMs > o.holdMs) {
      await new Promise((r) => setTimeout(r, o.pauseMs));
      report.pauses += 1;
      heldFrom = o.wallClock();
    }
    const now = o.clock();
    if (now - leaseFrom() >= o.leaseMs / 2) {
      if (budget < statements + 1) return false;
      const r = await namedStatement(db, RENEW_LEASE_SQL, { holder, lease_until_ms: now + o.leaseMs }).first<{ renewed: number }>();
      budget -= 1;
      report.queries += 1;
      if (!r) {
        lost = true;
        log.error("rollup_lease_lost");
        return false;
      }
      renewed(now);
    }
    return true;
  };

  const timed = async <T>(transaction: Promise<T>): Promise<T> => {
    const started = o.wallClock();
    const r = await transaction;
    lastTransactionMs = o.wallClock() - started;
    report.longestTransactionMs = Math.max(report.longestTransactionMs, lastTransactionMs);
    return r;
  };

  // Round-robin over the streams so a backlog in one never starves the others.
  for (;;) {
    let ran = false;
    if (pending.startups && budget >= STARTUP_CHUNK_STATEMENTS && (await between(STARTUP_CHUNK_STATEMENTS))) {
      const r = await timed(rollupStartupChunk(db, o.chunkStartups, undefined, hourMs, scope));
      budget -= STARTUP_CHUNK_STATEMENTS;
      report.queries += STARTUP_CHUNK_STATEMENTS;
      report.newStartups += r.new_startups;
      pending.startups = !!r.more;
      pending.versions ||= !!r.versions;
      ran = true;
    }
    if (pending.agreements && budget >= AGREEMENT_CHUNK_STATEMENTS && (await between(AGREEMENT_CHUNK_STATEMENTS))) {
      const r = await timed(rollupAgreementChunk(db, o.chunkAgreements, scope));
      budget -= AGREEMENT_CHUNK_STATEMENTS;
      report.queries += AGREEMENT_CHUNK_STATEMENTS;
      pending.agreements = !!r.more;
      ran = true;
    }
    if (pending.calls && budget >= CALL_CHUNK_STATEMENTS && (await between(CALL_CHUNK_STATEMENTS))) {
      const r = await timed(rollupCallChunk(db, o, scope));
      budget -= CALL_CHUNK_STATEMENTS;
      report.queries += CALL_CHUNK_STATEMENTS;
      report.newCalls += r.calls;
      report.callChunks += 1;
      report.maxChunkTouched = Math.max(report.maxChunkTouched, r.touched);
      report.chunkRowsRead.push(r.rowsRead);
      report.maxChunkRowsRead = Math.max(report.maxChunkRowsRead, r.rowsRead);
      if (r.rowsRead > CHUNK_ROWS_READ_BOUND) {
        log.error("rollup_chunk_over_bound", { rows_read: r.rowsRead, calls: r.calls, requests: r.requests, touched: r.touched });
      }
      pending.calls = !!r.more;
      ran = true;
    }
    if (pending.versions && budget >= TOOL_VERSION_FOLD_STATEMENTS && (await between(TOOL_VERSION_FOLD_STATEMENTS))) {
      pending.versions = (await timed(runToolVersionFoldStep(db, hourMs, scope))).more;
      budget -= TOOL_VERSION_FOLD_STATEMENTS;
      report.queries += TOOL_VERSION_FOLD_STATEMENTS;
      ran = true;
    }
    if (pending.days && budget >= DAY_FOLD_STATEMENTS && (await between(DAY_FOLD_STATEMENTS))) {
      const r = await timed(runDayFoldStep(db, todayMs, o.dayFoldRows, scope));
      budget -= DAY_FOLD_STATEMENTS;
      report.queries += DAY_FOLD_STATEMENTS;
      report.dayFoldSteps += 1;
      pending.days = r.more;
      ran = true;
    }
    if (pending.recompute && budget >= RECOMPUTE_STEP_STATEMENTS && (await between(RECOMPUTE_STEP_STATEMENTS))) {
      const r = await timed(runRecomputeStep(db, scheduledTimeMs, o, scope));
      const statements = r?.statements ?? 1;
      budget -= statements;
      report.queries += statements;
      if (r === null) pending.recompute = false;
      else report.recomputeSteps += 1;
      if (r?.done) {
        // The project's waiting requests can be folded in now: this run's own step finished it.
        scope = { ...scope, recomputing: scope.recomputing.filter((p) => p !== r.project_id) };
        report.recomputesDone += 1;
        pending.calls = true;
      }
      ran = true;
    }
    if (!ran) break;
  }

  await finish(db, scheduledTimeMs, holder);
  report.queries += 2;
  report.caughtUp = !pending.calls && !pending.startups && !pending.agreements && !pending.recompute && !pending.days && !pending.versions;
  return report;
}
