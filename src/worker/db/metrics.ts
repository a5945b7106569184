// Read queries over the rollup tables (SPEC §2): sums of additive counters and latency buckets,
// grouped by tool, client or time. Nothing here divides: rates are made at read time by
// metrics-report.ts from these sums.
import type { DurationHistogram } from "../histogram.ts";

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;

/** The additive counters of SPEC §2.1–2.2, as summed over any set of rollup rows. */
export type Counters = {
  calls: number;
  ok: number;
  empty: number;
  bad_args: number;
  tool_error: number;
  crashed: number;
  retries: number;
  first_call_attempts: number;
  first_call_ok: number;
  response_bytes_sum: number;
  duration_ms_sum: number;
};

export const COUNTER_COLUMNS = [
  "calls",
  "ok",
  "empty",
  "bad_args",
  "tool_error",
  "crashed",
  "retries",
  "first_call_attempts",
  "first_call_ok",
  "response_bytes_sum",
  "duration_ms_sum",
] as const satisfies readonly (keyof Counters)[];

export function zeroCounters(): Counters {
  return {
    calls: 0,
    ok: 0,
    empty: 0,
    bad_args: 0,
    tool_error: 0,
    crashed: 0,
    retries: 0,
    first_call_attempts: 0,
    first_call_ok: 0,
    response_bytes_sum: 0,
    duration_ms_sum: 0,
  };
}

export function addCounters(into: Counters, from: Counters): Counters {
  for (const column of COUNTER_COLUMNS) into[column] += from[column];
  return into;
}

/** Counters and the summed latency histogram of one group. */
export type CounterGroup = { counters: Counters; histogram: DurationHistogram };

/**
 * Which rows to sum. `startMs`/`endMs` bound the row's hour or day start (`startMs` inclusive,
 * `endMs` exclusive); `client` and `tool` are exact matches and combine with AND.
 */
export type CounterFilter = {
  projectId: string;
  startMs: number;
  endMs: number;
  client?: string | undefined;
  tool?: string | undefined;
};

/** `day` reads tool_day_metrics (what range reads use); `hour` reads tool_hour_metrics. */
export type Grain = "hour" | "day";

export type GroupBy = "tool" | "client" | "time" | "all";

const TABLE = {
  day: { table: "tool_day_metrics", time: "day_start_ms" },
  hour: { table: "tool_hour_metrics", time: "hour_start_ms" },
} as const satisfies Record<Grain, { table: string; time: string }>;

function groupExpression(groupBy: GroupBy, grain: Grain): string {
  switch (groupBy) {
    case "tool":
      return "m.tool_name";
    case "client":
      return "m.client_name";
    case "time":
      return `m.${TABLE[grain].time}`;
    case "all":
      return "''";
  }
}

function whereClause(filter: CounterFilter, grain: Grain): { sql: string; params: unknown[] } {
  const time = `m.${TABLE[grain].time}`;
  const params: unknown[] = [filter.projectId, filter.startMs, filter.endMs];
  let sql = `m.project_id = ?1 AND ${time} >= ?2 AND ${time} < ?3`;
  if (filter.client !== undefined) {
    params.push(filter.client);
    sql += ` AND m.client_name = ?${params.length}`;
  }
  if (filter.tool !== undefined) {
    params.push(filter.tool);
    sql += ` AND m.tool_name = ?${params.length}`;
  }
  return { sql, params };
}

/**
 * Sums the counters and latency buckets of the matching rows, one group per tool, client, time
 * bucket (the row's hour or day start, as a decimal string) or one group `""` for everything.
 * Two queries: the counters, and the histograms summed bucket-wise in SQL with json_each (one
 * small row per (group, bucket) crosses from D1 instead of every row's JSON).
 */
