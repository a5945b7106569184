// Explore's answering (SPEC §8), one path for every reader: the 60 s cache per (project, query),
// Analytics Engine through the one executor interface, and D1's day rows past AE's 90 days.
import { z } from "zod";
import type { Env } from "../env.ts";
import { apiError } from "../errors.ts";
import { sumCounters, type GroupBy } from "../metrics/counter-sums.ts";
import { percentiles, type CounterGroup } from "../metrics/counters.ts";
import { openReadScope } from "../metrics/scope.ts";
import { AnalyticsUnavailable, executorFor, UNAVAILABLE_RETRY_AFTER_SECONDS } from "./executors.ts";
import { MEASURES, reachesPastRetention, type ExploreQuery, type Measure } from "./explore-query.ts";
import { shapeExploreRows, type ExploreRow } from "./explore-rows.ts";
import { exploreSql, MEASURE_DEFINITIONS, type Sums } from "./explore-sql.ts";
import { log } from "../log.ts";

/** An answer is reused for this long per (project, query) (SPEC §8). */
export const EXPLORE_CACHE_MS = 60_000;
/** Answers kept per isolate; the oldest is dropped first. */
const MAX_CACHED = 256;
const cache = new Map<string, { atMs: number; body: ExploreAnswer }>();

/** Explore's answer (SPEC §8), as /v1/explore returns it and the MCP tool's output schema states it. */
export const exploreAnswerSchema = z.object({
  rows: z
    .array(z.record(z.string(), z.union([z.string(), z.number(), z.null()])))
    .describe("one row per group: its dimensions (and `time` with a grain), then the measures asked; `(other)` sums the groups past `limit`"),
  sampled: z.boolean().describe("true when Analytics Engine sampled some points: counts and sums are then estimates"),
  sample_interval_max: z.number().describe("the largest _sample_interval among the points read (1: every call)"),
  as_of: z.string().describe("when the answer was read"),
  source: z.enum(["analytics-engine", "rollups"]).describe("rollups: past the last 90 days, from D1's day rows"),
  approximate: z.array(z.enum(MEASURES)).describe("measures of this answer that are estimates (distinct counts always; everything weighted when sampled)"),
  truncated: z.boolean().optional().describe("the engine had more groups than it returns: the smallest are missing from (other)"),
});
export type ExploreAnswer = z.infer<typeof exploreAnswerSchema>;

/** Forgets every cached answer (tests). */
export function clearExploreCache(): void {
  cache.clear();
}

/**
 * The one answering path of Explore (SPEC §8) for the route, the dashboard and the MCP tool. Refusals
 * are ApiErrors for the caller to show in its own medium.
 */
export async function answerExplore(env: Env, db: D1Database, projectId: string, query: ExploreQuery, nowMs: number): Promise<ExploreAnswer> {
  const key = JSON.stringify([projectId, query]);
  const hit = cache.get(key);
  if (hit && nowMs - hit.atMs < EXPLORE_CACHE_MS) return hit.body;
  const body = reachesPastRetention(query, nowMs) ? await fromRollups(db, projectId, query, nowMs) : await fromAnalyticsEngine(env, projectId, query, nowMs);
  cache.delete(key);
  cache.set(key, { atMs: nowMs, body });
  if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value as string);
  return body;
}

/** A request's clock for the query schema, rounded up to the end of the current minute: a default range names the same query for a minute (the cache can answer it) and still holds the last seconds' calls. */
export const exploreClock = (): number => Math.floor(Date.now() / 60_000) * 60_000 + 60_000;

async function fromAnalyticsEngine(env: Env, projectId: string, query: ExploreQuery, nowMs: number): Promise<ExploreAnswer> {
  const executor = executorFor(env);
  if (executor === null) {
    throw apiError("ANALYTICS_UNAVAILABLE", "Explore needs Analytics Engine's SQL interface: set CF_ACCOUNT_ID and CF_ANALYTICS_TOKEN, or the [analytics] binding (docs/explore.md)");
  }
  let raw;
  try {
    raw = await executor.query(exploreSql(query, { projectId, table: executor.table }));
  } catch (err) {
    if (err instanceof AnalyticsUnavailable) {
      log.error("explore_unavailable", { project_id: projectId, executor: executor.name, error: err.message });
      throw apiError("ANALYTICS_UNAVAILABLE", err.message, { "Retry-After": String(err.retryAfterSeconds) });
    }
    throw err;
  }
  const shaped = shapeExploreRows(query, raw);
  const body: ExploreAnswer = {
    rows: shaped.rows,
    sampled: shaped.sampled,
    sample_interval_max: shaped.sample_interval_max,
    as_of: new Date(nowMs).toISOString(),
    source: "analytics-engine",
    approximate: shaped.approximate,
  };
  if (shaped.truncated) body.truncated = true;
  return body;
}

/** What D1's day rows hold: every measure but the distinct counts (they keep counters per (tool, client, day)). */
export const ROLLUP_MEASURES: readonly Measure[] = Object.keys(MEASURE_DEFINITIONS).filter((m) => !m.startsWith("distinct_")) as Measure[];
const DAY_MS = 86_400_000;

