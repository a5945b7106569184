// Folds one chunk of new startups (SPEC §2.4, §2.5) as ONE D1 batch: the registered tool list
// (the project's most recently received startup wins), the declared agreement fields, and each
// session's schema bytes (its latest startup). The tool versions they list are counted in by the
// hourly fold of tool-versions.ts.
//
// "Most recently received" is the highest startup_seq. A chunk holds the startups just above the
// `startups_seq` watermark, so the highest one per project (or session) in the chunk is the
// highest overall: replacing with it is exact and idempotent.

import { STARTUPS_CHUNK, TOOL_VERSIONS_WATERMARK, startupsWatermarkSql } from "../db/rollup-state.ts";
import { TOOL_VERSIONS_PENDING_SQL } from "./tool-versions.ts";
import { NOT_HELD, decideScope, heldParams, type RunScope } from "./scope.ts";
import { namedStatement } from "../db/named-sql.ts";

const watermark = startupsWatermarkSql();
const chunkRow = `(SELECT value FROM rollup_state WHERE name = '${STARTUPS_CHUNK}')`;

/**
 * The chunk: at most :chunk_startups startups above the watermark, and no more than :chunk_rows rows of work (tool
 * entries + declared tool names): a startup at every cap of SPEC §1.2 expands into 500 + 64 × 64
 * rows, so without the row bound one chunk of 200 would write ~900,000 rows in one transaction
 * while every other project's reads wait. The first pending startup is always taken, so a chunk
 * always advances. Counting the rows of work parses every candidate's lists, so it is done once,
 * by the chunk's first statement, which writes the chunk's last startup_seq for the others
 * (`startups_chunk_end`, one row): deriving it again in each statement cost 7 parses of 200
 * capped startups' lists per chunk.
 */
const CHOSEN = `chosen AS MATERIALIZED (
    SELECT startup_seq FROM (
      SELECT startup_seq, ROW_NUMBER() OVER w AS n, SUM(cost) OVER w AS running FROM (
        SELECT startup_seq, json_array_length(tools_json)
          + (SELECT COALESCE(SUM(json_array_length(d.value, '$.tools')), 0) FROM json_each(agree_declared_json) AS d) AS cost
        FROM raw_startups WHERE startup_seq > ${watermark} AND ${NOT_HELD} ORDER BY startup_seq LIMIT :chunk_startups)
      WINDOW w AS (ORDER BY startup_seq ROWS UNBOUNDED PRECEDING))
    WHERE n = 1 OR running <= :chunk_rows)`;

/**
 * The chunk `chooseStartups` wrote, as every later statement of the batch reads it. Startups of a
 * project a move holds are left out (they are moved unfolded, db/moves.ts).
 */
const CHUNK = `chunk AS MATERIALIZED (
    SELECT startup_seq FROM raw_startups
    WHERE startup_seq > (${chunkRow} ->> '$.from') AND startup_seq <= (${chunkRow} ->> '$.end') AND ${NOT_HELD})`;

/** Per project of the chunk, its latest startup (the highest startup_seq: the one that wins). */
const LATEST = `latest AS MATERIALIZED (
    SELECT r.project_id, r.startup_seq, r.tools_json FROM raw_startups r
    WHERE r.startup_seq IN (
      SELECT MAX(s.startup_seq) FROM chunk s CROSS JOIN raw_startups r2 ON r2.startup_seq = s.startup_seq GROUP BY r2.project_id))`;

export const STARTUP_CHUNK_SQL = {
  chooseStartups: `INSERT INTO rollup_state (name, value)
    WITH ${CHOSEN}
    SELECT '${STARTUPS_CHUNK}', json_object('from', ${watermark}, 'end', COALESCE((SELECT MAX(startup_seq) FROM chosen), ${watermark})) WHERE true
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`,

  // The registered list becomes the latest startup's, writing only what changed: a server sends
  // the same list with every new session (SPEC §4), and rewriting it each time cost a row per tool
  // per chunk (bench:cost, shared HTTP server). A tool no longer listed is deleted.
  deleteReplacedTools: `WITH ${CHUNK}, ${LATEST}
    DELETE FROM registered_tools WHERE project_id IN (SELECT project_id FROM latest)
      AND NOT EXISTS (SELECT 1 FROM latest l, json_each(l.tools_json) AS t
        WHERE l.project_id = registered_tools.project_id AND json_extract(t.value, '$.name') = registered_tools.tool_name)`,

  // A list naming one tool twice keeps its last entry (rows are inserted in list order). A row
  // that would not change is not written; `startup_seq` is the startup that last changed it.
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

  // Tool versions are counted in by the hourly fold (tool-versions.ts) behind their own watermark,
  // which starts where this one is the first time a chunk runs after migration 0029 (no row
  // written afterwards): startups folded before are counted in tool_versions already.
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

  // SPEC §2.4: a session's schema bytes are the sum of its latest startup's schema_bytes, and its
  // startups' receive times count in its first/last seen (ingest writes no session row; the calls
  // chunk folds in the calls' starts the same way): the client of the latest wins, a tie going to
  // the one folded in later.
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

  // `versions`: whether the hourly fold of tool versions has startups of a finished hour (:hour_ms) to
  // count in once this chunk commits (the watermark reads the chunk row this transaction wrote).
  report: `WITH ${CHUNK}
    SELECT (SELECT COUNT(*) FROM chunk) AS new_startups,
      EXISTS (SELECT 1 FROM raw_startups WHERE startup_seq > (SELECT MAX(startup_seq) FROM chunk)) AS more,
      ${TOOL_VERSIONS_PENDING_SQL} AS versions`,
} as const;

export type StartupChunkReport = { new_startups: number; more: number; versions: number };

export const STARTUP_CHUNK_STATEMENTS = 7;

/**
 * Rows of work one startup chunk may take on (tool entries + declared tool names; the writes are a
 * small multiple of it; test/e2e/tenant-isolation.test.ts shows what it bounds). 5,000 holds one
 * startup at every cap (500 + 64 × 64 = 4,596 rows) per chunk.
 */
export const MAX_STARTUP_CHUNK_ROWS = 5_000;

/**
 * One startups chunk; `hourMs` is the run's hour start, for the report's `versions`; `scope` the
 * run's decision on the projects it leaves alone (decided now for a chunk run on its own).
 */
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
