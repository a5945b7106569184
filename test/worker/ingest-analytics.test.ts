// Analytics Engine writes (issue 3): one data point per call, at most 250 per invocation (the
// platform limit), every call represented through the `calls` weight slot — up to the ingest's
// full batch of 1,000 items (SPEC §1.1).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CALLS_DATASET, MAX_DATA_POINTS_PER_INVOCATION, OTHER_GROUP, callDataPoints, type CallForAnalytics } from "../../src/worker/analytics/calls-dataset.ts";
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

describe("Analytics Engine data points", () => {
  it("writes one point per call, indexed by project, for a batch of up to 250 calls", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 250 }, (_, i) => callPayload({ tool_name: `t${i}`, outcome: OUTCOMES[i % 4], duration_ms: i, response_bytes: 10 }));
    expect((await postIngest({ batch: [...batch, startupPayload()] }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    expect(points).toHaveLength(250);
    expect(points.every((pt) => pt.indexes?.[0] === p.project_id)).toBe(true);
    expect(points[3]).toEqual({ indexes: [p.project_id], blobs: ["t3", "claude-ai"], doubles: [1, 0, 0, 0, 0, 1, 3, 10, 0] });
  });

  it("counts a call without a session in its own slot (calls_without_session, from the counter definition)", () => {
    const call = (session_id: string): CallForAnalytics => ({ tool_name: "t", client_name: "c", session_id, outcome: "ok", is_empty: false, duration_ms: 1, response_bytes: 1 });
    const points = callDataPoints("prj", [call(""), call("s_0123456789ab")]);
    expect(points.map((pt) => pt.doubles?.[slot("calls_without_session")])).toEqual([1, 0]);
  });

  it("represents 500 calls in at most 250 points whose weights sum to 500", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 500 }, (_, i) =>
      callPayload({ tool_name: `t${i % 40}`, client_name: `c${i % 3}`, outcome: OUTCOMES[i % 4], is_empty: i % 8 === 0, duration_ms: 10, response_bytes: 7 }),
    );
    expect((await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    expect(points.length).toBeLessThanOrEqual(MAX_DATA_POINTS_PER_INVOCATION);
    expect(points).toHaveLength(120); // 40 tools × 3 clients
    expect(sumOf(points, "calls")).toBe(500);
    for (const outcome of OUTCOMES) expect(sumOf(points, outcome)).toBe(125);
    expect(sumOf(points, "empty")).toBe(63);
    expect(sumOf(points, "duration_ms_sum")).toBe(5000);
    expect(sumOf(points, "response_bytes_sum")).toBe(3500);
  });

  it("merges the smallest groups into one (other) point when even the groups exceed 250", () => {
    const calls: CallForAnalytics[] = Array.from({ length: 500 }, (_, i) => ({
      tool_name: i < 100 ? "popular" : `rare_${i}`, client_name: "c", session_id: "", outcome: "ok", is_empty: false, duration_ms: 1, response_bytes: 1,
    }));
    const points = callDataPoints("prj_x", calls);
    expect(points).toHaveLength(250);
    expect(sumOf(points, "calls")).toBe(500);
    expect(points[0]?.blobs).toEqual(["popular", "c"]);
    expect(points[0]?.doubles?.[slot("calls")]).toBe(100);
    const other = points.at(-1)!;
    expect(other.blobs).toEqual([OTHER_GROUP, OTHER_GROUP]);
    expect(other.doubles?.[slot("calls")]).toBe(500 - 100 - 248);
  });

  it("represents a full batch of 1,000 calls (SPEC §1.1) in at most 250 points, through the worker", async () => {
    const p = await createProject();
    const { points, dataset } = fakeDataset();
    const batch = Array.from({ length: 1000 }, (_, i) =>
      callPayload({ tool_name: `t${i % 50}`, client_name: `c${i % 4}`, outcome: OUTCOMES[i % 4], is_empty: i % 8 === 0, duration_ms: i, response_bytes: 3 }),
    );
    expect((await postIngest({ batch }, { key: p.ingest_key, env: { ...env, CALLS_AE: dataset } })).status).toBe(202);
    // i % 50 and i % 4 repeat together every 100 calls: 100 (tool, client) groups of 10 calls.
    expect(points).toHaveLength(100);
    expect(points.every((pt) => pt.doubles?.[slot("calls")] === 10)).toBe(true);
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
    expect(other.blobs).toEqual([OTHER_GROUP, OTHER_GROUP]);
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
    const calls: CallForAnalytics[] = Array.from({ length: 1000 }, (_, i) => ({
      tool_name: `t${i % groups}`, client_name: "c", session_id: "", outcome: "ok", is_empty: false, duration_ms: 1, response_bytes: 1,
    }));
    const points = callDataPoints("prj_x", calls);
    expect(points).toHaveLength(expected);
    expect(sumOf(points, "calls")).toBe(1000);
    expect(points.some((pt) => pt.blobs?.[0] === OTHER_GROUP)).toBe(hasOther);
  });

  it("writes no point for a batch without calls", () => {
    expect(callDataPoints("prj_x", [])).toEqual([]);
  });
});
