// The retry rule of SPEC §2.2 in one place: the window, the gap arithmetic and the reach it implies.
// The rollup SQL, every margin and both test references derive from it, never from a typed number.
import { MAX_DURATION_MS } from "../shared/limits.ts";

/** SPEC §2.2: a call is retried when the next one starts 0 ≤ gap ≤ 30,000 ms after it ended. */
export const RETRY_WINDOW_MS = 30_000;

/** Gaps are compared in whole microseconds (below). */
const MICROS_PER_MS = 1000;
const RETRY_WINDOW_MICROS = RETRY_WINDOW_MS * MICROS_PER_MS;

/** A call as the rule reads it: when it started (epoch ms, may carry fractions) and how long it took. */
export interface RuleCall {
  started_at_ms: number;
  duration_ms: number;
}

/**
 * SPEC §2.2 gap n.started_at − (c.started_at + c.duration_ms) in whole microseconds: timestamps carry
 * fractions, and float differences would put calls exactly on the 0 or 30,000 ms edge on either side
 * by rounding luck. An epoch in µs is exact in a double.
 */
export function gapMicros(c: RuleCall, n: Pick<RuleCall, "started_at_ms">): number {
  return Math.round(n.started_at_ms * MICROS_PER_MS) - Math.round(c.started_at_ms * MICROS_PER_MS) - c.duration_ms * MICROS_PER_MS;
}

/** Whether a gap (gapMicros) is inside the retry window: 0 ≤ gap ≤ 30,000 ms. */
export function inRetryWindow(gap: number): boolean {
  return gap >= 0 && gap <= RETRY_WINDOW_MICROS;
}

/** SPEC §2.2: `n`, the next call of `c`'s (session, client, tool) sequence, is a retry of `c`. */
export function isRetryOf(c: RuleCall & { args_hash: string }, n: Pick<RuleCall, "started_at_ms"> & { args_hash: string }): boolean {
  return inRetryWindow(gapMicros(c, n)) && n.args_hash !== c.args_hash;
}

/** gapMicros in SQL, from the SQL expressions of c's start and duration and n's start. */
export const gapMicrosSql = (cStartedAt: string, cDuration: string, nStartedAt: string) =>
  `(ROUND(${nStartedAt} * ${MICROS_PER_MS}) - ROUND(${cStartedAt} * ${MICROS_PER_MS}) - ${cDuration} * ${MICROS_PER_MS})`;

/** inRetryWindow in SQL: the gap between a call (its start and duration) and its next call's start. */
export const retryGapSql = (cStartedAt: string, cDuration: string, nStartedAt: string) =>
  `${gapMicrosSql(cStartedAt, cDuration, nStartedAt)} BETWEEN 0 AND ${RETRY_WINDOW_MICROS}`;

/** isRetryOf in SQL (1, 0, or NULL when there is no `n`). */
export const isRetryOfSql = (c: { startedAt: string; duration: string; argsHash: string }, n: { startedAt: string; argsHash: string }) =>
  `(${retryGapSql(c.startedAt, c.duration, n.startedAt)}) AND ${n.argsHash} <> ${c.argsHash}`;

/**
 * How long after a call's start a call that retries it can start: its duration and the window.
 * The other way round, a call's predecessor that it retries started at most this long before it,
 * with the predecessor's duration.
 */
export const retryReachMs = (durationMs: number) => durationMs + RETRY_WINDOW_MS;
/** retryReachMs in SQL, from the SQL expression of a duration. */
export const retryReachSql = (durationMs: string) => `(${durationMs} + ${RETRY_WINDOW_MS})`;

/** The longest retryReachMs: a call lasts at most a day (SPEC §1.2). */
export const MAX_RETRY_REACH_MS = retryReachMs(MAX_DURATION_MS);

/**
 * Reaches a call can change a flag over: its neighbours' retry flags (one), and their first-call
 * success through their other neighbours (two). Rollup spans and retention take this many each side.
 */
export const FLAG_REACHES = 2;

/** How far before (after) a new call the counters it changes can need calls: FLAG_REACHES reaches. */
export const flagReachSql = (longestDurationMs: string) => `${FLAG_REACHES} * ${retryReachSql(longestDurationMs)}`;

/** flagReachSql at the longest duration. */
export const MAX_FLAG_REACH_MS = FLAG_REACHES * MAX_RETRY_REACH_MS;
