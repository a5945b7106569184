// The SQL of moving a project between databases (SPEC §7, migration 0027; steps in moves/steps.ts).
import { AGREEMENTS_WATERMARK, CALLS_CHUNK, CALLS_WATERMARK, INGEST_EPOCH, nextCallSeqSql, stateValueSql, startupsWatermarkSql, toolVersionsWatermarkSql } from "./rollup-state.ts";
import { seqBaseSql } from "./raw-writes.ts";
import { versionsOfStartupsSql } from "./tool-versions.ts";
import { IDEMPOTENCY_WINDOW_MS } from "../time.ts";

export const MOVE_STATES = ["copying", "switching", "draining", "done", "failed"] as const;
export type MoveState = (typeof MOVE_STATES)[number];
export const MOVE_PHASES = ["hold", "settle", "copy", "guard", "switch", "grace", "drain", "release", "cleanup", "rollback", "unhold", "finished"] as const;
export type MovePhase = (typeof MOVE_PHASES)[number];

export type MoveRow = {
  move_id: string;
  project_id: string;
  source: string;
  target: string;
  state: MoveState;
  phase: MovePhase;
  step_table: string | null;
  source_calls_seq: number | null;
  counts_json: string;
  steps: number;
  max_step_rows: number;
  failures: number;
  error: string | null;
  created_at_ms: number;
  wait_until_ms: number;
  switched_at_ms: number | null;
  finished_at_ms: number | null;
  lease_until_ms: number;
};

// A move refuses to start while a table with project_id is unnamed here, so a new table is never
// silently left behind.

export const DIRECTORY_TABLES = ["api_keys", "project_databases", "dashboard_sessions", "moves"] as const;
export const MOVE_TABLES = ["project_holds"] as const;
export const PENDING_TOOL_VERSIONS = "tool_versions:pending";

/**
 * Order matters: the day mark before hours and hours before days, since an inserted hour row adds
 * itself to its day row (migration 0029 triggers) and the copied day rows then overwrite that; the
 * outbox before the attempts that name it.
 */
export const COPIED_TABLES = [
  "projects", "registered_tools", "tool_versions", PENDING_TOOL_VERSIONS, "agreement_declarations", "agreement_days", "pair_days", "sessions",
  "call_state", "day_marks", "tool_hour_metrics", "tool_day_metrics", "recomputes", "recompute_hours", "recompute_pairs",
  "alert_destinations", "alert_rules", "alert_states", "alert_outbox", "alert_delivery_attempts",
] as const;
/**
 * Ingest may still write these into the source until the grace period after the switch ends. Batch
 * ids are copied earlier as guard rows so a resend reaching the target first is recognised.
 */
export const DRAINED_TABLES = ["call_batches", "raw_startups", "raw_agreements", "ingest_receipts"] as const;

export const GUARD_CURSOR = "guard:call_batches";

export const DELETED_TABLES = [...DRAINED_TABLES, ...[...COPIED_TABLES].reverse().filter((t) => t !== "projects" && t !== PENDING_TOOL_VERSIONS)];

const KNOWN_TABLES: readonly string[] = [...DIRECTORY_TABLES, ...MOVE_TABLES, ...COPIED_TABLES, ...DRAINED_TABLES];

export function unknownTables(tables: readonly string[]): string[] {
  return tables.filter((t) => !KNOWN_TABLES.includes(t));
}

// ---------------------------------------------------------------------------------------------
// The directory's `moves` rows
// ---------------------------------------------------------------------------------------------

const MOVE_COLUMNS = `move_id, project_id, source, target, state, phase, step_table, source_calls_seq, counts_json, steps,
  max_step_rows, failures, error, created_at_ms, wait_until_ms, switched_at_ms, finished_at_ms, lease_until_ms`;

/** Fails on the unique index when the project has an unfinished move. */
export function insertMoveStatement(db: D1Database, move: { move_id: string; project_id: string; source: string; target: string; created_at_ms: number }): D1PreparedStatement {
  return db
    .prepare("INSERT INTO moves (move_id, project_id, source, target, state, phase, created_at_ms) VALUES (?1, ?2, ?3, ?4, 'copying', 'hold', ?5)")
    .bind(move.move_id, move.project_id, move.source, move.target, move.created_at_ms);
}

