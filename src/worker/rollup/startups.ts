// Folds one chunk of new startups (SPEC §2.4, §2.5) as ONE D1 batch. A chunk holds the startups
// just above the watermark, so its highest per project or session is the highest overall: replacing
// with it is exact and idempotent.

import { STARTUPS_CHUNK, TOOL_VERSIONS_WATERMARK, startupsWatermarkSql } from "../db/rollup-state.ts";
import { TOOL_VERSIONS_PENDING_SQL } from "./tool-versions.ts";
import { NOT_HELD, decideScope, heldParams, type RunScope } from "./scope.ts";
import { namedStatement } from "../db/named-sql.ts";

const watermark = startupsWatermarkSql();
const chunkRow = `(SELECT value FROM rollup_state WHERE name = '${STARTUPS_CHUNK}')`;

/**
 * A startup at every cap of SPEC §1.2 expands into 500 + 64 × 64 rows, so rows are bounded too, or
 * one chunk would hold every other project's reads. The first pending startup is always taken so a
 * chunk advances. Counted once, in the first statement: the lists are costly to parse.
 */
const CHOSEN = `chosen AS MATERIALIZED (
    SELECT startup_seq FROM (
      SELECT startup_seq, ROW_NUMBER() OVER w AS n, SUM(cost) OVER w AS running FROM (
        SELECT startup_seq, json_array_length(tools_json)
          + (SELECT COALESCE(SUM(json_array_length(d.value, '$.tools')), 0) FROM json_each(agree_declared_json) AS d) AS cost
        FROM raw_startups WHERE startup_seq > ${watermark} AND ${NOT_HELD} ORDER BY startup_seq LIMIT :chunk_startups)
      WINDOW w AS (ORDER BY startup_seq ROWS UNBOUNDED PRECEDING))
    WHERE n = 1 OR running <= :chunk_rows)`;

/** Held projects' startups are moved unfolded (db/moves.ts). */
const CHUNK = `chunk AS MATERIALIZED (
    SELECT startup_seq FROM raw_startups
    WHERE startup_seq > (${chunkRow} ->> '$.from') AND startup_seq <= (${chunkRow} ->> '$.end') AND ${NOT_HELD})`;

const LATEST = `latest AS MATERIALIZED (
    SELECT r.project_id, r.startup_seq, r.tools_json FROM raw_startups r
    WHERE r.startup_seq IN (
      SELECT MAX(s.startup_seq) FROM chunk s CROSS JOIN raw_startups r2 ON r2.startup_seq = s.startup_seq GROUP BY r2.project_id))`;

