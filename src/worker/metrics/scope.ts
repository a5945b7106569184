// What one read request works in: its project, its clock, and `as_of`, read once per request
// (SPEC §2.6) however many reports and sums the request builds.
import { readAsOfMs } from "../db/metrics.ts";

export type ReadScope = {
  db: D1Database;
  /** The project of the request's key: the only one it can read (SPEC §3). */
  projectId: string;
  /** The request time: today's date for default ranges, and which days are still live. */
  nowMs: number;
  /** `rollup_state.as_of_ms` (null before the first rollup), one read shared by the whole request. */
  asOfMs: Promise<number | null>;
};

export function openReadScope(db: D1Database, projectId: string, nowMs = Date.now()): ReadScope {
  const asOfMs = readAsOfMs(db);
  // Awaited by whoever needs it; a failure then surfaces there (and not as an unhandled rejection here).
  asOfMs.catch(() => {});
  return { db, projectId, nowMs, asOfMs };
}

export function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** `as_of` as the answers carry it: an ISO 8601 UTC string, or null before the first rollup. */
export async function asOfIso(scope: ReadScope): Promise<string | null> {
  return isoTimeOrNull(await scope.asOfMs);
}