export async function findMove(db: D1Database, moveId: string): Promise<MoveRow | null> {
  return db.prepare(`SELECT ${MOVE_COLUMNS} FROM moves WHERE move_id = ?1`).bind(moveId).first<MoveRow>();
}

export async function findRunningMove(db: D1Database, projectId: string): Promise<MoveRow | null> {
  return db.prepare(`SELECT ${MOVE_COLUMNS} FROM moves WHERE project_id = ?1 AND finished_at_ms IS NULL`).bind(projectId).first<MoveRow>();
}

/** The cron continues them, so a lost job message never strands one. */
export async function unfinishedMoveIds(db: D1Database): Promise<string[]> {
  const { results } = await db.prepare("SELECT move_id FROM moves WHERE finished_at_ms IS NULL ORDER BY created_at_ms").all<{ move_id: string }>();
  return results.map((r) => r.move_id);
}

/** Takes the move's lease until `untilMs` unless another job holds it: the move as it stands, or null. */
export async function claimMove(db: D1Database, moveId: string, nowMs: number, untilMs: number): Promise<MoveRow | null> {
  return db
    .prepare(`UPDATE moves SET lease_until_ms = ?3 WHERE move_id = ?1 AND finished_at_ms IS NULL AND lease_until_ms <= ?2 RETURNING ${MOVE_COLUMNS}`)
    .bind(moveId, nowMs, untilMs)
    .first<MoveRow>();
}

export async function releaseMove(db: D1Database, moveId: string): Promise<void> {
  await db.prepare("UPDATE moves SET lease_until_ms = 0 WHERE move_id = ?1").bind(moveId).run();
}

export type MoveChange = Partial<Pick<MoveRow,
  "state" | "phase" | "step_table" | "source_calls_seq" | "counts_json" | "steps" | "max_step_rows" | "failures" | "error" | "wait_until_ms" | "switched_at_ms" | "finished_at_ms">>;

const CHANGEABLE: readonly (keyof MoveChange)[] = [
  "state", "phase", "step_table", "source_calls_seq", "counts_json", "steps", "max_step_rows", "failures", "error", "wait_until_ms", "switched_at_ms", "finished_at_ms",
];

export function updateMoveStatement(db: D1Database, moveId: string, change: MoveChange): D1PreparedStatement {
  const names = CHANGEABLE.filter((name) => change[name] !== undefined);
  if (names.length === 0) throw new Error("updateMoveStatement: nothing to change");
  // Column names come from CHANGEABLE, never from input.
  const sets = names.map((name, i) => `${name} = ?${i + 2}`).join(", ");
  return db.prepare(`UPDATE moves SET ${sets} WHERE move_id = ?1`).bind(moveId, ...names.map((name) => change[name] ?? null));
}

/** A project without a row was in the first database. */
export function setProjectDatabaseStatement(db: D1Database, projectId: string, databaseName: string): D1PreparedStatement {
  return db
    .prepare("INSERT INTO project_databases (project_id, database_name) VALUES (?1, ?2) ON CONFLICT (project_id) DO UPDATE SET database_name = excluded.database_name")
    .bind(projectId, databaseName);
}

// ---------------------------------------------------------------------------------------------
// Holds (in the source and the target)
// ---------------------------------------------------------------------------------------------

export const HELD_PROJECTS_SQL = "(SELECT project_id FROM project_holds)";
export const NOT_HELD = `project_id NOT IN ${HELD_PROJECTS_SQL}`;

export type HoldRow = {
  project_id: string; move_id: string; role: "source" | "target" | "leaving"; startups_seq: number; agreements_seq: number; tool_versions_seq: number;
};
const HOLD_COLUMNS = "project_id, move_id, role, startups_seq, agreements_seq, tool_versions_seq";

/** The watermarks are written with the hold in one statement; an existing hold keeps its own. */
export async function holdProject(db: D1Database, projectId: string, moveId: string, role: "source" | "target"): Promise<HoldRow> {
  const [, read] = await db.batch([
    db
      .prepare(
        `INSERT INTO project_holds (${HOLD_COLUMNS})
         SELECT ?1, ?2, ?3, ${startupsWatermarkSql()}, ${stateValueSql(AGREEMENTS_WATERMARK)}, ${toolVersionsWatermarkSql()} WHERE true
         ON CONFLICT (project_id) DO NOTHING`,
      )
      .bind(projectId, moveId, role),
    db.prepare(`SELECT ${HOLD_COLUMNS} FROM project_holds WHERE project_id = ?1`).bind(projectId),
  ]);
  const hold = read!.results[0] as HoldRow | undefined;
  if (!hold || hold.move_id !== moveId) throw new Error("the project is held by another move");
  return hold;
}

