// The cron entry of the rollup module: dispatches on the trigger (wrangler.toml [triggers]).
// Time comes from `controller.scheduledTime`, never the wall clock, so runs are reproducible.
import type { Env } from "../env.ts";
import { parseRetentionDays, runRetention } from "./retention.ts";
import { DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS, runRollup, type RollupRunReport } from "./run.ts";

export const ROLLUP_CRON = "*/5 * * * *";
export const RETENTION_CRON = "30 3 * * *";

export { runRollup, DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS, type RollupOptions, type RollupRunReport } from "./run.ts";
export { runRetention, parseRetentionDays, retentionCutoffMs, type RetentionOptions, type RetentionReport } from "./retention.ts";
export { AS_OF, CALLS_WATERMARK } from "../db/rollup-state.ts";

/**
 * D1 statements a rollup run may spend: `ROLLUP_MAX_QUERIES` when it is a whole number from
 * ROLLUP_FIXED_STATEMENTS (4) to
 * 1,000 (D1's per-invocation limit on the Paid plan), else the free plan's default (48, under 50).
 */
export function parseMaxQueries(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= ROLLUP_FIXED_STATEMENTS && n <= 1000 ? n : DEFAULT_ROLLUP_OPTIONS.maxQueries;
}

/** Runs the cron's job; answers the rollup run's report when it ran one (for the alert step). */
export async function handleScheduled(controller: ScheduledController, env: Env): Promise<RollupRunReport | null> {
  const now = controller.scheduledTime;
  if (controller.cron === RETENTION_CRON) {
    const r = await runRetention(env.DB, now, { retentionDays: parseRetentionDays(env.RAW_RETENTION_DAYS) });
    console.log(JSON.stringify({ event: "retention", ...r }));
    return null;
  }
  // A manual trigger without a cron (`wrangler dev --test-scheduled`, `/__scheduled`) runs the
  // rollup: it is idempotent, so an extra run is always safe.
  if (controller.cron !== ROLLUP_CRON && controller.cron !== "") {
    console.error(JSON.stringify({ event: "unknown_cron", cron: controller.cron }));
    return null;
  }
  const r = await runRollup(env.DB, now, { maxQueries: parseMaxQueries(env.ROLLUP_MAX_QUERIES) });
  console.log(JSON.stringify({ event: "rollup", ...r }));
  return r;
}
