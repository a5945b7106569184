// When a tool's current schema took over and the hours schema regressions compare (SPEC §2.5), in JS
// and as its SQL twin; test/worker/rollup/history-fold.test.ts checks they agree.
import { toolVersionsSourceSql } from "../db/tool-versions.ts";
import { DAY_MS, HOUR_MS, hourStartMs, hourStartSql } from "../time.ts";

/** Days compared on each side of a schema change. */
export const REGRESSION_WINDOW_DAYS = 7;

/** What latestSchemaChange needs of a tool_versions row. */
export type SchemaVersion = { schema_hash: string; first_seen_ms: number; last_seen_ms: number };

/**
 * When the tool's current schema took over: the later of the current hash's first sighting and the
 * last sighting of any other hash (so A → B → A counts from when B was last seen). Null when the
 * tool has only ever had one schema.
 */
export function latestSchemaChange<V extends SchemaVersion>(current: string, versions: V[]): { changedAtMs: number; previous: string } | null {
  let currentFirstSeen = Infinity;
  let previous: V | undefined;
  for (const v of versions) {
    if (v.schema_hash === current) currentFirstSeen = Math.min(currentFirstSeen, v.first_seen_ms);
    else if (!previous || v.last_seen_ms > previous.last_seen_ms) previous = v;
  }
  if (!previous || currentFirstSeen === Infinity) return null;
  return { changedAtMs: Math.max(currentFirstSeen, previous.last_seen_ms), previous: previous.schema_hash };
}

/** A span of hours, `startMs` inclusive, `endMs` exclusive. */
export type HourSpan = { startMs: number; endMs: number };

/**
 * The hours compared around a change: the REGRESSION_WINDOW_DAYS before the hour of the change and
 * as long after it. The hour holding the change mixes both schemas and is in neither.
 */
export function schemaChangeWindows(changedAtMs: number): { before: HourSpan; after: HourSpan } {
  const changeHourMs = hourStartMs(changedAtMs);
  const windowMs = REGRESSION_WINDOW_DAYS * DAY_MS;
  return {
    before: { startMs: changeHourMs - windowMs, endMs: changeHourMs },
    after: { startMs: changeHourMs + HOUR_MS, endMs: changeHourMs + HOUR_MS + windowMs },
  };
}

/**
 * latestSchemaChange in SQL, per registered tool: a SELECT of (project_id, tool_name,
 * first_ms, end_ms), the span from the first hour of `before` to the end of `after`, for the
 * registered tools of the projects `projectsSql` selects. SQLite's two-argument MAX is NULL when
 * either side is (no current-hash sighting, or no other hash): no change, no row kept.
 */
export function schemaChangeSpansSql(projectsSql: string): string {
  const changedAt = `MAX(MIN(CASE WHEN v.schema_hash = r.schema_hash THEN v.first_seen_ms END),
        MAX(CASE WHEN v.schema_hash <> r.schema_hash THEN v.last_seen_ms END))`;
  const windowMs = REGRESSION_WINDOW_DAYS * DAY_MS;
  return `SELECT project_id, tool_name, change_hour_ms - ${windowMs} AS first_ms, change_hour_ms + ${HOUR_MS + windowMs} AS end_ms FROM (
      SELECT r.project_id, r.tool_name, ${hourStartSql(changedAt)} AS change_hour_ms
      FROM registered_tools AS r JOIN ${toolVersionsSourceSql(projectsSql)} AS v ON v.project_id = r.project_id AND v.tool_name = r.tool_name
      WHERE r.schema_hash IS NOT NULL AND r.project_id IN (${projectsSql})
      GROUP BY r.project_id, r.tool_name)
    WHERE change_hour_ms IS NOT NULL`;
}