export async function findHold(db: D1Database, projectId: string): Promise<HoldRow | null> {
  return db.prepare(`SELECT ${HOLD_COLUMNS} FROM project_holds WHERE project_id = ?1`).bind(projectId).first<HoldRow>();
}

export async function isBeingMovedAway(db: D1Database, projectId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS held FROM project_holds WHERE project_id = ?1 AND role = 'source'").bind(projectId).first<{ held: number }>();
  return row !== null;
}

export function setHoldRoleStatement(db: D1Database, projectId: string, moveId: string, role: HoldRow["role"]): D1PreparedStatement {
  return db.prepare("UPDATE project_holds SET role = ?3 WHERE project_id = ?1 AND move_id = ?2").bind(projectId, moveId, role);
}

/** The target numbers the moved project's calls above the source's. */
export async function callsWatermark(db: D1Database): Promise<number> {
  const row = await db.prepare(`SELECT ${nextCallSeqSql()} AS value`).first<{ value: number }>();
  return row?.value ?? 0;
}

/**
 * Renumbers what the hold kept from being folded above the table's highest number and the
 * watermark, in receive order, so the rollup folds each exactly once (the watermark may have passed
 * them meanwhile). The target's drained call_batches arrived after its first rows, so they are
 * renumbered too (SPEC §2.2 ties).
 */
export function releaseHoldStatements(
  db: D1Database,
  hold: { project_id: string; move_id: string; startups_seq: number; agreements_seq: number; tool_versions_seq: number },
  target: { callsSeq: number } | null,
): D1PreparedStatement[] {
  const p = hold.project_id;
  const m = hold.move_id;
  const base = (name: string) => `(SELECT CAST(cursor_json AS INTEGER) FROM move_cursors WHERE move_id = ?2 AND name = '${name}')`;
  const setBase = (name: string, sql: string) =>
    db
      .prepare(
        `INSERT INTO move_cursors (move_id, name, cursor_json, rows) WITH ${sql} SELECT ?1, '${name}', (SELECT base FROM seq_base), 0 WHERE true
         ON CONFLICT (move_id, name) DO UPDATE SET cursor_json = excluded.cursor_json`,
      )
      .bind(m);
  const statements: D1PreparedStatement[] = [];
  if (!target) {
    // After a failed move the source's hourly fold had skipped these startups; counted now.
    statements.push(
      db
        .prepare(
          `INSERT INTO tool_versions (project_id, tool_name, schema_hash, description_hash, description_norm, first_seen_ms, last_seen_ms, startups)
           SELECT * FROM (${versionsOfStartupsSql(`raw_startups AS r, json_each(r.tools_json) AS t
             WHERE r.project_id = ?1 AND r.startup_seq > ?2 AND r.startup_seq <= MIN(?3, ${toolVersionsWatermarkSql()})`)})
           WHERE true
           ${UPSERT_TOOL_VERSIONS}`,
        )
        .bind(p, hold.tool_versions_seq, hold.startups_seq),
    );
  }
  for (const [table, seq, watermark, fence, columns] of [
    ["raw_startups", "startup_seq", startupsWatermarkSql(), hold.startups_seq,
      "project_id, session_id, client_name, received_at_ms, sdk, mcp_sdk_version, transport, protocol_version, tools_json, agree_declared_json"],
    ["raw_agreements", "agreement_seq", stateValueSql(AGREEMENTS_WATERMARK), hold.agreements_seq,
      "project_id, session_id, field, tool_a, tool_b, agreed, checked_at_ms, window_ms, received_at_ms"],
  ] as const) {
    const name = `release:${table}`;
    statements.push(
      setBase(name, seqBaseSql(table, seq, watermark)),
      db
        .prepare(
          `INSERT INTO ${table} (${seq}, ${columns})
           SELECT ${base(name)} + ROW_NUMBER() OVER (ORDER BY received_at_ms, ${seq}), ${columns}
           FROM ${table} WHERE project_id = ?1 AND ${seq} > ?3 AND ${seq} <= ${base(name)}`,
        )
        .bind(p, m, fence),
      db.prepare(`DELETE FROM ${table} WHERE project_id = ?1 AND ${seq} > ?3 AND ${seq} <= ${base(name)}`).bind(p, m, fence),
    );
  }
  if (target) {
    const name = "release:call_batches";
    const columns = "project_id, received_at_ms, last_received_at_ms, epoch, call_count, chars, batch_ids, calls_json";
    statements.push(
      setBase(name, "seq_base AS MATERIALIZED (SELECT COALESCE((SELECT MAX(batch_seq) FROM call_batches), 0) AS base)"),
      db
        .prepare(
          `INSERT INTO call_batches (batch_seq, ${columns})
           SELECT ${base(name)} + ROW_NUMBER() OVER (ORDER BY received_at_ms, batch_seq), project_id, received_at_ms, last_received_at_ms,
             NULL, call_count, chars, batch_ids, calls_json
           FROM call_batches WHERE project_id = ?1 AND call_count > 0 AND batch_seq <= ${base(name)}`,
        )
        .bind(p, m),
      db.prepare(`DELETE FROM call_batches WHERE project_id = ?1 AND call_count > 0 AND batch_seq <= ${base(name)}`).bind(p, m),
      db
        .prepare(
          `INSERT INTO rollup_state (name, value) VALUES ('${CALLS_WATERMARK}', ?1)
           ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value)`,
        )
        .bind(target.callsSeq),
      // The next calls chunk numbers above its predecessor's base and calls (nextCallSeqSql).
      db
        .prepare(
          `UPDATE rollup_state SET value = json_set(value, '$.seq', MAX(value ->> '$.seq', ?1 - (value ->> '$.calls')))
           WHERE name = '${CALLS_CHUNK}'`,
        )
        .bind(target.callsSeq),
    );
  }
  statements.push(
    db.prepare("DELETE FROM move_cursors WHERE move_id = ?1 AND name LIKE 'release:%'").bind(m),
    db.prepare("DELETE FROM project_holds WHERE project_id = ?1 AND move_id = ?2").bind(p, m),
  );
  return statements;
}

