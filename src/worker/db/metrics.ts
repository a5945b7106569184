// Read queries over the rollup tables (SPEC §2): sums of additive counters and latency buckets,
// grouped by tool, client or time. Nothing here divides: rates are made at read time by
// metrics-report.ts from these sums.
import type { DurationHistogram } from "../histogram.ts";
import { DAY_MS, HOUR_MS } from "../time.ts";
import { FINAL_AFTER_MS, LruCache, finalBoundaryMs } from "./metrics-cache.ts";

// The UTC hour and day the rollup keys its rows by, for the routes and the dashboard.
export { DAY_MS, HOUR_MS };

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
 * Rows are concatenated per (group, client, block of this many days) so that no concatenated
 * string nears D1's 2,000,000-byte limit on a value: a block holds at most 32 rows per client.
 */
const CONCAT_BLOCK_MS = 32 * DAY_MS;

/**
 * Sums the counters and latency buckets of the matching rows, one group per tool, client, time
 * bucket (the row's hour or day start, as a decimal string) or one group `""` for everything.
 *
 * Histograms are summed in the worker, not in SQL: SQLite's json_each costs about a microsecond per
 * bucket (90 days × 50 tools × 5 clients × ~50 buckets took over a second), while one JSON.parse of
 * the concatenated histograms of a group and a loop over them costs a few tens of nanoseconds per
 * bucket. One query: counters summed and histograms concatenated per (group, client, 32-day block),
 * then folded per group here.
 */
async function queryCounterGroups(
  db: D1Database,
  filter: CounterFilter,
  grain: Grain,
  groupBy: GroupBy,
  options: { histograms?: boolean } = {},
): Promise<Map<string, CounterGroup>> {
  const { table, time } = TABLE[grain];
  const key = groupExpression(groupBy, grain);
  const where = whereClause(filter, grain);
  const sums = COUNTER_COLUMNS.map((c) => `SUM(m.${c}) AS ${c}`).join(", ");
  const withHistograms = options.histograms ?? true;
  const histograms = withHistograms ? ", group_concat(m.duration_histogram_json, ',') AS histograms_json" : "";
  const sql = withHistograms
    ? `SELECT ${key} AS group_key, ${sums}${histograms} FROM ${table} AS m WHERE ${where.sql} ` +
      `GROUP BY group_key, m.client_name, m.${time} / ${CONCAT_BLOCK_MS}`
    : `SELECT ${key} AS group_key, ${sums} FROM ${table} AS m WHERE ${where.sql} GROUP BY group_key`;
  const result = await db
    .prepare(sql)
    .bind(...where.params)
    .all<Record<string, unknown>>();
  const groups = new Map<string, CounterGroup>();
  for (const row of result.results) {
    const groupKey = String(row.group_key);
    let group = groups.get(groupKey);
    if (!group) {
      group = { counters: zeroCounters(), histogram: {} };
      groups.set(groupKey, group);
    }
    for (const column of COUNTER_COLUMNS) group.counters[column] += Number(row[column] ?? 0);
    if (typeof row.histograms_json === "string" && row.histograms_json.length > 0) {
      const parts = JSON.parse(`[${row.histograms_json}]`) as Record<string, number>[];
      const into = group.histogram;
      for (const part of parts) for (const bucket in part) into[bucket] = (into[bucket] ?? 0) + (part[bucket] ?? 0);
    }
  }
  return groups;
}

/** Sums over final days (metrics-cache.ts), per project and request shape. */
const finalSums = new LruCache<Map<string, CounterGroup>>(64);

/** Test hook: forget every cached sum. */
export function clearFinalSumsCache(): void {
  finalSums.clear();
}

function cloneGroup(group: CounterGroup): CounterGroup {
  return { counters: { ...group.counters }, histogram: { ...group.histogram } };
}

function mergeGroupMaps(a: Map<string, CounterGroup>, b: Map<string, CounterGroup>): Map<string, CounterGroup> {
  const merged = new Map<string, CounterGroup>();
  for (const [key, group] of a) merged.set(key, cloneGroup(group));
  for (const [key, group] of b) {
    const into = merged.get(key);
    if (!into) {
      merged.set(key, cloneGroup(group));
      continue;
    }
    addCounters(into.counters, group.counters);
    for (const bucket in group.histogram) into.histogram[bucket] = (into.histogram[bucket] ?? 0) + (group.histogram[bucket] ?? 0);
  }
  return merged;
}

/**
 * Sums the counters and latency buckets of the matching rows, one group per tool, client, time
 * bucket (the row's hour or day start, as a decimal string) or one group `""` for everything.
 * Day reads reaching further back than FINAL_AFTER_MS take the final days' sums from the isolate's
 * cache (filled on first use) and read only the days that may still change.
 */
export async function sumCounterGroups(
  db: D1Database,
  filter: CounterFilter,
  grain: Grain,
  groupBy: GroupBy,
  options: { histograms?: boolean } = {},
): Promise<Map<string, CounterGroup>> {
  if (grain !== "day" || filter.startMs >= Date.now() - FINAL_AFTER_MS) {
    return queryCounterGroups(db, filter, grain, groupBy, options);
  }
  const boundary = finalBoundaryMs(await readAsOfMs(db));
  const finalEndMs = boundary === null ? filter.startMs : Math.min(filter.endMs, boundary);
  if (finalEndMs <= filter.startMs) return queryCounterGroups(db, filter, grain, groupBy, options);
  const withHistograms = options.histograms ?? true;
  const key = JSON.stringify([filter.projectId, groupBy, withHistograms, filter.client ?? null, filter.tool ?? null, filter.startMs, finalEndMs]);
  let final = finalSums.get(key);
  const [fromDb, live] = await Promise.all([
    final ? undefined : queryCounterGroups(db, { ...filter, endMs: finalEndMs }, grain, groupBy, options),
    finalEndMs < filter.endMs
      ? queryCounterGroups(db, { ...filter, startMs: finalEndMs }, grain, groupBy, options)
      : new Map<string, CounterGroup>(),
  ]);
  if (fromDb) {
    final = fromDb;
    finalSums.set(key, fromDb);
  }
  return mergeGroupMaps(final ?? new Map(), live);
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
  // A pair a late call moved elsewhere drops to 0 before the rollup deletes it: never list it.
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
