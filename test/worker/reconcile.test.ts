// Reconciliation (SPEC §8): per hour, Analytics Engine's weighted calls per tool equal D1's hour
// rows — exactly, since the local engine keeps every point (no sampling) — for small batches (one
// point per call) and large ones (grouped points) alike; /v1/admin/health reports the comparison.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/worker/index.ts";
import { callsPerHourAndTool } from "../../src/worker/db/metrics.ts";
import { reconcile } from "../../src/worker/analytics/reconcile.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { runCron } from "./helpers/cron.ts";
import { adminHeaders, createProject } from "./helpers/projects.ts";
import { getJson } from "./metrics/seed.ts";

const HOUR = 3_600_000;
const OUTCOMES = ["ok", "bad_args", "tool_error", "crashed"] as const;

describe("AE and D1 agree per hour and tool", () => {
  it("counts the same calls per (hour, tool), small and grouped batches, after the rollup; health says ok", async () => {
    const p = await createProject();
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    // Two whole hours before the current one, so both are rolled up and inside the health window.
    const at = (h: number, i: number) => new Date(hour - h * HOUR + (i % 3000) * 1000).toISOString();
    const small = Array.from({ length: 120 }, (_, i) => callPayload({ tool_name: `t${i % 4}`, outcome: OUTCOMES[i % 4], started_at: at(2, i) }));
    const large = Array.from({ length: 900 }, (_, i) => callPayload({ tool_name: `t${i % 7}`, client_name: `c${i % 5}`, outcome: OUTCOMES[i % 4], duration_ms: i, started_at: at(1 + (i % 2), i) }));
    for (const batch of [small, large]) expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    await runCron(Date.now());

    const d1 = await callsPerHourAndTool(env.DB, [p.project_id], hour - 3 * HOUR, hour);
    const explore = await getJson<{ rows: { time: string; tool: string; calls: number }[]; sampled: boolean }>(
      `/v1/explore?by=tool&grain=hour&limit=200&from=${new Date(hour - 3 * HOUR).toISOString()}&to=${new Date(hour).toISOString()}`,
      p.read_key,
    );
    expect(explore.status).toBe(200);
    expect(explore.body.sampled).toBe(false);
    const fromAe = explore.body.rows.map((r) => `${r.time} ${r.tool} ${r.calls}`).sort();
    const fromD1 = d1.map((r) => `${new Date(Number(r.hour_ms)).toISOString()} ${r.tool} ${r.calls}`).sort();
    expect(fromAe).toEqual(fromD1);
    expect(d1.reduce((s, r) => s + Number(r.calls), 0)).toBe(1020);

    const health = await exports.default.fetch("http://worker/v1/admin/health", { headers: adminHeaders() });
    const analytics = (await health.json<{ analytics: Record<string, unknown> }>()).analytics;
    expect(analytics).toMatchObject({ state: "ok", executor: "local", sampled: false, drifting: 0, worst: null });
    expect(analytics.d1_calls).toBe(analytics.ae_calls);
    expect(analytics.d1_calls as number).toBeGreaterThanOrEqual(1020);
  });

  it("reports drift: any difference unsampled, only what sampling cannot explain when sampled", () => {
    const d1 = [{ project_id: "p", hour_ms: 0, tool: "a", calls: 100 }, { project_id: "p", hour_ms: 0, tool: "b", calls: 10 }];
    const exact = reconcile(d1, [
      { project_id: "p", hour_ms: 0, tool: "a", calls: 100, variance: 0, sample_interval_max: 1 },
      { project_id: "p", hour_ms: 0, tool: "b", calls: 9, variance: 0, sample_interval_max: 1 },
    ]);
    expect(exact).toMatchObject({ drifting: 1, sampled: false, worst: { tool: "b", d1_calls: 10, ae_calls: 9 } });
    // Sampled at 1 in 4: an estimate of 96 with variance 4·3·24 = 288 (sd ≈ 17) explains a gap of 4.
    const sampled = reconcile(d1.slice(0, 1), [{ project_id: "p", hour_ms: 0, tool: "a", calls: 96, variance: 288, sample_interval_max: 4 }]);
    expect(sampled).toMatchObject({ drifting: 0, sampled: true, worst: null });
    // …but not a gap of 60 (more than three standard errors).
    expect(reconcile(d1.slice(0, 1), [{ project_id: "p", hour_ms: 0, tool: "a", calls: 40, variance: 288, sample_interval_max: 4 }]).drifting).toBe(1);
    // A group only one side has is drift too.
    expect(reconcile([], [{ project_id: "p", hour_ms: 0, tool: "z", calls: 1, variance: 0, sample_interval_max: 1 }]).drifting).toBe(1);
  });

  it("says so when AE is not configured, instead of failing the health answer", async () => {
    const ctx = createExecutionContext();
    const bindings = { ...env, ANALYTICS_LOCAL_URL: undefined } as unknown as typeof env;
    const res = await worker.fetch(new Request("http://worker/v1/admin/health", { headers: adminHeaders() }) as never, bindings, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(200);
    expect((await res.json<{ analytics: unknown }>()).analytics).toEqual({ state: "unconfigured" });
  });
});
