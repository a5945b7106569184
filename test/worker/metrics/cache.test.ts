// The isolate cache of final days (src/worker/metrics/final-days.ts): sums of days older than as_of −
// (8 days + 30 s + 1 hour) are read once; the days after that boundary are read on every request.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { LruCache, finalBoundaryMs } from "../../../src/worker/metrics/final-days.ts";
import { createProject } from "../helpers/projects.ts";
import { DAY, getJson, seedHour, setAsOf } from "./seed.ts";

type ToolsBody = { tools: { tool_name: string; calls: number }[] };

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

async function setDayCalls(projectId: string, dayMs: number, calls: number): Promise<void> {
  await env.DB.prepare("UPDATE tool_day_metrics SET calls = ?3 WHERE project_id = ?1 AND day_start_ms = ?2").bind(projectId, dayMs, calls).run();
}

describe("final-day cache", () => {
  // FINAL_AFTER_MS itself follows from the retry rule (test/worker/retry-rule.test.ts).
  it("puts the boundary 8 days, 30 s and an hour before as_of, at a day start", () => {
    const asOf = Date.parse("2026-11-29T12:00:00Z");
    expect(finalBoundaryMs(asOf)).toBe(Date.parse("2026-11-21T00:00:00Z"));
    expect(finalBoundaryMs(Date.parse("2026-11-29T01:00:29.999Z"))).toBe(Date.parse("2026-11-20T00:00:00Z"));
    expect(finalBoundaryMs(Date.parse("2026-11-29T01:00:30Z"))).toBe(Date.parse("2026-11-21T00:00:00Z"));
    expect(finalBoundaryMs(null)).toBeNull();
  });

  it("reads final days once and the days after the boundary every time", async () => {
    const p = await createProject();
    const asOf = Date.now();
    await setAsOf(asOf);
    const boundary = finalBoundaryMs(asOf) as number;
    const today = Math.floor(asOf / DAY) * DAY;
    await seedHour({ projectId: p.project_id, hourMs: boundary - DAY, tool: "t", client: "c", counters: { calls: 10, ok: 10 } });
    await seedHour({ projectId: p.project_id, hourMs: boundary, tool: "t", client: "c", counters: { calls: 100, ok: 100 } });
    await seedHour({ projectId: p.project_id, hourMs: today, tool: "t", client: "c", counters: { calls: 1000, ok: 1000 } });
    const q = `/v1/metrics/tools?from=${iso(today - 60 * DAY)}&to=${iso(today)}`;
    expect((await getJson<ToolsBody>(q, p.read_key)).body.tools[0]?.calls).toBe(1110);
    // Rows cannot change before the boundary; if they did, the cached sum would still be served.
    await setDayCalls(p.project_id, boundary - DAY, 20);
    await setDayCalls(p.project_id, boundary, 200);
    await setDayCalls(p.project_id, today, 2000);
    expect((await getJson<ToolsBody>(q, p.read_key)).body.tools[0]?.calls).toBe(2210);
    // Another request shape (a client filter) reads the database afresh.
    expect((await getJson<ToolsBody>(`${q}&client=c`, p.read_key)).body.tools[0]?.calls).toBe(2220);
  });

  it("caches nothing before the first rollup (as_of null)", async () => {
    const p = await createProject();
    await setAsOf(null);
    const today = Math.floor(Date.now() / DAY) * DAY;
    await seedHour({ projectId: p.project_id, hourMs: today - 40 * DAY, tool: "t", client: "c", counters: { calls: 10, ok: 10 } });
    const q = `/v1/metrics/tools?from=${iso(today - 60 * DAY)}&to=${iso(today)}`;
    expect((await getJson<ToolsBody>(q, p.read_key)).body.tools[0]?.calls).toBe(10);
    await setDayCalls(p.project_id, today - 40 * DAY, 11);
    expect((await getJson<ToolsBody>(q, p.read_key)).body.tools[0]?.calls).toBe(11);
  });

  it("never serves one project's cached sums to another", async () => {
    const a = await createProject();
    const b = await createProject();
    await setAsOf(Date.now());
    const today = Math.floor(Date.now() / DAY) * DAY;
    await seedHour({ projectId: a.project_id, hourMs: today - 40 * DAY, tool: "t", client: "c", counters: { calls: 10, ok: 10 } });
    const q = `/v1/metrics/tools?from=${iso(today - 60 * DAY)}&to=${iso(today)}`;
    expect((await getJson<ToolsBody>(q, a.read_key)).body.tools[0]?.calls).toBe(10);
    expect((await getJson<ToolsBody>(q, b.read_key)).body.tools).toEqual([]);
  });

  it("evicts the least recently used entry", () => {
    const lru = new LruCache<number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.get("a")).toBe(1);
    lru.set("c", 3);
    expect(lru.get("b")).toBeUndefined();
    expect(lru.get("a")).toBe(1);
    expect(lru.get("c")).toBe(3);
    expect(lru.size).toBe(2);
  });
});
