// The cron entry of the rollup module: dispatches on the trigger (wrangler.toml [triggers]) and
// fans the work out as one job per database (SPEC §7: each with its own invocation and statement
// budget, queues/rollup-jobs.ts); `runDatabaseJob` is one database's job: the rollup run and then
// the alert step of its projects, or the raw-row retention.
// Time comes from `controller.scheduledTime`, never the wall clock, so runs are reproducible.
import { runAlertStep } from "../alerts/index.ts";
import type { Env } from "../env.ts";
import { databaseNamed } from "../databases.ts";
import { parseRetentionDays, runRetention } from "./retention.ts";
import { DEFAULT_ROLLUP_OPTIONS, runRollup } from "./run.ts";

export const ROLLUP_CRON = "*/5 * * * *";
export const RETENTION_CRON = "30 3 * * *";

export { runRollup, DEFAULT_ROLLUP_OPTIONS, type RollupOptions, type RollupRunReport } from "./run.ts";
export { runRetention, parseRetentionDays, retentionCutoffMs, type RetentionOptions, type RetentionReport } from "./retention.ts";
export { AS_OF, CALLS_WATERMARK } from "../db/rollup-state.ts";

/**
 * D1 statements a rollup run may spend: `ROLLUP_MAX_QUERIES` when it is a whole number from 2 to
 * 1,000 (D1's per-invocation limit on the Paid plan), else the free plan's default (48, under 50).
 */
export function parseMaxQueries(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= 2 && n <= 1000 ? n : DEFAULT_ROLLUP_OPTIONS.maxQueries;
}

/** One database's share of a cron run. */
export type DatabaseJob = { kind: "rollup" | "retention"; database: string; scheduledTimeMs: number };

/** The job kind of a cron trigger, or null for a cron this worker does not know (logged). */
export function jobKindOf(cron: string): DatabaseJob["kind"] | null {
  if (cron === RETENTION_CRON) return "retention";
  // A manual trigger without a cron (`wrangler dev --test-scheduled`, `/__scheduled`) runs the
  // rollup: it is idempotent, so an extra run is always safe.
  if (cron === ROLLUP_CRON || cron === "") return "rollup";
  console.error(JSON.stringify({ event: "unknown_cron", cron }));
  return null;
}

/**
 * One database's job, given its handle (resolved by the job's entry): the rollup run, then the
 * alert step of that database's projects in what is left of the invocation's budget (it never
 * throws), or the retention. Throws only what the rollup or the retention throws.
 */
export async function runDatabaseJob(env: Env, job: DatabaseJob): Promise<void> {
  const db = databaseNamed(env, job.database);
  if (!db) {
    console.error(JSON.stringify({ event: "rollup_job_unknown_database", database: job.database }));
    return;
  }
  const now = job.scheduledTimeMs;
  if (job.kind === "retention") {
    const r = await runRetention(db, now, { retentionDays: parseRetentionDays(env.RAW_RETENTION_DAYS) });
    console.log(JSON.stringify({ event: "retention", database: job.database, ...r }));
    return;
  }
  const r = await runRollup(db, now, { maxQueries: parseMaxQueries(env.ROLLUP_MAX_QUERIES) });
  console.log(JSON.stringify({ event: "rollup", database: job.database, ...r }));
  // After the rollup has committed; the alert step never throws (SPEC §5).
  await runAlertStep(env, db, now, r);
}
