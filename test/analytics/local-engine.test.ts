// The builder's SQL on a real ClickHouse engine (chdb, the local stand-in for Analytics Engine),
// fed with the data points the worker writes for generated calls — per-call points for small
// batches, grouped points for large ones, and sampled points (`_sample_interval` > 1) — and
// compared with the truth computed directly from the calls (SPEC §8).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callDataPoints, type CallForAnalytics } from "../../src/worker/analytics/calls-dataset.ts";
import { parseExploreQuery } from "../../src/worker/analytics/explore-query.ts";
import { shapeExploreRows, type ExploreShaped } from "../../src/worker/analytics/explore-rows.ts";
import { exploreSql } from "../../src/worker/analytics/explore-sql.ts";
import { LocalAnalyticsEngine, localTableSql } from "../../scripts/analytics-local.ts";

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 11, 2, 12);
const START = NOW - 6 * HOUR;
const OUTCOMES = ["ok", "ok", "ok", "ok", "bad_args", "tool_error", "crashed"] as const;
const HOSTILE_TOOL = "it's a \\ 'quoted' ünïcödé 🎉 tool";
const TOOLS = ["search", "fetch", "write", "delete", HOSTILE_TOOL];

/** A deterministic generator: the same calls on every run, whatever the machine or the hour. */
function prng(seed: number) {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

/** Each tool's typical latency: a call takes from a third to three times it. */
const BASE_MS = [40, 120, 300, 900, 2500];

function generateCalls(count: number, seed: number): CallForAnalytics[] {
  const next = prng(seed);
  const generated = Array.from({ length: count }, () => {
    const outcome = OUTCOMES[Math.floor(next() * OUTCOMES.length)]!;
    const tool = Math.floor(next() * TOOLS.length);
    return {
      tool_name: TOOLS[tool]!,
      client_name: ["claude-ai", "cursor", "vscode"][Math.floor(next() * 3)]!,
      session_id: next() < 0.1 ? "" : `s_${String(Math.floor(next() * 40)).padStart(12, "0")}`,
      outcome,
      is_empty: outcome === "ok" && next() < 0.2,
      duration_ms: Math.round(BASE_MS[tool]! * 3 ** (2 * next() - 1)),
      response_bytes: Math.floor(next() * 5000),
      args_hash: `a${String(Math.floor(next() * 30)).padStart(11, "0")}`,
      started_at_ms: START + Math.floor(next() * 6 * HOUR),
      client_version: "1.2.3",
      session_kind: "transport",
      transport: "http",
    } satisfies CallForAnalytics;
  });
  // A producer sends its calls in the order they happen: a batch covers minutes, not the range.
  return generated.sort((x, y) => x.started_at_ms - y.started_at_ms);
}

/** Batches of the sizes producers send: small ones (one point per call) and large ones (grouped). */
function batches(calls: CallForAnalytics[], sizes: number[]): CallForAnalytics[][] {
  const out: CallForAnalytics[][] = [];
  let at = 0;
  for (let i = 0; at < calls.length; i++) {
    const size = sizes[i % sizes.length]!;
    out.push(calls.slice(at, at + size));
    at += size;
  }
  return out;
}

let engine: LocalAnalyticsEngine;
const calls = generateCalls(6000, 42);
const perCallOnly = generateCalls(900, 7);

beforeAll(async () => {
  engine = new LocalAnalyticsEngine();
  for (const batch of batches(calls, [40, 1000, 180, 700, 250, 251])) await engine.write(callDataPoints("prj_exact", batch, { country: "DE", colo: "FRA" }));
  for (const batch of batches(perCallOnly, [100])) await engine.write(callDataPoints("prj_per_call", batch, { country: "JP", colo: "NRT" }));
  // Sampling as AE does it: a point kept stands for `_sample_interval` points like it.
  const keep = prng(99);
  for (const batch of batches(calls, [40, 1000, 180, 700, 250, 251])) {
    const kept = callDataPoints("prj_sampled", batch).filter(() => keep() < 0.25);
    await engine.write(kept, { sampleInterval: 4 });
  }
});

afterAll(() => engine?.close());

async function explore(projectId: string, params: Record<string, string | string[]>): Promise<ExploreShaped> {
  const parsed = parseExploreQuery({ from: new Date(START).toISOString(), to: new Date(NOW).toISOString(), ...params }, NOW);
  if (!parsed.ok) throw new Error(parsed.message);
  const answer = await engine.query(exploreSql(parsed.query, { projectId }));
  return shapeExploreRows(parsed.query, answer.data);
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) map.set(key(item), [...(map.get(key(item)) ?? []), item]);
  return map;
}