export async function sumCounterGroups(
  db: D1Database,
  filter: CounterFilter,
  grain: Grain,
  groupBy: GroupBy,
  options: { histograms?: boolean } = {},
): Promise<Map<string, CounterGroup>> {
  const { table } = TABLE[grain];
  const key = groupExpression(groupBy, grain);
  const where = whereClause(filter, grain);
  const sums = COUNTER_COLUMNS.map((c) => `SUM(m.${c}) AS ${c}`).join(", ");
  const counterSql = `SELECT ${key} AS group_key, ${sums} FROM ${table} AS m WHERE ${where.sql} GROUP BY group_key`;
  const statements = [db.prepare(counterSql).bind(...where.params)];
  const withHistograms = options.histograms ?? true;
  if (withHistograms) {
    const histogramSql =
      `SELECT ${key} AS group_key, CAST(j.key AS INTEGER) AS bucket, SUM(j.value) AS n ` +
      `FROM ${table} AS m, json_each(m.duration_histogram_json) AS j WHERE ${where.sql} GROUP BY group_key, bucket`;
    statements.push(db.prepare(histogramSql).bind(...where.params));
  }
  const [counterResult, histogramResult] = await db.batch<Record<string, unknown>>(statements);
  const groups = new Map<string, CounterGroup>();
  for (const row of counterResult?.results ?? []) {
    const counters = zeroCounters();
    for (const column of COUNTER_COLUMNS) counters[column] = Number(row[column] ?? 0);
    groups.set(String(row.group_key), { counters, histogram: {} });
  }
  for (const row of histogramResult?.results ?? []) {
    const group = groups.get(String(row.group_key));
    if (group) group.histogram[String(row.bucket)] = Number(row.n);
  }
  return groups;
}

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

/** `rollup_state.as_of_ms`: the time the metrics are complete up to, or null before the first rollup. */
export async function readAsOfMs(db: D1Database): Promise<number | null> {
  const row = await db.prepare("SELECT value FROM rollup_state WHERE name = 'as_of_ms'").first<{ value: number }>();
  return row ? Number(row.value) : null;
}

export type PairRow = { from_tool: string; to_tool: string; count: number };

/**
 * Tool pairs summed over the days in range (SPEC §2.4). A `tool` filter keeps pairs where the tool
 * is on either side; a `client` filter keeps pairs whose first call came from that client.
 */
export async function sumPairs(db: D1Database, filter: CounterFilter): Promise<PairRow[]> {
  const params: unknown[] = [filter.projectId, filter.startMs, filter.endMs];
  let sql =
    "SELECT from_tool, to_tool, SUM(pair_count) AS count FROM tool_pair_days " +
    "WHERE project_id = ?1 AND day_start_ms >= ?2 AND day_start_ms < ?3";
  if (filter.client !== undefined) {
    params.push(filter.client);
    sql += ` AND client_name = ?${params.length}`;
  }
  if (filter.tool !== undefined) {
    params.push(filter.tool);
    sql += ` AND (from_tool = ?${params.length} OR to_tool = ?${params.length})`;
  }
  sql += " GROUP BY from_tool, to_tool ORDER BY count DESC, from_tool, to_tool";
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
};

/**
 * Sessions whose first seen falls in [startMs, endMs), with all their calls (SPEC §2.4: never sums of
 * daily counts, so a session crossing midnight counts once); `client` matches the latest client.
 */
export async function sumSessions(
  db: D1Database,
  filter: Omit<CounterFilter, "tool">,
): Promise<SessionSums> {
  const params: unknown[] = [filter.projectId, filter.startMs, filter.endMs];
  let sql =
    "SELECT COUNT(*) AS sessions, COALESCE(SUM(calls), 0) AS calls, " +
    "COALESCE(SUM(response_bytes_sum), 0) AS response_bytes_sum, COALESCE(SUM(schema_bytes_sum), 0) AS schema_bytes_sum " +
    "FROM sessions WHERE project_id = ?1 AND first_seen_ms >= ?2 AND first_seen_ms < ?3";
  if (filter.client !== undefined) {
    params.push(filter.client);
    sql += ` AND client_name = ?${params.length}`;
  }
  const row = await db
    .prepare(sql)
    .bind(...params)
    .first<SessionSums>();
  return {
    sessions: Number(row?.sessions ?? 0),
    calls: Number(row?.calls ?? 0),
    response_bytes_sum: Number(row?.response_bytes_sum ?? 0),
    schema_bytes_sum: Number(row?.schema_bytes_sum ?? 0),
  };
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
    "FROM tool_versions WHERE project_id = ?1";
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
export async function sumAgreement(db: D1Database, filter: Omit<CounterFilter, "client">): Promise<AgreementRow[]> {
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

/** Distinct client names with calls in range (for the dashboard's client picker). */
export async function listClients(db: D1Database, filter: Omit<CounterFilter, "client" | "tool">): Promise<string[]> {
  const result = await db
    .prepare(
      "SELECT DISTINCT client_name FROM tool_day_metrics WHERE project_id = ?1 AND day_start_ms >= ?2 " +
        "AND day_start_ms < ?3 ORDER BY client_name",
    )
    .bind(filter.projectId, filter.startMs, filter.endMs)
    .all<{ client_name: string }>();
  return result.results.map((r) => r.client_name);
}
