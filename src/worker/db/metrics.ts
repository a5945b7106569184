// Read queries over the rollup tables other than the counter sums; nothing here divides or rounds.
import { dayRowsSourceSql } from "./day-marks.ts";
import { toolVersionsSourceSql } from "./tool-versions.ts";
import { PAIR_KEY, tupleField } from "./tuples.ts";

export type RowFilter = {
  projectId: string;
  startMs: number;
  endMs: number;
  client?: string | undefined;
  tool?: string | undefined;
};

export type RegisteredToolRow = {
  tool_name: string;
  schema_bytes: number;
  schema_hash: string | null;
  description_hash: string | null;
  description_norm: string | null;
  requires_authorization: number;
  requires_verified_identity: number;
};

/** The project's current tool list: its most recently received startup (SPEC §2.4). */
export async function listRegisteredTools(db: D1Database, projectId: string): Promise<RegisteredToolRow[]> {
  const result = await db
    .prepare(
      "SELECT tool_name, schema_bytes, schema_hash, description_hash, description_norm, " +
        "requires_authorization, requires_verified_identity FROM registered_tools WHERE project_id = ?1 " +
        "ORDER BY tool_name",
    )
    .bind(projectId)
    .all<RegisteredToolRow>();
  return result.results;
}

export async function readAsOfMs(db: D1Database): Promise<number | null> {
  const row = await db.prepare("SELECT value FROM rollup_state WHERE name = 'as_of_ms'").first<{ value: number }>();
  return row ? Number(row.value) : null;
}

/** The reconciliation's D1 side. */
export async function callsPerHourAndTool(
  db: D1Database,
  projectIds: readonly string[],
  startMs: number,
  endMs: number,
): Promise<{ project_id: string; hour_ms: number; tool: string; calls: number }[]> {
  // Per project, so each is a seek on the primary key (project_id, hour_start_ms, …), never a scan.
  const result = await db
    .prepare(
      "SELECT project_id, hour_start_ms AS hour_ms, tool_name AS tool, SUM(calls) AS calls FROM tool_hour_metrics " +
        "WHERE project_id IN (SELECT value FROM json_each(?3)) AND hour_start_ms >= ?1 AND hour_start_ms < ?2 " +
        "GROUP BY project_id, hour_start_ms, tool_name",
    )
    .bind(startMs, endMs, JSON.stringify(projectIds))
    .all<{ project_id: string; hour_ms: number; tool: string; calls: number }>();
  return result.results;
}

export type PairRow = { from_tool: string; to_tool: string; count: number };

/** SPEC §2.4: a `client` filter keeps pairs whose first call came from that client. */
export async function sumPairs(db: D1Database, filter: RowFilter): Promise<PairRow[]> {
  const params: unknown[] = [filter.projectId, filter.startMs, filter.endMs];
  let sql = `SELECT from_tool, to_tool, SUM(pair_count) AS count FROM (
      SELECT ${tupleField(PAIR_KEY, "from_tool", "p.key")} AS from_tool, ${tupleField(PAIR_KEY, "to_tool", "p.key")} AS to_tool, p.value AS pair_count
      FROM pair_days d, json_each(d.pairs_json) AS p
      WHERE d.project_id = ?1 AND d.day_start_ms >= ?2 AND d.day_start_ms < ?3`;
  if (filter.client !== undefined) {
    params.push(filter.client);
    sql += ` AND d.client_name = ?${params.length}`;
  }
  sql += ")";
  if (filter.tool !== undefined) {
    params.push(filter.tool);
    sql += ` WHERE from_tool = ?${params.length} OR to_tool = ?${params.length}`;
  }
  // A pair a late call moved elsewhere can sum to 0 over the range: never list it.
  sql += " GROUP BY from_tool, to_tool HAVING SUM(pair_count) > 0 ORDER BY count DESC, from_tool, to_tool";
  const result = await db
    .prepare(sql)
    .bind(...params)
    .all<PairRow>();
  return result.results.map((r) => ({ from_tool: r.from_tool, to_tool: r.to_tool, count: Number(r.count) }));
}

export type SessionSums = {
  sessions: number;
  calls: number;
  response_bytes_sum: number;
  schema_bytes_sum: number;
  /** Calls in the period's days sent without a session (SPEC §2.2, §2.4), from the day rows. */
  calls_without_session: number;
  /** Sessions with no tool list (no startup: OTLP sessions, SPEC §10), whose schema size is unknown. */
  sessions_without_schema: number;
};

/**
 * SPEC §2.4: all of a session's calls, never sums of daily counts, so a session crossing midnight
 * counts once. One statement for every period (the dashboard compares two).
 */