const UPSERT_TOOL_VERSIONS = `ON CONFLICT (project_id, tool_name, schema_hash, description_hash) DO UPDATE SET
      description_norm = excluded.description_norm,
      first_seen_ms = MIN(first_seen_ms, excluded.first_seen_ms),
      last_seen_ms = MAX(last_seen_ms, excluded.last_seen_ms),
      startups = startups + excluded.startups`;

export function deleteCursorsStatement(db: D1Database, moveId: string): D1PreparedStatement {
  return db.prepare("DELETE FROM move_cursors WHERE move_id = ?1").bind(moveId);
}

// ---------------------------------------------------------------------------------------------
// One page of a table
// ---------------------------------------------------------------------------------------------

export type TableShape = { columns: string[]; key: string[] };

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

export async function tableShape(db: D1Database, table: string): Promise<TableShape> {
  const { results } = await db
    .prepare("SELECT name, pk FROM pragma_table_info(?1) ORDER BY cid")
    .bind(table)
    .all<{ name: string; pk: number }>();
  if (results.length === 0) throw new Error(`no table ${table}`);
  const key = results.filter((c) => c.pk > 0 && c.name !== "project_id").sort((a, b) => a.pk - b.pk).map((c) => c.name);
  return { columns: results.map((c) => c.name), key };
}

export type Cursor = { cursor: unknown[] | null; rows: number };

export async function readCursor(db: D1Database, moveId: string, name: string): Promise<Cursor> {
  const row = await db.prepare("SELECT cursor_json, rows FROM move_cursors WHERE move_id = ?1 AND name = ?2").bind(moveId, name).first<{ cursor_json: string; rows: number }>();
  return row ? { cursor: JSON.parse(row.cursor_json) as unknown[], rows: row.rows } : { cursor: null, rows: 0 };
}

