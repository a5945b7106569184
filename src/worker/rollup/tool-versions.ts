// The hourly fold of tool versions (db/tool-versions.ts): the startups the startups chunks have
// folded in, received before the run's hour, are counted into `tool_versions` and the
// `tool_versions_seq` watermark moves past them, in ONE D1 batch, so each is counted exactly once.
// A chunk is bounded like a startups chunk (rows of work: tool entries); the first pending startup
// of a finished hour is always taken, so the fold always advances.
import { TOOL_VERSIONS_WATERMARK, startupsWatermarkSql, toolVersionsWatermarkSql } from "../db/rollup-state.ts";
import { versionsOfStartupsSql } from "../db/tool-versions.ts";
import { BOUND_SCOPE, NOT_HELD, decideScope, heldParams, notHeldSql, type RunScope } from "./scope.ts";
import { namedStatement } from "../db/named-sql.ts";

const watermark = toolVersionsWatermarkSql();
const folded = startupsWatermarkSql();

/** Tool entries one fold step counts in at most (a startup lists up to 500). */
export const TOOL_VERSION_FOLD_ROWS = 5_000;
/** Startups one fold step looks at. */
export const TOOL_VERSION_FOLD_STARTUPS = 200;

/**
 * Whether a startup waits for the fold: the first above the watermark was folded in and received
 * before the hour :hour_ms (`sets`: where the run's decision is read, scope.ts).
 */
export const toolVersionsPendingSql = (sets = BOUND_SCOPE) => `EXISTS (SELECT 1 FROM (
    SELECT received_at_ms FROM raw_startups WHERE startup_seq > ${watermark} AND startup_seq <= ${folded} AND ${notHeldSql(sets)} ORDER BY startup_seq LIMIT 1)
    WHERE received_at_ms < :hour_ms)`;
export const TOOL_VERSIONS_PENDING_SQL = toolVersionsPendingSql();

// :hour_ms the run's hour start, :fold_startups startups, :fold_rows rows of work: the run of
// startups above the watermark received before :hour_ms, within both bounds. Each statement derives the same chunk (the upsert does
// not change what it reads).
const CHUNK = `tv_chunk AS MATERIALIZED (
    SELECT startup_seq FROM (
      SELECT startup_seq, ROW_NUMBER() OVER w AS n, SUM(cost) OVER w AS running, SUM(late) OVER w AS lates FROM (
        SELECT startup_seq, json_array_length(tools_json) AS cost, received_at_ms >= :hour_ms AS late
        FROM raw_startups WHERE startup_seq > ${watermark} AND startup_seq <= ${folded} AND ${NOT_HELD} ORDER BY startup_seq LIMIT :fold_startups)
      WINDOW w AS (ORDER BY startup_seq ROWS UNBOUNDED PRECEDING))
    WHERE lates = 0 AND (n = 1 OR running <= :fold_rows))`;

export const TOOL_VERSION_FOLD_SQL = {
  upsertToolVersions: `INSERT INTO tool_versions (project_id, tool_name, schema_hash, description_hash, description_norm,
      first_seen_ms, last_seen_ms, startups)
    WITH ${CHUNK}
    SELECT * FROM (${versionsOfStartupsSql("tv_chunk AS s CROSS JOIN raw_startups AS r ON r.startup_seq = s.startup_seq, json_each(r.tools_json) AS t")})
    WHERE true
    ON CONFLICT (project_id, tool_name, schema_hash, description_hash) DO UPDATE SET
      description_norm = excluded.description_norm,
      first_seen_ms = MIN(first_seen_ms, excluded.first_seen_ms),
      last_seen_ms = MAX(last_seen_ms, excluded.last_seen_ms),
      startups = startups + excluded.startups`,

  advanceWatermark: `INSERT INTO rollup_state (name, value)
    WITH ${CHUNK}
    SELECT '${TOOL_VERSIONS_WATERMARK}', top FROM (SELECT MAX(startup_seq) AS top FROM tv_chunk) WHERE top IS NOT NULL
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  report: `SELECT ${TOOL_VERSIONS_PENDING_SQL} AS more`,
} as const;

export const TOOL_VERSION_FOLD_STATEMENTS = 3;

/**
 * One fold step at the run's hour `hourMs`; answers whether a startup of a finished hour is left.
 * `scope`: the run's decision (decided now for a step run on its own).
 */
export async function runToolVersionFoldStep(db: D1Database, hourMs: number, scope?: RunScope): Promise<{ more: boolean }> {
  const held = heldParams(scope ?? (await decideScope(db)));
  const fold = { hour_ms: hourMs, fold_startups: TOOL_VERSION_FOLD_STARTUPS, fold_rows: TOOL_VERSION_FOLD_ROWS, ...held };
  const results = await db.batch([
    namedStatement(db, TOOL_VERSION_FOLD_SQL.upsertToolVersions, fold),
    namedStatement(db, TOOL_VERSION_FOLD_SQL.advanceWatermark, fold),
    namedStatement(db, TOOL_VERSION_FOLD_SQL.report, { hour_ms: hourMs, ...held }),
  ]);
  const report = results[2]?.results?.[0] as { more: number } | undefined;
  if (!report) throw new Error("rollup: tool versions fold returned no report");
  return { more: !!report.more };
}