export const STARTUP_CHUNK_SQL = {
  chooseStartups: `INSERT INTO rollup_state (name, value)
    WITH ${CHOSEN}
    SELECT '${STARTUPS_CHUNK}', json_object('from', ${watermark}, 'end', COALESCE((SELECT MAX(startup_seq) FROM chosen), ${watermark})) WHERE true
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  // Only what changed: a server sends the same list with every new session (SPEC §4).
  deleteReplacedTools: `WITH ${CHUNK}, ${LATEST}
    DELETE FROM registered_tools WHERE project_id IN (SELECT project_id FROM latest)
      AND NOT EXISTS (SELECT 1 FROM latest l, json_each(l.tools_json) AS t
        WHERE l.project_id = registered_tools.project_id AND json_extract(t.value, '$.name') = registered_tools.tool_name)`,

  // A list naming one tool twice keeps its last entry (rows are inserted in list order).
  insertRegisteredTools: `INSERT INTO registered_tools (project_id, tool_name, schema_bytes, schema_hash,
      description_hash, description_norm, requires_authorization, requires_verified_identity, startup_seq)
    WITH ${CHUNK}, ${LATEST}
    SELECT l.project_id, json_extract(t.value, '$.name'), json_extract(t.value, '$.schema_bytes'),
      json_extract(t.value, '$.schema_hash'), json_extract(t.value, '$.description_hash'),
      json_extract(t.value, '$.description_norm'),
      COALESCE(json_extract(t.value, '$.policy.requires_authorization'), 0),
      COALESCE(json_extract(t.value, '$.policy.requires_verified_identity'), 0),
      l.startup_seq
    FROM latest l, json_each(l.tools_json) AS t
    WHERE true
    ORDER BY l.startup_seq, t.key
    ON CONFLICT (project_id, tool_name) DO UPDATE SET schema_bytes = excluded.schema_bytes, schema_hash = excluded.schema_hash,
      description_hash = excluded.description_hash, description_norm = excluded.description_norm,
      requires_authorization = excluded.requires_authorization, requires_verified_identity = excluded.requires_verified_identity,
      startup_seq = excluded.startup_seq
    WHERE (schema_bytes, schema_hash, description_hash, description_norm, requires_authorization, requires_verified_identity)
      IS NOT (excluded.schema_bytes, excluded.schema_hash, excluded.description_hash, excluded.description_norm,
        excluded.requires_authorization, excluded.requires_verified_identity)`,

  // The first chunk after migration 0029 starts the tool versions watermark here: startups folded
  // before are counted already.
  startToolVersionsWatermark: `INSERT INTO rollup_state (name, value)
    SELECT '${TOOL_VERSIONS_WATERMARK}', ${chunkRow} ->> '$.from' WHERE true
    ON CONFLICT (name) DO NOTHING`,

  upsertDeclarations: `INSERT INTO agreement_declarations (project_id, field, tool_name, last_declared_ms)
    WITH ${CHUNK}
    SELECT r.project_id, json_extract(d.value, '$.field'), n.value, MAX(r.received_at_ms)
    FROM chunk s CROSS JOIN raw_startups r ON r.startup_seq = s.startup_seq,
      json_each(r.agree_declared_json) AS d, json_each(d.value, '$.tools') AS n
    WHERE true
    GROUP BY r.project_id, json_extract(d.value, '$.field'), n.value
    ON CONFLICT (project_id, field, tool_name) DO UPDATE SET
      last_declared_ms = MAX(last_declared_ms, excluded.last_declared_ms)`,

  // SPEC §2.4: schema bytes from the session's latest startup; ingest writes no session row, so
  // first/last seen are folded here as the calls chunk does.
  setSessionSchemaBytes: `INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, schema_bytes_sum)
    WITH ${CHUNK}
    SELECT r.project_id, r.session_id,
      (SELECT MIN(r2.received_at_ms) FROM chunk s CROSS JOIN raw_startups r2 ON r2.startup_seq = s.startup_seq
        WHERE r2.project_id = r.project_id AND r2.session_id = r.session_id),
      r.received_at_ms, r.client_name,
      COALESCE((SELECT SUM(json_extract(t.value, '$.schema_bytes')) FROM json_each(r.tools_json) AS t), 0)
    FROM raw_startups r
    WHERE r.startup_seq IN (
      SELECT MAX(s.startup_seq) FROM chunk s CROSS JOIN raw_startups r2 ON r2.startup_seq = s.startup_seq
      GROUP BY r2.project_id, r2.session_id)
    ON CONFLICT (project_id, session_id) DO UPDATE SET schema_bytes_sum = excluded.schema_bytes_sum,
      client_name = CASE WHEN excluded.last_seen_ms >= sessions.last_seen_ms THEN excluded.client_name ELSE sessions.client_name END,
      first_seen_ms = MIN(sessions.first_seen_ms, excluded.first_seen_ms),
      last_seen_ms = MAX(sessions.last_seen_ms, excluded.last_seen_ms)`,

  report: `WITH ${CHUNK}
    SELECT (SELECT COUNT(*) FROM chunk) AS new_startups,
      EXISTS (SELECT 1 FROM raw_startups WHERE startup_seq > (SELECT MAX(startup_seq) FROM chunk)) AS more,
      ${TOOL_VERSIONS_PENDING_SQL} AS versions`,
} as const;

export type StartupChunkReport = { new_startups: number; more: number; versions: number };

export const STARTUP_CHUNK_STATEMENTS = 7;

/**
 * Holds one startup at every cap (500 + 64 × 64 = 4,596 rows); test/e2e/tenant-isolation.test.ts
 * shows what it bounds.
 */
export const MAX_STARTUP_CHUNK_ROWS = 5_000;

export async function rollupStartupChunk(
  db: D1Database, chunkStartups: number, maxRows = MAX_STARTUP_CHUNK_ROWS, hourMs = 0, scope?: RunScope,
): Promise<StartupChunkReport> {
  const held = heldParams(scope ?? (await decideScope(db)));
  const results = await db.batch([
    namedStatement(db, STARTUP_CHUNK_SQL.chooseStartups, { chunk_startups: chunkStartups, chunk_rows: maxRows, ...held }),
    namedStatement(db, STARTUP_CHUNK_SQL.deleteReplacedTools, held),
    namedStatement(db, STARTUP_CHUNK_SQL.insertRegisteredTools, held),
    namedStatement(db, STARTUP_CHUNK_SQL.startToolVersionsWatermark),
    namedStatement(db, STARTUP_CHUNK_SQL.upsertDeclarations, held),
    namedStatement(db, STARTUP_CHUNK_SQL.setSessionSchemaBytes, held),
    namedStatement(db, STARTUP_CHUNK_SQL.report, { hour_ms: hourMs, ...held }),
  ]);
  const report = results[6]?.results?.[0] as StartupChunkReport | undefined;
  if (!report) throw new Error("rollup: startups chunk returned no report");
  return report;
}