export type PageQuery = {
  table: string; shape: TableShape; projectId: string; cursor: unknown[] | null; limit: number; nowMs: number; fence?: number;
  guard?: boolean;
  /** Ingest appends to them until the next rollup run closes them. */
  open?: boolean;
  upTo?: number;
};

function pageFilter(q: PageQuery): { sql: string; value: number | null } {
  if (q.table === "call_batches" && q.open) return { sql: `AND t.call_count > 0 AND t.epoch IS ${stateValueSql(INGEST_EPOCH)}`, value: null };
  if (q.table === "call_batches" && q.guard) return { sql: `AND (t.call_count > 0 OR t.last_received_at_ms >= ?2 - ${IDEMPOTENCY_WINDOW_MS})`, value: q.nowMs };
  // Emptied rows all predate the hold: the guard rows hold their ids.
  if (q.table === "call_batches") return { sql: "AND t.call_count > 0", value: null };
  if (q.table === "raw_startups" && q.upTo !== undefined) return { sql: `AND t.startup_seq > ?2 AND t.startup_seq <= ${Math.trunc(q.upTo)}`, value: q.fence ?? 0 };
  if (q.table === "raw_startups") return { sql: "AND t.startup_seq > ?2", value: q.fence ?? 0 };
  if (q.table === "raw_agreements") return { sql: "AND t.agreement_seq > ?2", value: q.fence ?? 0 };
  return { sql: "", value: null };
}

export async function readPage(db: D1Database, q: PageQuery): Promise<unknown[][]> {
  const { table, shape } = q;
  const columns = shape.columns.map((c) => `t.${quote(c)}`);
  if (table === "alert_delivery_attempts") columns.push("(SELECT o.dedupe_key FROM alert_outbox o WHERE o.notification_id = t.notification_id)");
  const params: unknown[] = [q.projectId];
  const filter = pageFilter(q);
  if (filter.value !== null) params.push(filter.value);
  const key = shape.key.map((c) => `t.${quote(c)}`);
  let after = "";
  if (q.cursor && key.length > 0) {
    after = `AND (${key.join(", ")}) > (${key.map((_, i) => `?${params.length + i + 1}`).join(", ")})`;
    params.push(...q.cursor);
  }
  const order = key.length > 0 ? `ORDER BY ${key.join(", ")}` : "";
  return db
    .prepare(`SELECT ${columns.join(", ")} FROM ${quote(table)} AS t WHERE t.project_id = ?1 ${filter.sql} ${after} ${order} LIMIT ${Math.trunc(q.limit)}`)
    .bind(...params)
    .raw<unknown[]>();
}

export function keyOf(shape: TableShape, row: readonly unknown[]): unknown[] {
  return shape.key.map((c) => row[shape.columns.indexOf(c)]);
}

type WritePage = {
  moveId: string; table: string; shape: TableShape; rows: unknown[][]; previous: unknown[] | null; next: unknown[];
  guard?: boolean;
  versions?: boolean;
};

