// Sums of the counters over the rollup tables in as few D1 statements as possible (one UNION ALL per
// request), built from COUNTERS so a new counter needs no change here. Rates are counterFigures()'.
import { CONCAT_BLOCK_MS, COUNTER_TABLES, readCounterRows, type CounterRowsBranch } from "../db/counter-rows.ts";
import { dayRowsSourceSql } from "../db/day-marks.ts";
import { COUNTER_NAMES, addCounters, zeroCounters, type CounterGroup, type Counters } from "./counters.ts";
import { FINAL_AFTER_MS, LruCache, finalBoundaryMs } from "./final-days.ts";
import type { Grain } from "./query.ts";
import type { ReadScope } from "./scope.ts";

/**
 * Which rows to sum. `startMs`/`endMs` bound the row's hour or day start (`startMs` inclusive,
 * `endMs` exclusive); `client` and `tool` are exact matches and combine with AND.
 */
export type CounterFilter = {
  startMs: number;
  endMs: number;
  client?: string | undefined;
  tool?: string | undefined;
};

export type GroupBy = "tool" | "client" | "time" | "all";

/** One set of sums: rows of `filter` at `grain`, one group per `groupBy` value. */
export type CounterRequest = { filter: CounterFilter; grain: Grain; groupBy: GroupBy; histograms?: boolean };

/** The sums of every counter of COUNTERS, read when a statement is built (a few names: nothing to cache). */
const sumsSql = () => COUNTER_NAMES.map((c) => `SUM(m.${c}) AS ${c}`).join(", ");

function groupExpression(groupBy: GroupBy, grain: Grain): string {
  switch (groupBy) {
    case "tool":
      return "m.tool_name";
    case "client":
      return "m.client_name";
    case "time":
      return `m.${COUNTER_TABLES[grain].time}`;
    case "all":
      return "''";
  }
}

/**
 * The SELECT of one request. Histograms are concatenated per (group, client, CONCAT_BLOCK_MS block)
 * and folded in foldRows(): one JSON.parse is far cheaper than SQLite's json_each per bucket
 * (docs/benchmarks.md, bench:read).
 */
function branchOf(projectId: string, request: CounterRequest): CounterRowsBranch {
  const { table, time } = COUNTER_TABLES[request.grain];
  const key = groupExpression(request.groupBy, request.grain);
  const params: unknown[] = [projectId, request.filter.startMs, request.filter.endMs];
  // `?n` placeholders are numbered by readCounterRows (`$1` is this branch's first parameter).
  let where = `m.project_id = $1 AND m.${time} >= $2 AND m.${time} < $3`;
  if (request.filter.client !== undefined) {
    params.push(request.filter.client);
    where += ` AND m.client_name = $${params.length}`;
  }
  if (request.filter.tool !== undefined) {
    params.push(request.filter.tool);
    where += ` AND m.tool_name = $${params.length}`;
  }
  // Day rows hold the days whose hours are folded in; the hour rows not folded yet are read with them (db/day-marks.ts).
  const from = request.grain === "day" ? dayRowsSourceSql([...COUNTER_NAMES, "duration_histogram_json"], "$1", "$2", "$3") : table;
  const sql =
    request.histograms ?? true
      ? `SELECT ${key} AS group_key, ${sumsSql()}, group_concat(m.duration_histogram_json, ',') AS histograms_json ` +
        `FROM ${from} AS m WHERE ${where} GROUP BY group_key, m.client_name, m.${time} / ${CONCAT_BLOCK_MS}`
      : `SELECT ${key} AS group_key, ${sumsSql()}, NULL AS histograms_json FROM ${from} AS m WHERE ${where} GROUP BY group_key`;
  return { sql, params };
}

/** Rows of one branch folded into one group per key. */
function foldRows(rows: Record<string, unknown>[]): Map<string, CounterGroup> {
  const groups = new Map<string, CounterGroup>();
  for (const row of rows) {
    const groupKey = String(row.group_key);
    let group = groups.get(groupKey);
    if (!group) {
      group = { counters: zeroCounters(), histogram: {} };
      groups.set(groupKey, group);
    }
    for (const column of COUNTER_NAMES) group.counters[column] += Number(row[column] ?? 0);
    if (typeof row.histograms_json === "string" && row.histograms_json.length > 0) {
      const parts = JSON.parse(`[${row.histograms_json}]`) as Record<string, number>[];
      const into = group.histogram;
      for (const part of parts) for (const bucket in part) into[bucket] = (into[bucket] ?? 0) + (part[bucket] ?? 0);
    }
  }
  return groups;
}

