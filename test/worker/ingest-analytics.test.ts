// Analytics Engine writes (issue 3): one data point per call, at most 250 per invocation (the
// platform limit), every call represented through the `calls` weight slot — up to the ingest's
// full batch of 1,000 items (SPEC §1.1).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CALLS_DATASET, MAX_DATA_POINTS_PER_INVOCATION, OTHER_GROUP, callDataPoints, dataPointFields, type CallForAnalytics } from "../../src/worker/analytics/calls-dataset.ts";
import { callPayload, postIngest, startupPayload } from "./helpers/ingest.ts";
import { createProject } from "./helpers/projects.ts";

function fakeDataset() {
  const points: AnalyticsEngineDataPoint[] = [];
  return { points, dataset: { writeDataPoint: (p?: AnalyticsEngineDataPoint) => void points.push(p!) } as AnalyticsEngineDataset };
}

const slot = (name: keyof typeof CALLS_DATASET.doubles) => Number(CALLS_DATASET.doubles[name].slice("double".length)) - 1;
const sumOf = (points: AnalyticsEngineDataPoint[], name: keyof typeof CALLS_DATASET.doubles) =>
  points.reduce((s, p) => s + (p.doubles?.[slot(name)] ?? 0), 0);

const OUTCOMES = ["ok", "bad_args", "tool_error", "crashed"] as const;

// One second into the hour before last: every call of a test falls in the same minute and hour,
// whatever the time of day the test runs at.
const HOUR_MS = 3_600_000;
const STARTED_AT_MS = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - HOUR_MS + 1000;
const STARTED_AT = new Date(STARTED_AT_MS).toISOString();

const analyticsCall = (overrides: Partial<CallForAnalytics> = {}): CallForAnalytics => ({
  tool_name: "t", client_name: "c", session_id: "", outcome: "ok", is_empty: false, duration_ms: 1, response_bytes: 1,
  args_hash: "52a4fe5fc814", started_at_ms: STARTED_AT_MS, ...overrides,
});

/** Nearest-rank weighted quantile over (value, weight) pairs: what quantileExactWeighted answers. */
function weightedQuantile(pairs: [number, number][], q: number): number {
  const sorted = [...pairs].sort((a, b) => a[0] - b[0]);
  const total = sorted.reduce((s, [, w]) => s + w, 0);
  let seen = 0;
  for (const [v, w] of sorted) {
    seen += w;
    if (seen >= q * total) return v;
  }
  return sorted.at(-1)![0];
}

