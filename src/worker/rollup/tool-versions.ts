// The hourly fold of tool versions: counts and watermark move in ONE D1 batch, so each startup is
// counted exactly once; the first pending startup is always taken so the fold advances.
import { TOOL_VERSIONS_WATERMARK, startupsWatermarkSql, toolVersionsWatermarkSql } from "../db/rollup-state.ts";
import { versionsOfStartupsSql } from "../db/tool-versions.ts";
import { BOUND_SCOPE, NOT_HELD, decideScope, heldParams, notHeldSql, type RunScope } from "./scope.ts";
import { namedStatement } from "../db/named-sql.ts";

const watermark = toolVersionsWatermarkSql();
const folded = startupsWatermarkSql();

/** Tool entries one fold step counts in at most (a startup lists up to 500). */
export const TOOL_VERSION_FOLD_ROWS = 5_000;
export const TOOL_VERSION_FOLD_STARTUPS = 200;

export const toolVersionsPendingSql = (sets = BOUND_SCOPE) => `EXISTS (SELECT 1 FROM (
    SELECT received_at_ms FROM raw_startups WHERE startup_seq > ${watermark} AND startup_seq <= ${folded} AND ${notHeldSql(sets)} ORDER BY startup_seq LIMIT 1)
    WHERE received_at_ms < :hour_ms)`;
export const TOOL_VERSIONS_PENDING_SQL = toolVersionsPendingSql();

// The upsert does not change what the chunk reads, so each statement derives the same chunk.
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

/** Answers whether a startup of a finished hour is left. */
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
