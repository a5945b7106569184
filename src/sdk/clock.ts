// Call timestamps and durations from one clock, so that a call made after another never looks
// like it overlapped it. The retry rule (SPEC §2.2) reads gap = next.started_at − (started_at +
// duration_ms): with a millisecond wall clock and a rounded duration, back-to-back calls could
// show gap = −1 ms and count as parallel. Here both come from the monotonic performance clock,
// anchored to the wall clock, and both are truncated to whole milliseconds, so
// started_at + duration_ms never passes the true end of the call, and the next call's started_at
// is at least that: gap ≥ 0 for sequential calls.

/** Re-anchor when the wall clock has moved this far from the performance clock (NTP, suspend). */
const MAX_DRIFT_MS = 1_000;

let anchorWallMs = Date.now();
let anchorPerfMs = performance.now();

/** The current time on the performance clock (ms, fractional), for measuring durations. */
export function perfNow(): number {
  return performance.now();
}

/** Wall-clock epoch milliseconds (whole) of a performance-clock reading taken just now. */
export function wallMsAt(perfMs: number): number {
  const wallNow = Date.now();
  if (Math.abs(anchorWallMs + (perfMs - anchorPerfMs) - wallNow) > MAX_DRIFT_MS) {
    anchorWallMs = wallNow;
    anchorPerfMs = perfMs;
  }
  return Math.floor(anchorWallMs + (perfMs - anchorPerfMs));
}

/** Whole milliseconds between two performance-clock readings, truncated (never rounded up). */
export function elapsedMs(fromPerfMs: number, toPerfMs: number): number {
  return Math.max(0, Math.floor(toPerfMs - fromPerfMs));
}

// The ISO text of the last whole second formatted, up to its milliseconds: calls within one second
// share it, so a call's timestamp costs a concatenation instead of a Date and its toISOString.
let formattedSecond = Number.NaN;
let formattedPrefix = "";

/** `started_at` / `checked_at` on the wire: exactly `new Date(epochMs).toISOString()`. */
export function wireTimestamp(epochMs: number): string {
  if (!Number.isSafeInteger(epochMs)) return new Date(epochMs).toISOString();
  const second = Math.floor(epochMs / 1000);
  const ms = epochMs - second * 1000;
  if (second !== formattedSecond) {
    const text = new Date(second * 1000).toISOString();
    formattedSecond = second;
    formattedPrefix = text.slice(0, text.length - 4); // "….000Z" → "….": the part before the milliseconds
  }
  return formattedPrefix + (ms >= 100 ? "" : ms >= 10 ? "0" : "00") + ms + "Z";
}
