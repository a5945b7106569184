// Tool versions (SPEC §2.5). A shared server resends its tool list with every conversation (SPEC
// §4), so startups are counted in hourly (rollup/tool-versions.ts) and reads add the folded
// startups above the watermark.
import { startupsWatermarkSql, toolVersionsWatermarkSql } from "./rollup-state.ts";

/** '' stands for an absent hash; the description_norm is the latest startup's. */
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

/** One statement, so a fold commits before or after it. */
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