describe("Analytics Engine data points", () => {
  it("writes one point per call, indexed by project, for a batch of up to 250 calls", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 250 }, (_, i) => callPayload({ tool_name: `t${i}`, outcome: OUTCOMES[i % 4], duration_ms: i, response_bytes: 10, started_at: STARTED_AT }));
    const cf = { country: "DE", colo: "FRA" };
    expect((await postIngest({ batch: [...batch, startupPayload()] }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset }, cf })).status).toBe(202);
    expect(points).toHaveLength(250);
    expect(points.every((pt) => pt.indexes?.[0] === p.project_id)).toBe(true);
    expect(points[3]).toEqual({
      indexes: [p.project_id],
      blobs: ["t3", "claude-ai", "unknown", "crashed", "0", "unknown", "unknown", "unknown", "unknown", "DE", "FRA", "52a4fe5fc814", "s_0123456789ab"],
      doubles: [1, 0, 0, 0, 0, 1, 3, 10, 0, STARTED_AT_MS, 3, 10, 0],
    });
  });

  it("names every slot once, append-only from the first layout (blob1, blob2, double1–9 unchanged)", () => {
    expect(CALLS_DATASET.blobs.tool_name).toBe("blob1");
    expect(CALLS_DATASET.blobs.client_name).toBe("blob2");
    expect(Object.values(CALLS_DATASET.doubles).slice(0, 9)).toEqual(["double1", "double2", "double3", "double4", "double5", "double6", "double7", "double8", "double9"]);
    const blobs = Object.values(CALLS_DATASET.blobs);
    const doubles = Object.values(CALLS_DATASET.doubles);
    expect(new Set(blobs).size).toBe(blobs.length);
    expect(new Set(doubles).size).toBe(doubles.length);
    expect(blobs.length).toBeLessThanOrEqual(20);
    expect(doubles.length).toBeLessThanOrEqual(20);
  });

  it("stores the descriptive facts of a call and of its request, unknown when not said", () => {
    const [said] = callDataPoints("prj", [analyticsCall({ client_version: "1.2.3", server_version: "0.9.0", protocol_version: "2025-06-18", session_kind: "conversation", transport: "http", is_empty: true, session_id: "s_1" })], { country: "JP", colo: "NRT" });
    expect(dataPointFields(said!).blobs).toMatchObject({ client_version: "1.2.3", server_version: "0.9.0", protocol_version: "2025-06-18", session_kind: "conversation", transport: "http", empty: "1", country: "JP", colo: "NRT", session_id: "s_1" });
    const [unsaid] = callDataPoints("prj", [analyticsCall()]);
    expect(dataPointFields(unsaid!).blobs).toMatchObject({ client_version: "unknown", server_version: "unknown", protocol_version: "unknown", session_kind: "unknown", transport: "unknown", country: "unknown", colo: "unknown", session_id: "" });
  });

  it("keeps p50, p95 and p99 within 5 % when a batch over 250 calls is grouped", () => {
    // A deterministic spread of durations from 50 ms to 20 s (one bucket per 4 % from 100 ms on).
    let seed = 7;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const calls = Array.from({ length: 1000 }, () => analyticsCall({ duration_ms: Math.round(50 * 400 ** next()) }));
    const points = callDataPoints("prj", calls);
    expect(points.length).toBeLessThanOrEqual(MAX_DATA_POINTS_PER_INVOCATION);
    expect(points.length).toBeGreaterThan(1);
    const grouped: [number, number][] = points.map((pt) => [dataPointFields(pt).doubles.duration_ms, dataPointFields(pt).doubles.calls]);
    const exact: [number, number][] = calls.map((c) => [c.duration_ms, 1]);
    for (const q of [0.5, 0.95, 0.99]) {
      const truth = weightedQuantile(exact, q);
      expect(Math.abs(weightedQuantile(grouped, q) - truth) / truth).toBeLessThanOrEqual(0.05);
    }
    // Sums stay exact whatever the grouping.
    expect(sumOf(points, "duration_ms_sum")).toBe(calls.reduce((s, c) => s + c.duration_ms, 0));
  });

  it("keeps each group's hour and earliest started_at, so hourly counts stay exact", () => {
    const calls = Array.from({ length: 600 }, (_, i) => analyticsCall({ tool_name: `t${i % 3}`, started_at_ms: STARTED_AT_MS + (i % 2) * HOUR_MS + i }));
    const points = callDataPoints("prj", calls);
    const inFirstHour = points.filter((pt) => dataPointFields(pt).doubles.started_at_ms < STARTED_AT_MS - 1000 + HOUR_MS);
    expect(inFirstHour.reduce((s, pt) => s + dataPointFields(pt).doubles.calls, 0)).toBe(300);
    expect(Math.min(...points.map((pt) => dataPointFields(pt).doubles.started_at_ms))).toBe(STARTED_AT_MS);
  });

  it("feeds the call's descriptive wire fields into the point, normalising unexpected values instead of dropping the call", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = [
      callPayload({ started_at: STARTED_AT, client_version: "0.14.2", server_version: "2.1.0", protocol_version: "2025-06-18", session_kind: "transport", transport: "http" }),
      callPayload({ started_at: STARTED_AT, client_version: "v".repeat(65), server_version: 3, protocol_version: "", session_kind: "cookie", transport: "streamable-http" }),
    ];
    const res = await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } });
    expect(res.status).toBe(202);
    expect(points).toHaveLength(2);
    expect(dataPointFields(points[0]!).blobs).toMatchObject({ client_version: "0.14.2", server_version: "2.1.0", protocol_version: "2025-06-18", session_kind: "transport", transport: "http" });
    expect(dataPointFields(points[1]!).blobs).toMatchObject({ client_version: "unknown", server_version: "unknown", protocol_version: "unknown", session_kind: "unknown", transport: "unknown" });
  });

  it("counts a call without a session in its own slot (calls_without_session, from the counter definition)", () => {
    const call = (session_id: string) => analyticsCall({ session_id });
    const points = callDataPoints("prj", [call(""), call("s_0123456789ab")]);
    expect(points.map((pt) => pt.doubles?.[slot("calls_without_session")])).toEqual([1, 0]);
  });

  it("represents 500 calls in at most 250 points whose weights sum to 500", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 500 }, (_, i) =>
      callPayload({ tool_name: `t${i % 40}`, client_name: `c${i % 3}`, outcome: OUTCOMES[i % 4], is_empty: i % 8 === 0, duration_ms: 10, response_bytes: 7, started_at: STARTED_AT }),
    );
    expect((await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    expect(points.length).toBeLessThanOrEqual(MAX_DATA_POINTS_PER_INVOCATION);
    expect(points).toHaveLength(120); // (tool, client, outcome, empty) repeat every 120 calls
    expect(sumOf(points, "calls")).toBe(500);
    for (const outcome of OUTCOMES) expect(sumOf(points, outcome)).toBe(125);
    expect(sumOf(points, "empty")).toBe(63);
    expect(sumOf(points, "duration_ms_sum")).toBe(5000);
    expect(sumOf(points, "response_bytes_sum")).toBe(3500);
  });

  it("merges the smallest groups into one (other) point when even the groups exceed 250", () => {
    const calls = Array.from({ length: 500 }, (_, i) => analyticsCall({ tool_name: i < 100 ? "popular" : `rare_${i}` }));
    const points = callDataPoints("prj_x", calls);
    expect(points).toHaveLength(250);
    expect(sumOf(points, "calls")).toBe(500);
    expect(points[0]?.blobs?.slice(0, 2)).toEqual(["popular", "c"]);
    expect(points[0]?.doubles?.[slot("calls")]).toBe(100);
    const other = points.at(-1)!;
    expect(other.blobs).toEqual(Object.keys(CALLS_DATASET.blobs).map(() => OTHER_GROUP));
    expect(other.doubles?.[slot("calls")]).toBe(500 - 100 - 248);
  });

  it("represents a full batch of 1,000 calls (SPEC §1.1) in at most 250 points, through the worker", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 1000 }, (_, i) =>
      callPayload({ tool_name: `t${i % 50}`, client_name: `c${i % 4}`, outcome: OUTCOMES[i % 4], is_empty: i % 8 === 0, duration_ms: i, response_bytes: 3, started_at: STARTED_AT }),
    );
    expect((await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    // The durations are too spread for 10 %-wide chunks to fit, so the groups are the distinct
    // (tool, client, outcome, empty): 75 without an ok call (i % 4 ≠ 0, one per i % 100) and 50 ok
    // ones (i % 50, empty or not) — 125 — and the 125 points left are shared among them by calls,
    // as runs of neighbouring durations.
    expect(points.length).toBeGreaterThan(125);
    expect(points.length).toBeLessThanOrEqual(MAX_DATA_POINTS_PER_INVOCATION);
    const groups = new Set(points.map((pt) => JSON.stringify(pt.blobs?.slice(0, 5))));
    expect(groups.size).toBe(125);
    expect(sumOf(points, "calls")).toBe(1000);
    for (const outcome of OUTCOMES) expect(sumOf(points, outcome)).toBe(250);
    expect(sumOf(points, "empty")).toBe(125);
    expect(sumOf(points, "duration_ms_sum")).toBe((999 * 1000) / 2);
    expect(sumOf(points, "response_bytes_sum")).toBe(3000);
  });

  it("keeps 1,000 calls of 1,000 distinct (tool, client) within 250 points, every call and sum represented", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 1000 }, (_, i) =>
      callPayload({ tool_name: `tool_${i}`, client_name: i % 2 ? "a" : "b", outcome: OUTCOMES[i % 4], duration_ms: 2, response_bytes: 5 }),
    );
    expect((await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    expect(points).toHaveLength(MAX_DATA_POINTS_PER_INVOCATION);
    expect(sumOf(points, "calls")).toBe(1000);
    for (const outcome of OUTCOMES) expect(sumOf(points, outcome)).toBe(250);
    expect(sumOf(points, "duration_ms_sum")).toBe(2000);
    expect(sumOf(points, "response_bytes_sum")).toBe(5000);
    const other = points.at(-1)!;
    expect(other.blobs).toEqual(Object.keys(CALLS_DATASET.blobs).map(() => OTHER_GROUP));
    expect(other.doubles?.[slot("calls")]).toBe(1000 - 249);
    // Each point is consistent in itself: its outcomes add up to its calls.
    for (const pt of points) {
      const d = pt.doubles!;
      expect(OUTCOMES.reduce((sum, o) => sum + d[slot(o)]!, 0)).toBe(d[slot("calls")]);
    }
  });

  it.each([
    [250, 250, false],
    [251, 250, true],
  ])("1,000 calls in %i groups give %i points (an (other) point: %s)", (groups, expected, hasOther) => {
    const calls = Array.from({ length: 1000 }, (_, i) => analyticsCall({ tool_name: `t${i % groups}` }));
    const points = callDataPoints("prj_x", calls);
    expect(points).toHaveLength(expected);
    expect(sumOf(points, "calls")).toBe(1000);
    expect(points.some((pt) => pt.blobs?.[0] === OTHER_GROUP)).toBe(hasOther);
  });

  it("posts the same points to the local engine (ANALYTICS_LOCAL_URL), where the builder's SQL reads them", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 300 }, (_, i) => callPayload({ tool_name: `t${i % 3}`, outcome: OUTCOMES[i % 4], duration_ms: 10 + i, started_at: STARTED_AT }));
    expect((await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    const sql = `SELECT blob1 AS tool, SUM(_sample_interval * double1) AS calls, SUM(_sample_interval * double4) AS bad_args, count() AS points
      FROM mcpulse_calls WHERE index1 = '${p.project_id}' GROUP BY blob1 ORDER BY blob1 FORMAT JSON`;
    const answer = await (await fetch(new URL("/sql", env.ANALYTICS_LOCAL_URL), { method: "POST", body: sql })).json<{ data: Record<string, unknown>[] }>();
    expect(answer.data.map((r) => [r.tool, r.calls, r.bad_args])).toEqual([["t0", 100, 25], ["t1", 100, 25], ["t2", 100, 25]]);
    expect(answer.data.reduce((sum, r) => sum + Number(r.points), 0)).toBe(points.length);
  });

  it("writes no point for a batch without calls", () => {
    expect(callDataPoints("prj_x", [])).toEqual([]);
  });
});
