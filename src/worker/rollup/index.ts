// The rollup's cron triggers (wrangler.toml) and budget; the cron fans out one job per database
// (SPEC §7).
import { DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS } from "./run.ts";

export const ROLLUP_CRON = "*/5 * * * *";
export const RETENTION_CRON = "30 3 * * *";

export { runRollup, CHUNK_ROWS_READ_BOUND, DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS, type RollupOptions, type RollupRunReport } from "./run.ts";
export { runRetention, parseRetentionDays, retentionCutoffMs, type RetentionOptions, type RetentionReport } from "./retention.ts";
export { AS_OF, CALLS_WATERMARK } from "../db/rollup-state.ts";

/** At most 1,000 (D1's per-invocation limit on Paid); the default stays under the free plan's 50. */
export function parseMaxQueries(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && Number.isInteger(n) && n >= ROLLUP_FIXED_STATEMENTS && n <= 1000 ? n : DEFAULT_ROLLUP_OPTIONS.maxQueries;
}

export function parsePauseMs(value: string | undefined): number {
  const n = Number(value);
  return value !== undefined && value !== "" && Number.isInteger(n) && n >= 0 && n <= 1000 ? n : DEFAULT_ROLLUP_OPTIONS.pauseMs;
}
