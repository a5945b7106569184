// GET /v1/metrics/tools (SPEC §3): the exact row shape, sums over hours/days/clients, filters,
// registered/dead/unregistered rows, rounding and null rules, the range and as_of.
import { describe, expect, it } from "vitest";
import { createProject } from "../helpers/projects.ts";
import { DAY, HOUR, dayMs, getJson, histogramOf, seedHour, seedRegistered, setAsOf } from "./seed.ts";

type Row = Record<string, unknown> & { tool_name: string; calls: number };
type ToolsBody = { from: string; to: string; as_of: string | null; tools: Row[] };

// SPEC §3's row, with calls_without_session (SPEC §2.2, §2.4) and calls_without_args_hash (SPEC §10)
// after the first-call counts.
const SPEC_KEYS = [
  "tool_name", "calls", "ok", "empty", "bad_args", "tool_error", "crashed", "retries", "first_call_attempts",
  "first_call_ok", "calls_without_session", "calls_without_args_hash", "first_call_rate", "empty_rate", "error_rate", "duration_ms", "response_bytes", "schema_bytes",
  "registered", "dead", "policy",
];

function within5Percent(actual: unknown, exact: number): void {
  expect(typeof actual).toBe("number");
  expect(Math.abs((actual as number) - exact) / exact).toBeLessThanOrEqual(0.05);
}

