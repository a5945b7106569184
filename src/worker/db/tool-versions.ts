// Tool versions (SPEC §2.5: every (schema_hash, description_hash) a tool was registered with, first
// and last seen, how many startups listed it). A shared HTTP server sends its tool list with every
// new conversation (SPEC §4), and counting each startup into `tool_versions` in the run that folded
// it rewrote every tool's row every 5 minutes, a large share of the rows written per call. So the
// startups are counted in once an hour (rollup/tool-versions.ts, behind the `tool_versions_seq`
// watermark), and reads add the folded startups above that watermark (toolVersionsSourceSql): an
// hour of startups at most, read from raw_startups by its key.
import { startupsWatermarkSql, toolVersionsWatermarkSql } from "./rollup-state.ts";

/**
 * Per (project, tool, schema_hash, description_hash) of the startups `rows` (a FROM list naming a
 * raw_startups alias `r` joined with `json_each(r.tools_json) AS t`, plus its WHERE): the columns of
 * a tool_versions row. '' stands for an absent hash; the description_norm is the latest startup's.
 */
export function versionsOfStartupsSql(rows: string): string {
  const name = "json_extract(t.value, '$.name')";
  const schema = "COALESCE(json_extract(t.value, '$.schema_hash'), '')";
  const description = "COALESCE(json_extract(t.value, '$.description_hash'), '')";
  return `SELECT project_id, tool_name, schema_hash, description_hash, MAX(latest_norm) AS description_norm,
      MIN(received_at_ms) AS first_seen_ms, MAX(received_at_ms) AS last_seen_ms, COUNT(DISTINCT startup_seq) AS startups
    FROM (
      SELECT r.project_id, r.startup_seq, r.received_at_ms, ${name} AS tool_name, ${schema} AS schema_hash, ${description} AS description_hash,
        FIRST_VALUE(json_extract(t.value, '$.description_norm')) OVER (
          PARTITION BY r.project_id, ${name}, ${schema}, ${description} ORDER BY r.startup_seq DESC, t.key DESC) AS latest_norm
      FROM ${rows}
    ) WHERE true
    GROUP BY project_id, tool_name, schema_hash, description_hash`;
}

/**
 * A FROM source with the columns of `tool_versions` for the projects `projectsSql` selects: the
 * rows counted so far plus the folded startups above the tool versions watermark, merged as the
 * hourly fold will merge them. One statement, so a fold commits before or after it.
 */
export function toolVersionsSourceSql(projectsSql: string): string {
  const pending = versionsOfStartupsSql(`raw_startups AS r, json_each(r.tools_json) AS t
        WHERE r.startup_seq > ${toolVersionsWatermarkSql()} AND r.startup_seq <= ${startupsWatermarkSql()}
          AND r.project_id IN (${projectsSql})`);
  return `(SELECT project_id, tool_name, schema_hash, description_hash,
      CASE WHEN MAX(pending) = 1 THEN MAX(CASE WHEN pending = 1 THEN description_norm END) ELSE MAX(description_norm) END AS description_norm,
      MIN(first_seen_ms) AS first_seen_ms, MAX(last_seen_ms) AS last_seen_ms, SUM(startups) AS startups
    FROM (
      SELECT project_id, tool_name, schema_hash, description_hash, description_norm, first_seen_ms, last_seen_ms, startups, 0 AS pending
        FROM tool_versions WHERE project_id IN (${projectsSql})
      UNION ALL
      SELECT *, 1 FROM (${pending}))
    GROUP BY project_id, tool_name, schema_hash, description_hash)`;
}
