// Time units and UTC bucketing: one DAY_MS/HOUR_MS for the whole worker, and the rollup's SQL for them.

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** SPEC §2.2: a call is retried when the next one starts 0 ≤ gap ≤ 30,000 ms after it ended. */
export const RETRY_WINDOW_MS = 30_000;

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

/**
 * SPEC §2.2 gap between a call `c` and the next call `n`, in whole microseconds:
 * n.started_at − (c.started_at + c.duration_ms). Timestamps are REAL milliseconds that may carry
 * fractions (producers send up to nanoseconds); comparing float differences would put calls that
 * sit exactly on the 0 or 30,000 ms edge on either side by rounding luck, so each timestamp is
 * rounded to a whole microsecond first (an epoch in µs is exact in a double; sub-µs digits are
 * beyond a double's precision for epoch milliseconds anyway).
 */
export function gapMicros(c: { started_at_ms: number; duration_ms: number }, n: { started_at_ms: number }): number {
  return Math.round(n.started_at_ms * 1000) - Math.round(c.started_at_ms * 1000) - c.duration_ms * 1000;
}

/** gapMicros in SQL, from the SQL expressions of c's start and duration and n's start. */
export const gapMicrosSql = (cStartedAt: string, cDuration: string, nStartedAt: string) =>
  `(ROUND(${nStartedAt} * 1000) - ROUND(${cStartedAt} * 1000) - ${cDuration} * 1000)`;

/** SQL test for "0 ≤ gap ≤ 30,000 ms" between a call (its start and duration) and its next call's start. */
export const retryGapSql = (cStartedAt: string, cDuration: string, nStartedAt: string) =>
  `${gapMicrosSql(cStartedAt, cDuration, nStartedAt)} BETWEEN 0 AND ${RETRY_WINDOW_MS * 1000}`;

/** SPEC §1.1: a request with the same Idempotency-Key within this long is stored once. */
export const IDEMPOTENCY_WINDOW_MS = HOUR_MS;