/**
 * Past AE's 90 days: the same measures from D1's day rows (metrics/counter-sums.ts, the read API's
 * own sums), for the questions those rows can answer — a breakdown by tool or by client, or per
 * day; filters on tool and client; whole UTC days. Anything else is a 400 that says why.
 */
async function fromRollups(db: D1Database, projectId: string, query: ExploreQuery, nowMs: number): Promise<ExploreAnswer> {
  const refuse = (why: string): never => {
    throw apiError("BAD_REQUEST", `before the last 90 days Explore answers from the day rows, which ${why}`);
  };
  const unheld = query.measures.filter((m) => !ROLLUP_MEASURES.includes(m));
  if (unheld.length > 0) refuse(`hold no ${unheld.join(", ")}`);
  if (query.by.length > 1 || (query.by[0] !== undefined && query.by[0] !== "tool" && query.by[0] !== "client")) refuse("break down by tool or by client only");
  if (query.by.length > 0 && query.grain !== "none") refuse("break down by tool, by client or by day, one at a time");
  if (query.grain === "hour") refuse("hold days, not hours (grain=day)");
  for (const [dimension, values] of Object.entries(query.filters)) {
    if ((dimension !== "tool" && dimension !== "client") || (values?.length ?? 0) > 1) refuse("filter on one tool and one client only");
  }
  if (query.startMs % DAY_MS !== 0 || query.endMs % DAY_MS !== 0) refuse("hold whole UTC days: give 'from' and 'to' as dates");

  const groupBy: GroupBy = query.grain === "day" ? "time" : query.by[0] === "client" ? "client" : query.by[0] === "tool" ? "tool" : "all";
  const scope = openReadScope(db, projectId, nowMs);
  const [sums] = await sumCounters(scope, [
    {
      filter: { startMs: query.startMs, endMs: query.endMs, tool: query.filters.tool?.[0], client: query.filters.client?.[0] },
      grain: "day",
      groupBy,
      histograms: query.measures.some((m) => m === "p50" || m === "p95" || m === "p99"),
    },
  ]);
  const rows: RollupRow[] = [];
  for (const [groupKey, group] of sums ?? new Map<string, CounterGroup>()) {
    if (group.counters.calls === 0) continue;
    const row: ExploreRow = {};
    if (groupBy === "time") row.time = new Date(Number(groupKey)).toISOString();
    if (groupBy === "tool" || groupBy === "client") row[groupBy] = groupKey;
    const s = sumsOf(group);
    const quantiles = percentiles(group.histogram);
    for (const m of query.measures) {
      const def = MEASURE_DEFINITIONS[m];
      row[m] = def.kind === "additive" ? def.value(s) : quantiles[m as "p50" | "p95" | "p99"];
    }
    rows.push({ calls: group.counters.calls, order: groupBy === "time" ? Number(groupKey) : groupKey, row, sums: s });
  }
  if (groupBy === "time") rows.sort((a, b) => (a.order as number) - (b.order as number));
  else rows.sort((a, b) => b.calls - a.calls || (a.order < b.order ? -1 : 1));
  const asOf = await scope.asOfMs;
  return {
    rows: limitRollupRows(query, rows, groupBy),
    sampled: false,
    sample_interval_max: 1,
    as_of: new Date(asOf ?? nowMs).toISOString(),
    source: "rollups",
    // The day rows' percentiles come from their latency histograms: within 5 % (SPEC §2.3).
    approximate: query.measures.filter((m) => m === "p50" || m === "p95" || m === "p99"),
  };
}

function sumsOf(group: CounterGroup): Sums {
  const c = group.counters;
  return {
    calls: c.calls,
    ok: c.ok,
    empty: c.empty,
    bad_args: c.bad_args,
    tool_error: c.tool_error,
    crashed: c.crashed,
    duration_ms_sum: c.duration_ms_sum,
    response_bytes_sum: c.response_bytes_sum,
  };
}

type RollupRow = { calls: number; order: string | number; row: ExploreRow; sums: Sums };

/** The first `limit` groups; the rest summed as `(other)` from their sums, as from AE (quantiles null). */
function limitRollupRows(query: ExploreQuery, rows: RollupRow[], groupBy: GroupBy): ExploreRow[] {
  if ((groupBy !== "tool" && groupBy !== "client") || rows.length <= query.limit) return rows.map((r) => r.row);
  const rest = rows.slice(query.limit);
  const sums = { ...rest[0]!.sums };
  for (const r of rest.slice(1)) for (const k of Object.keys(sums) as (keyof Sums)[]) sums[k] += r.sums[k];
  const other: ExploreRow = { [groupBy]: "(other)" };
  for (const m of query.measures) {
    const def = MEASURE_DEFINITIONS[m];
    other[m] = def.kind === "additive" ? def.value(sums) : null;
  }
  return [...rows.slice(0, query.limit).map((r) => r.row), other];
}

export { UNAVAILABLE_RETRY_AFTER_SECONDS };