/** Sums over final days (final-days.ts), per project and request shape. */
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

/** How one request is answered: from D1 whole, or as cached final days plus the live days after them. */
type Plan =
  | { kind: "whole"; branch: number }
  | { kind: "split"; key: string; final: Map<string, CounterGroup> | number; live: number | null };

/**
 * The sums of every request, in order, from one D1 statement (more only past D1's 100 bound
 * parameters). Day reads reaching further back than FINAL_AFTER_MS take the final days' sums from
 * the isolate's cache (filled on first use) and read only the days that may still change.
 */
export async function sumCounters(scope: ReadScope, requests: readonly CounterRequest[]): Promise<Map<string, CounterGroup>[]> {
  const branches: CounterRowsBranch[] = [];
  const add = (request: CounterRequest): number => branches.push(branchOf(scope.projectId, request)) - 1;
  const reachesFinalDays = (r: CounterRequest) => r.grain === "day" && r.filter.startMs < scope.nowMs - FINAL_AFTER_MS;
  const boundary = requests.some(reachesFinalDays) ? finalBoundaryMs(await scope.asOfMs) : null;
  const plans: Plan[] = requests.map((request) => {
    const { filter } = request;
    if (!reachesFinalDays(request)) return { kind: "whole", branch: add(request) };
    const finalEndMs = boundary === null ? filter.startMs : Math.min(filter.endMs, boundary);
    if (finalEndMs <= filter.startMs) return { kind: "whole", branch: add(request) };
    const withHistograms = request.histograms ?? true;
    const key = JSON.stringify([scope.projectId, request.groupBy, withHistograms, filter.client ?? null, filter.tool ?? null, filter.startMs, finalEndMs]);
    const cached = finalSums.get(key);
    return {
      kind: "split",
      key,
      final: cached ?? add({ ...request, filter: { ...filter, endMs: finalEndMs } }),
      live: finalEndMs < filter.endMs ? add({ ...request, filter: { ...filter, startMs: finalEndMs } }) : null,
    };
  });
  const rows = branches.length === 0 ? [] : await readCounterRows(scope.db, branches);
  return plans.map((plan) => {
    if (plan.kind === "whole") return foldRows(rows[plan.branch] ?? []);
    let final = plan.final;
    if (typeof final === "number") {
      final = foldRows(rows[final] ?? []);
      finalSums.set(plan.key, final);
    }
    return mergeGroupMaps(final, plan.live === null ? new Map() : foldRows(rows[plan.live] ?? []));
  });
}

/** A span of hour rows of one tool (a schema-regression side). */
export type ToolWindow = { tool: string; startMs: number; endMs: number };

/**
 * The counters of each window (hour rows; `client` an exact match when given), in order: one
 * statement whatever the number of windows, so a project with many changed tools stays within
 * D1's 50 queries per invocation.
 */
export async function sumToolWindows(
  scope: ReadScope,
  windows: readonly ToolWindow[],
  client: string | undefined,
): Promise<Counters[]> {
  if (windows.length === 0) return [];
  // Each window as an object read by key in SQL, not a tuple read by position (STYLE: columns by name).
  const json = JSON.stringify(windows.map((w) => ({ tool: w.tool, start_ms: w.startMs, end_ms: w.endMs })));
  const params: unknown[] = [scope.projectId, json];
  let clientSql = "";
  if (client !== undefined) {
    params.push(client);
    clientSql = " AND m.client_name = ?3";
  }
  const { table, time } = COUNTER_TABLES.hour;
  const sql =
    `SELECT w.key AS window_index, ${sumsSql()} FROM json_each(?2) AS w JOIN ${table} AS m ` +
    `ON m.project_id = ?1 AND m.tool_name = json_extract(w.value, '$.tool') ` +
    `AND m.${time} >= json_extract(w.value, '$.start_ms') AND m.${time} < json_extract(w.value, '$.end_ms')${clientSql} ` +
    "GROUP BY w.key";
  const result = await scope.db
    .prepare(sql)
    .bind(...params)
    .all<Record<string, unknown>>();
  const sums = windows.map(() => zeroCounters());
  for (const row of result.results) {
    const into = sums[Number(row.window_index)];
    if (into) for (const column of COUNTER_NAMES) into[column] += Number(row[column] ?? 0);
  }
  return sums;
}
