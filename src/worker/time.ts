// Time units and UTC bucketing: one DAY_MS/HOUR_MS for the whole worker, and the rollup's SQL for them.
// The retry rule's window and gap arithmetic are in retry-rule.ts.

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** Start of the UTC hour holding `ms` (the same arithmetic as HOUR_START_SQL). */
export function hourStartMs(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

/** Start of the UTC day holding `ms` (the same arithmetic as DAY_START_SQL). */
export function dayStartMs(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/**
 * SQL for the UTC hour / day start of a `*_ms` column. Timestamps are after 1970, so CAST's
 * truncation is a floor; the division is the same IEEE operation as in hourStartMs/dayStartMs.
 */
export const hourStartSql = (column: string) => `(CAST((${column}) / ${HOUR_MS} AS INTEGER) * ${HOUR_MS})`;
export const dayStartSql = (column: string) => `(CAST((${column}) / ${DAY_MS} AS INTEGER) * ${DAY_MS})`;

/** SPEC §1.1: a request with the same Idempotency-Key within this long is stored once. */
export const IDEMPOTENCY_WINDOW_MS = HOUR_MS;

/**
 * SPEC §7: hour rows are kept for the last 90 days; the hour rows of older days are folded into
 * their day rows by the daily retention job (rollup/retention.ts), and hour grain over them answers
 * 400 (HOURS_NOT_KEPT).
 */
export const HOUR_ROWS_KEPT_DAYS = 90;

/**
 * Start of the oldest day whose hour rows are kept, seen from `nowMs` (the job's scheduledTime or
 * the request's clock, never the wall clock): days before it are folded. Whole UTC days, so a job
 * and a read on the same day agree on it.
 */
export function hourRowsHorizonMs(nowMs: number): number {
  return dayStartMs(nowMs) - HOUR_ROWS_KEPT_DAYS * DAY_MS;
}