function cursorStatement(db: D1Database, p: WritePage, cursorName: string): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO move_cursors (move_id, name, cursor_json, rows) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (move_id, name) DO UPDATE SET cursor_json = excluded.cursor_json, rows = rows + excluded.rows WHERE move_cursors.cursor_json IS ?5`,
    )
    .bind(p.moveId, cursorName, JSON.stringify(p.next), p.rows.length, p.previous === null ? "\u0000none" : JSON.stringify(p.previous));
}

/**
 * Rows are written only while the cursor is where the page was read, so a step run twice copies
 * nothing twice.
 */
export function writePageStatements(
  db: D1Database,
  p: WritePage,
): D1PreparedStatement[] {
  const { table, shape } = p;
  const cursorName = p.guard ? GUARD_CURSOR : p.versions ? PENDING_TOOL_VERSIONS : table;
  const field = (name: string) => `value ->> ${shape.columns.indexOf(name)}`;
  const guard = `(SELECT cursor_json FROM move_cursors WHERE move_id = ?2 AND name = ?3) IS ?4`;
  let columns: string[];
  let values: string[];
  let conflict = "ON CONFLICT DO NOTHING";
  let withSql = "";
  if (table === "call_batches" && p.guard) {
    // Only the batch ids and times, as an emptied row: what ingest's resend guard reads (db/raw-writes.ts).
    columns = shape.columns.filter((c) => c !== "batch_seq");
    const emptied: Record<string, string> = { epoch: "NULL", call_count: "0", chars: "2", calls_json: "'[]'" };
    values = columns.map((c) => emptied[c] ?? field(c));
    conflict = "";
  } else if (table === "call_batches") {
    // Closed, so nothing appends to it.
    columns = shape.columns.filter((c) => c !== "batch_seq");
    values = columns.map((c) => (c === "epoch" ? "NULL" : field(c)));
    conflict = "";
  } else if (table === "raw_startups" && p.versions) {
    const r = `(SELECT ${["project_id", "startup_seq", "received_at_ms", "tools_json"].map((c) => `${field(c)} AS ${c}`).join(", ")} FROM json_each(?1)
      WHERE ${guard}) AS r, json_each(r.tools_json) AS t`;
    const insert = db
      .prepare(
        `INSERT INTO tool_versions (project_id, tool_name, schema_hash, description_hash, description_norm, first_seen_ms, last_seen_ms, startups)
         SELECT * FROM (${versionsOfStartupsSql(r)}) WHERE true ${UPSERT_TOOL_VERSIONS}`,
      )
      .bind(JSON.stringify(p.rows), p.moveId, cursorName, p.previous === null ? null : JSON.stringify(p.previous));
    return [insert, cursorStatement(db, p, cursorName)];
  } else if (table === "raw_startups" || table === "raw_agreements") {
    // Numbered above the target's rows and watermark, in the source's order (db/raw-writes.ts).
    const seq = table === "raw_startups" ? "startup_seq" : "agreement_seq";
    withSql = `WITH ${seqBaseSql(table, seq, table === "raw_startups" ? startupsWatermarkSql() : stateValueSql(AGREEMENTS_WATERMARK))}`;
    columns = shape.columns;
    values = columns.map((c) => (c === seq ? "(SELECT base FROM seq_base) + key + 1" : field(c)));
    conflict = "";
  } else if (table === "alert_outbox") {
    // The target numbers the notification itself (AUTOINCREMENT); dedupe_key is unique, so a copy run twice is one row.
    columns = shape.columns.filter((c) => c !== "notification_id");
    values = columns.map(field);
  } else if (table === "alert_delivery_attempts") {
    columns = shape.columns;
    const dedupe = `value ->> ${shape.columns.length}`;
    values = columns.map((c) => (c === "notification_id" ? `(SELECT o.notification_id FROM alert_outbox o WHERE o.dedupe_key = ${dedupe})` : field(c)));
  } else {
    columns = shape.columns;
    values = columns.map(field);
    if (table === "tool_day_metrics") {
      // Overwrites what the hour rows' trigger summed (see COPIED_TABLES).
      const rest = columns.filter((c) => c !== "project_id" && !shape.key.includes(c));
      conflict = `ON CONFLICT DO UPDATE SET ${rest.map((c) => `${quote(c)} = excluded.${quote(c)}`).join(", ")}`;
    }
  }
  const insert = db
    .prepare(
      `INSERT INTO ${quote(table)} (${columns.map(quote).join(", ")}) ${withSql}
       SELECT ${values.join(", ")} FROM json_each(?1) WHERE ${guard} ORDER BY key ${conflict}`,
    )
    .bind(JSON.stringify(p.rows), p.moveId, cursorName, p.previous === null ? null : JSON.stringify(p.previous));
  return [insert, cursorStatement(db, p, cursorName)];
}

export async function deletePage(db: D1Database, table: string, shape: TableShape, projectId: string, limit: number): Promise<number> {
  const key = ["project_id", ...shape.key].filter((c, i, all) => all.indexOf(c) === i).map(quote);
  // A table whose only key is project_id (projects) is deleted by project_id alone.
  const sql = shape.key.length === 0
    ? `DELETE FROM ${quote(table)} WHERE project_id = ?1`
    : `DELETE FROM ${quote(table)} WHERE (${key.join(", ")}) IN (SELECT ${key.join(", ")} FROM ${quote(table)} WHERE project_id = ?1 LIMIT ?2)`;
  const result = await (shape.key.length === 0 ? db.prepare(sql).bind(projectId) : db.prepare(sql).bind(projectId, limit)).run();
  return result.meta.changes;
}