/** Nearest rank: the smallest value with at least q of the calls at or below it. */
function trueQuantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

const isError = (c: CallForAnalytics) => c.outcome !== "ok";
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

describe("the local engine runs the builder's SQL", () => {
  it("has the table shape of an AE dataset", () => {
    const sql = localTableSql("mcpulse_calls");
    for (const column of ["timestamp", "_sample_interval", "index1", "blob1 ", "blob20 ", "double1 ", "double20 "]) expect(sql).toContain(column);
  });

  it("counts calls and errors per tool exactly when unsampled, grouped batches included", async () => {
    const shaped = await explore("prj_exact", { by: "tool", measure: "calls,errors,error_rate,bad_args,tool_errors,crashes,empty_rate,mean_ms,response_bytes" });
    expect(shaped.sampled).toBe(false);
    expect(shaped.sample_interval_max).toBe(1);
    const truth = countBy(calls, (c) => c.tool_name);
    expect(shaped.rows).toHaveLength(truth.size);
    for (const row of shaped.rows) {
      const own = truth.get(row.tool as string)!;
      const errors = own.filter(isError).length;
      expect(row).toEqual({
        tool: row.tool,
        calls: own.length,
        errors,
        error_rate: round4(errors / own.length),
        bad_args: own.filter((c) => c.outcome === "bad_args").length,
        tool_errors: own.filter((c) => c.outcome === "tool_error").length,
        crashes: own.filter((c) => c.outcome === "crashed").length,
        empty_rate: round4(own.filter((c) => c.is_empty).length / own.length),
        mean_ms: Math.round((own.reduce((s, c) => s + c.duration_ms, 0) / own.length) * 10) / 10,
        response_bytes: own.reduce((s, c) => s + c.response_bytes, 0),
      });
    }
    // Largest first.
    const counts = shaped.rows.map((r) => r.calls as number);
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
  });

  it("keeps p50, p95 and p99 per tool within 5 % of the truth through grouped batches", async () => {
    const shaped = await explore("prj_exact", { by: "tool", measure: "p50,p95,p99" });
    const truth = countBy(calls, (c) => c.tool_name);
    for (const row of shaped.rows) {
      const durations = truth.get(row.tool as string)!.map((c) => c.duration_ms);
      for (const [measure, q] of [["p50", 0.5], ["p95", 0.95], ["p99", 0.99]] as const) {
        const expected = trueQuantile(durations, q);
        expect(Math.abs((row[measure] as number) - expected) / expected).toBeLessThanOrEqual(0.05);
      }
    }
  });

  it("answers exact quantiles and distinct counts from per-call points", async () => {
    const shaped = await explore("prj_per_call", { measure: "p50,p95,p99,distinct_args,distinct_sessions" });
    const durations = perCallOnly.map((c) => c.duration_ms);
    expect(shaped.rows).toEqual([
      {
        p50: trueQuantile(durations, 0.5),
        p95: trueQuantile(durations, 0.95),
        p99: trueQuantile(durations, 0.99),
        distinct_args: new Set(perCallOnly.map((c) => c.args_hash)).size,
        distinct_sessions: new Set(perCallOnly.map((c) => c.session_id)).size,
      },
    ]);
    expect(shaped.approximate).toEqual(["distinct_args", "distinct_sessions"]);
  });

  it("counts per hour and tool exactly (no grouping crosses an hour)", async () => {
    const shaped = await explore("prj_exact", { by: "tool", grain: "hour", limit: "200" });
    const truth = countBy(calls, (c) => `${Math.floor(c.started_at_ms / HOUR) * HOUR}|${c.tool_name}`);
    expect(shaped.rows).toHaveLength(truth.size);
    for (const row of shaped.rows) expect(row.calls).toBe(truth.get(`${Date.parse(row.time as string)}|${row.tool}`)!.length);
    const times = shaped.rows.map((r) => r.time as string);
    expect(times).toEqual([...times].sort());
  });

  it("filters by several values of one dimension and by a hostile tool name, escaped", async () => {
    const shaped = await explore("prj_exact", { "filter[tool]": HOSTILE_TOOL, "filter[outcome]": ["bad_args", "crashed"], by: "client" });
    const truth = countBy(calls.filter((c) => c.tool_name === HOSTILE_TOOL && (c.outcome === "bad_args" || c.outcome === "crashed")), (c) => c.client_name);
    expect(Object.fromEntries(shaped.rows.map((r) => [r.client, r.calls]))).toEqual(Object.fromEntries([...truth].map(([k, v]) => [k, v.length])));
    expect(shaped.rows.length).toBeGreaterThan(0);
  });

  it("breaks down by request facts and descriptive fields", async () => {
    expect((await explore("prj_per_call", { by: "country,colo" })).rows).toEqual([{ country: "JP", colo: "NRT", calls: perCallOnly.length }]);
    expect((await explore("prj_per_call", { by: "session_kind", "filter[client_version]": "1.2.3" })).rows).toEqual([{ session_kind: "transport", calls: perCallOnly.length }]);
    // Large batches keep every dimension only while their points fit (docs/analytics-engine.md);
    // what a coarser grouping merged is (other), and every call is still counted once.
    const shaped = await explore("prj_exact", { by: "country" });
    expect(shaped.rows.map((r) => r.country).sort()).toEqual(["(other)", "DE"]);
    expect(shaped.rows.reduce((sum, r) => sum + (r.calls as number), 0)).toBe(calls.length);
  });

  it("sums the groups past `limit` into (other)", async () => {
    const shaped = await explore("prj_exact", { by: "tool", limit: "2", measure: "calls,errors" });
    const sorted = [...countBy(calls, (c) => c.tool_name).values()].sort((a, b) => b.length - a.length);
    expect(shaped.rows.map((r) => r.calls)).toEqual([sorted[0]!.length, sorted[1]!.length, sorted.slice(2).flat().length]);
    expect(shaped.rows[2]).toMatchObject({ tool: "(other)", errors: sorted.slice(2).flat().filter(isError).length });
  });

  it("never reads another project's points", async () => {
    expect((await explore("prj_none", {})).rows).toEqual([]);
    expect((await explore("prj_per_call", {})).rows).toEqual([{ calls: perCallOnly.length }]);
  });

  it("weights sampled points by _sample_interval: an estimate near the truth, marked approximate", async () => {
    const shaped = await explore("prj_sampled", { by: "tool", measure: "calls,errors,p95" });
    expect(shaped.sampled).toBe(true);
    expect(shaped.sample_interval_max).toBe(4);
    expect(shaped.approximate).toEqual(["calls", "errors", "p95"]);
    const truth = countBy(calls, (c) => c.tool_name);
    let estimated = 0;
    for (const row of shaped.rows) {
      const own = truth.get(row.tool as string)!;
      estimated += row.calls as number;
      // A quarter of the points kept: each tool's count within 25 % (the seed is fixed; the
      // check is that the weights are applied, not the luck of the draw).
      expect(Math.abs((row.calls as number) - own.length) / own.length).toBeLessThanOrEqual(0.25);
      expect((row.calls as number) % 4).toBe(0);
    }
    expect(Math.abs(estimated - calls.length) / calls.length).toBeLessThanOrEqual(0.1);
  });
});