describe("GET /v1/metrics/tools", () => {
  it("answers the SPEC §3 example row exactly", async () => {
    const p = await createProject();
    // 120 calls: 60 × 41 ms, 54 × 230 ms, 5 × 900 ms, 1 × 5 s → nearest-rank p50 = 41, p95 = 230, p99 = 900.
    const durations = [...Array(60).fill(41), ...Array(54).fill(230), ...Array(5).fill(900), 5000];
    await seedHour({
      projectId: p.project_id,
      hourMs: dayMs("2026-03-02") + 10 * HOUR,
      tool: "search_orders",
      client: "claude-desktop",
      counters: {
        calls: 120, ok: 100, empty: 7, bad_args: 12, tool_error: 5, crashed: 3, retries: 9,
        first_call_attempts: 111, first_call_ok: 88, response_bytes_sum: 170400, duration_ms_sum: 1,
      },
      histogram: histogramOf(durations),
    });
    await seedRegistered(p.project_id, "search_orders", { schemaBytes: 480 });
    const { status, body } = await getJson<ToolsBody>("/v1/metrics/tools?from=2026-03-01&to=2026-03-07", p.read_key);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(["from", "to", "as_of", "tools"]);
    expect(body.from).toBe("2026-03-01");
    expect(body.to).toBe("2026-03-07");
    expect(body.tools).toHaveLength(1);
    const row = body.tools[0] as Row;
    expect(Object.keys(row)).toEqual(SPEC_KEYS);
    expect(row).toMatchObject({
      tool_name: "search_orders", calls: 120, ok: 100, empty: 7, bad_args: 12, tool_error: 5, crashed: 3,
      retries: 9, first_call_attempts: 111, first_call_ok: 88, first_call_rate: 0.7928, empty_rate: 0.0583,
      error_rate: 0.1667, response_bytes: { sum: 170400, avg: 1420 }, schema_bytes: 480, registered: true,
      dead: false, policy: null,
    });
    const d = row.duration_ms as { p50: number; p95: number; p99: number };
    expect(d.p50).toBe(41);
    within5Percent(d.p95, 230);
    within5Percent(d.p99, 900);
  });

  it("sums hours, days and clients, and the client and tool filters combine", async () => {
    const p = await createProject();
    const base = { projectId: p.project_id };
    const day1 = dayMs("2026-04-10");
    await seedHour({ ...base, hourMs: day1 + 1 * HOUR, tool: "a", client: "c1", counters: { calls: 3, ok: 3, first_call_attempts: 3, first_call_ok: 3 } });
    await seedHour({ ...base, hourMs: day1 + 5 * HOUR, tool: "a", client: "c1", counters: { calls: 2, ok: 1, bad_args: 1, first_call_attempts: 2, first_call_ok: 1 } });
    await seedHour({ ...base, hourMs: day1 + DAY, tool: "a", client: "c2", counters: { calls: 4, ok: 4, empty: 2, first_call_attempts: 4, first_call_ok: 2 } });
    await seedHour({ ...base, hourMs: day1 + DAY, tool: "b", client: "c1", counters: { calls: 10, ok: 10, first_call_attempts: 10, first_call_ok: 10 } });
    const q = "/v1/metrics/tools?from=2026-04-10&to=2026-04-11";

    const all = (await getJson<ToolsBody>(q, p.read_key)).body.tools;
    expect(all.map((r) => [r.tool_name, r.calls])).toEqual([["b", 10], ["a", 9]]);
    expect(all[1]).toMatchObject({ ok: 8, bad_args: 1, empty: 2, first_call_attempts: 9, first_call_ok: 6, first_call_rate: 0.6667, empty_rate: 0.2222, error_rate: 0.1111 });

    const c1 = (await getJson<ToolsBody>(`${q}&client=c1`, p.read_key)).body.tools;
    expect(c1.map((r) => [r.tool_name, r.calls])).toEqual([["b", 10], ["a", 5]]);

    const toolA = (await getJson<ToolsBody>(`${q}&tool=a`, p.read_key)).body.tools;
    expect(toolA.map((r) => [r.tool_name, r.calls])).toEqual([["a", 9]]);

    const both = (await getJson<ToolsBody>(`${q}&tool=a&client=c2`, p.read_key)).body.tools;
    expect(both.map((r) => [r.tool_name, r.calls, r.empty])).toEqual([["a", 4, 2]]);

    const none = (await getJson<ToolsBody>(`${q}&tool=b&client=c2`, p.read_key)).body.tools;
    expect(none).toEqual([]);
  });

  it("includes both ends of the range and nothing outside it", async () => {
    const p = await createProject();
    for (const [date, calls] of [["2026-05-01", 1], ["2026-05-02", 10], ["2026-05-04", 100], ["2026-05-05", 1000]] as const) {
      await seedHour({ projectId: p.project_id, hourMs: dayMs(date) + 23 * HOUR, tool: "t", client: "c", counters: { calls, ok: calls } });
    }
    const one = await getJson<ToolsBody>("/v1/metrics/tools?from=2026-05-02&to=2026-05-04", p.read_key);
    expect(one.body.tools[0]?.calls).toBe(110);
    const single = await getJson<ToolsBody>("/v1/metrics/tools?from=2026-05-05&to=2026-05-05", p.read_key);
    expect(single.body.tools[0]?.calls).toBe(1000);
  });

  it("defaults to the last 7 days, today included", async () => {
    const p = await createProject();
    const today = Math.floor(Date.now() / DAY) * DAY;
    await seedHour({ projectId: p.project_id, hourMs: today, tool: "t", client: "c", counters: { calls: 1, ok: 1 } });
    await seedHour({ projectId: p.project_id, hourMs: today - 6 * DAY, tool: "t", client: "c", counters: { calls: 10, ok: 10 } });
    await seedHour({ projectId: p.project_id, hourMs: today - 7 * DAY + 23 * HOUR, tool: "t", client: "c", counters: { calls: 100, ok: 100 } });
    const { body } = await getJson<ToolsBody>("/v1/metrics/tools", p.read_key);
    expect(body.to).toBe(new Date(today).toISOString().slice(0, 10));
    expect(body.from).toBe(new Date(today - 6 * DAY).toISOString().slice(0, 10));
    expect(body.tools[0]?.calls).toBe(11);
    // Only `to`: the 7 days ending on it; only `from`: up to today.
    const onlyTo = await getJson<ToolsBody>(`/v1/metrics/tools?to=${body.from}`, p.read_key);
    expect(onlyTo.body.from).toBe(new Date(today - 12 * DAY).toISOString().slice(0, 10));
    expect(onlyTo.body.tools[0]?.calls).toBe(110);
    const onlyFrom = await getJson<ToolsBody>(`/v1/metrics/tools?from=${body.from}`, p.read_key);
    expect(onlyFrom.body.to).toBe(body.to);
  });

  it("lists registered tools without calls as dead unless a policy exempts them", async () => {
    const p = await createProject();
    await seedRegistered(p.project_id, "unused", { schemaBytes: 1200 });
    await seedRegistered(p.project_id, "needs_auth", { requiresAuthorization: true });
    await seedRegistered(p.project_id, "needs_identity", { requiresVerifiedIdentity: true });
    await seedRegistered(p.project_id, "used", { schemaBytes: 300 });
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-06-01"), tool: "used", client: "c1", counters: { calls: 2, ok: 2 } });
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-06-01"), tool: "unregistered", client: "c1", counters: { calls: 1, ok: 1 } });
    const q = "/v1/metrics/tools?from=2026-06-01&to=2026-06-01";
    const rows = new Map((await getJson<ToolsBody>(q, p.read_key)).body.tools.map((r) => [r.tool_name, r]));
    expect(rows.get("unused")).toEqual({
      tool_name: "unused", calls: 0, ok: 0, empty: 0, bad_args: 0, tool_error: 0, crashed: 0, retries: 0,
      first_call_attempts: 0, first_call_ok: 0, calls_without_session: 0, calls_without_args_hash: 0, first_call_rate: null, empty_rate: null, error_rate: null,
      duration_ms: { p50: null, p95: null, p99: null }, response_bytes: { sum: 0, avg: null },
      schema_bytes: 1200, registered: true, dead: true, policy: null,
    });
    expect(rows.get("needs_auth")).toMatchObject({ dead: false, policy: { requires_authorization: true, requires_verified_identity: false } });
    expect(rows.get("needs_identity")).toMatchObject({ dead: false, policy: { requires_authorization: false, requires_verified_identity: true } });
    expect(rows.get("used")).toMatchObject({ calls: 2, dead: false, registered: true, schema_bytes: 300 });
    expect(rows.get("unregistered")).toMatchObject({ calls: 1, registered: false, schema_bytes: null, dead: false, policy: null });

    // "No calls in the range and filters": called only by c1, so dead for c2.
    const c2 = new Map((await getJson<ToolsBody>(`${q}&client=c2`, p.read_key)).body.tools.map((r) => [r.tool_name, r]));
    expect(c2.get("used")).toMatchObject({ calls: 0, dead: true });
    expect(c2.has("unregistered")).toBe(false);
    // A tool filter keeps only the matching registered tool.
    const only = (await getJson<ToolsBody>(`${q}&tool=unused`, p.read_key)).body.tools;
    expect(only.map((r) => r.tool_name)).toEqual(["unused"]);
    // Another day: "used" had no calls there either.
    const later = new Map((await getJson<ToolsBody>("/v1/metrics/tools?from=2026-06-02&to=2026-06-02", p.read_key)).body.tools.map((r) => [r.tool_name, r]));
    expect(later.get("used")).toMatchObject({ calls: 0, dead: true });
  });

  it("rounds rates to 4 decimals and averages to 1", async () => {
    const p = await createProject();
    await seedHour({
      projectId: p.project_id, hourMs: dayMs("2026-07-01"), tool: "t", client: "c",
      counters: { calls: 3, ok: 2, empty: 1, crashed: 1, first_call_attempts: 8, first_call_ok: 1, response_bytes_sum: 10 },
    });
    const row = (await getJson<ToolsBody>("/v1/metrics/tools?from=2026-07-01&to=2026-07-01", p.read_key)).body.tools[0];
    expect(row).toMatchObject({ first_call_rate: 0.125, empty_rate: 0.3333, error_rate: 0.3333, response_bytes: { sum: 10, avg: 3.3 } });
  });

  it("carries as_of: null before the first rollup, else an ISO time", async () => {
    const p = await createProject();
    await setAsOf(null);
    expect((await getJson<ToolsBody>("/v1/metrics/tools", p.read_key)).body.as_of).toBeNull();
    await setAsOf(Date.parse("2026-07-01T12:35:00.000Z"));
    expect((await getJson<ToolsBody>("/v1/metrics/tools", p.read_key)).body.as_of).toBe("2026-07-01T12:35:00.000Z");
  });
});
