// Call timestamps and durations from one monotonic clock, truncated to whole ms, so sequential calls
// never show a negative SPEC §2.2 gap (a wall clock plus a rounded duration could give −1 ms).

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
