// The rollup module's entry: the cron triggers (wrangler.toml [triggers]) and the run's budget. The
// cron itself fans out one job per database (queues/rollup-jobs.ts, SPEC §7).
import { DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS } from "./run.ts";

export const ROLLUP_CRON = "*/5 * * * *";
export const RETENTION_CRON = "30 3 * * *";

export { runRollup, CHUNK_ROWS_READ_BOUND, DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS, type RollupOptions, type RollupRunReport } from "./run.ts";
export { runRetention, parseRetentionDays, retentionCutoffMs, type RetentionOptions, type RetentionReport } from "./retention.ts";
export { AS_OF, CALLS_WATERMARK } from "../db/rollup-state.ts";

/**
 * D1 statements a rollup run may spend: `ROLLUP_MAX_QUERIES` when it is a whole number from
 * ROLLUP_FIXED_STATEMENTS (5) to
 * 1,000 (D1's per-invocation limit on the Paid plan), else the free plan's default (48, under 50).
 */
export function parseMaxQueries(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= ROLLUP_FIXED_STATEMENTS && n <= 1000 ? n : DEFAULT_ROLLUP_OPTIONS.maxQueries;
}

/** Pause between a rollup run's transactions: `ROLLUP_PAUSE_MS` when a whole number from 0 to 1,000, else the default (50). */
export function parsePauseMs(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && value !== "" && Number.isInteger(n) && n >= 0 && n <= 1000 ? n : DEFAULT_ROLLUP_OPTIONS.pauseMs;
}