export async function sumSessions(
  db: D1Database,
  projectId: string,
  periods: readonly { startMs: number; endMs: number }[],
  client: string | undefined,
): Promise<SessionSums[]> {
  if (periods.length === 0) return [];
  const params: unknown[] = [projectId];
  let clientSql = "";
  if (client !== undefined) {
    params.push(client);
    clientSql = " AND client_name = ?2";
  }
  const selects = periods.map((period, index) => {
    params.push(period.startMs, period.endMs);
    const [start, end] = [`?${params.length - 1}`, `?${params.length}`];
    return `SELECT ${index} AS period, COUNT(*) AS sessions, COALESCE(SUM(calls), 0) AS calls,
        COALESCE(SUM(response_bytes_sum), 0) AS response_bytes_sum, COALESCE(SUM(schema_bytes_sum), 0) AS schema_bytes_sum,
        COALESCE(SUM(schema_bytes_sum = 0), 0) AS sessions_without_schema,
        (SELECT COALESCE(SUM(calls_without_session), 0) FROM ${dayRowsSourceSql(["calls_without_session"], "?1", start, end)}
          WHERE true${clientSql}) AS calls_without_session
      FROM sessions WHERE project_id = ?1 AND first_seen_ms >= ${start} AND first_seen_ms < ${end}${clientSql}`;
  });
  const result = await db
    .prepare(selects.join(" UNION ALL "))
    .bind(...params)
    .all<SessionSums & { period: number }>();
  return periods.map((_, index) => {
    const row = result.results.find((r) => Number(r.period) === index);
    return {
      sessions: Number(row?.sessions ?? 0),
      calls: Number(row?.calls ?? 0),
      response_bytes_sum: Number(row?.response_bytes_sum ?? 0),
      schema_bytes_sum: Number(row?.schema_bytes_sum ?? 0),
      calls_without_session: Number(row?.calls_without_session ?? 0),
      sessions_without_schema: Number(row?.sessions_without_schema ?? 0),
    };
  });
}

export type ToolVersionRow = {
  tool_name: string;
  schema_hash: string;
  description_hash: string;
  description_norm: string | null;
  first_seen_ms: number;
  last_seen_ms: number;
  startups: number;
};

/** Every (schema_hash, description_hash) each tool has been registered with (SPEC §2.5). */
export async function listToolVersions(
  db: D1Database,
  projectId: string,
  tool?: string,
): Promise<ToolVersionRow[]> {
  const params: unknown[] = [projectId];
  let sql =
    "SELECT tool_name, schema_hash, description_hash, description_norm, first_seen_ms, last_seen_ms, startups " +
    `FROM ${toolVersionsSourceSql("?1")} WHERE project_id = ?1`;
  if (tool !== undefined) {
    params.push(tool);
    sql += " AND tool_name = ?2";
  }
  sql += " ORDER BY tool_name, first_seen_ms, schema_hash, description_hash";
  const result = await db
    .prepare(sql)
    .bind(...params)
    .all<ToolVersionRow>();
  return result.results;
}

export type AgreementRow = { field: string; tool_a: string; tool_b: string; checks: number; disagreements: number };

/** Agreement verdicts summed over the days in range (SPEC §2.5). */
export async function sumAgreement(db: D1Database, filter: Omit<RowFilter, "client">): Promise<AgreementRow[]> {
  const params: unknown[] = [filter.projectId, filter.startMs, filter.endMs];
  let sql =
    "SELECT field, tool_a, tool_b, SUM(checks) AS checks, SUM(disagreements) AS disagreements FROM agreement_days " +
    "WHERE project_id = ?1 AND day_start_ms >= ?2 AND day_start_ms < ?3";
  if (filter.tool !== undefined) {
    params.push(filter.tool);
    sql += ` AND (tool_a = ?${params.length} OR tool_b = ?${params.length})`;
  }
  sql += " GROUP BY field, tool_a, tool_b ORDER BY field, tool_a, tool_b";
  const result = await db
    .prepare(sql)
    .bind(...params)
    .all<AgreementRow>();
  return result.results.map((r) => ({ ...r, checks: Number(r.checks), disagreements: Number(r.disagreements) }));
}

export type DeclarationRow = { field: string; tool_name: string; last_declared_ms: number };

/** Fields declared in `agree_declared` by the project's startups, with their tools. */
export async function listAgreementDeclarations(db: D1Database, projectId: string): Promise<DeclarationRow[]> {
  const result = await db
    .prepare(
      "SELECT field, tool_name, last_declared_ms FROM agreement_declarations WHERE project_id = ?1 " +
        "ORDER BY field, tool_name",
    )
    .bind(projectId)
    .all<DeclarationRow>();
  return result.results;
}
