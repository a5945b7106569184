// Evaluation of p95_ms and of the three events (SPEC §5), each against the read API over the same
// data: p95_ms equals the read API's p95 for the same window and scope; dead_tool is the read API's
// `dead`; description_churn is /v1/metrics/descriptions' churn, news for window_hours; and
// schema_regression agrees with GET /v1/metrics/schema-regressions. Real ingest → rollup where the
// data can be sent (calls and startups of the last days); schema regressions need a week after a
// change, which ingest cannot send yet, so their hour rows and versions are seeded as the rollup
// writes them. Every window is placed on whole UTC days before today, so no test depends on the
// time of day.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { evaluateAlerts } from "../../../src/worker/alerts/evaluate.ts";
import { callPayload, postIngest, startupPayload } from "../helpers/ingest.ts";
import { createProject, type TestProject } from "../helpers/projects.ts";
import { DAY, HOUR, getJson, seedHour, seedRegistered, seedVersion } from "../metrics/seed.ts";
import { createRule, runCron, statesOf } from "./helpers.ts";

const iso = (ms: number) => new Date(ms).toISOString();
const isoDay = (ms: number) => iso(ms).slice(0, 10);
/** Today's and yesterday's UTC midnight: yesterday is a whole day in the past, within ingest's 7 days. */
const todayMs = () => Math.floor(Date.now() / DAY) * DAY;

type StateRow = { rule_id: string; scope_tool: string | null; scope_client: string | null; state: string; value: number | null; breaches: number };

/** Evaluates every rule as the cron would at `nowMs`, from the counters the rollup wrote. */
async function evaluateAt(nowMs: number) {
  const report = await evaluateAlerts(env.DB, nowMs, { maxStatements: 50 });
  expect(report.skipped).toBeUndefined();
  return report;
}

async function statesOfRule(projectId: string, ruleId: string): Promise<Map<string | null, StateRow>> {
  const rows = (await statesOf(projectId)) as unknown as StateRow[];
  return new Map(rows.filter((s) => s.rule_id === ruleId).map((s) => [s.scope_tool, s]));
}

async function ingest(project: TestProject, batch: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < batch.length; i += 500) {
    const res = await postIngest({ batch: batch.slice(i, i + 500) }, { key: project.ingest_key });
    expect(res.status).toBe(202);
  }
}

let callNo = 0;
/** `count` calls of `tool` by `client` starting at `startMs`, one a minute, with these durations in turn; each in its own session (no retries). */
function calls(tool: string, client: string, startMs: number, durations: number[], count = durations.length, extra: Record<string, unknown> = {}) {
  return Array.from({ length: count }, (_, i) =>
    callPayload({
      tool_name: tool, client_name: client, started_at: iso(startMs + i * 60_000), duration_ms: durations[i % durations.length],
      session_id: `s_${(callNo++).toString(16).padStart(12, "0")}`, args_hash: "abcdef012345", ...extra,
    }),
  );
}

type ToolRow = { tool_name: string; calls: number; dead: boolean; duration_ms: { p95: number | null } };
const toolsOf = async (key: string, query: string) => (await getJson<{ tools: ToolRow[] }>(`/v1/metrics/tools?${query}`, key)).body.tools;

describe("p95_ms", () => {
  it("is the read API's p95 over the same window and scope: per tool, project-wide, and for one tool and client", async () => {
    const project = await createProject("p95");
    const day = todayMs() - DAY; // the window: yesterday, 00:00 to 24:00 UTC
    await ingest(project, [
      // slow: 20 fast calls, 10 slow ones → p95 is a slow one; cursor's share is slower still.
      ...calls("slow", "claude-ai", day + 2 * HOUR, [40], 20),
      ...calls("slow", "cursor", day + 5 * HOUR, [...Array(9).fill(1500), 2500]),
      ...calls("fast", "claude-ai", day + 9 * HOUR, [30, 45, 60], 25),
      // Under min_calls: not evaluated, whatever its figure.
      ...calls("rare", "claude-ai", day + 12 * HOUR, [9000], 3),
      // Outside the window on both sides: the day before and today.
      ...calls("slow", "claude-ai", day - 20 * HOUR, [60_000], 30),
      ...calls("slow", "claude-ai", day - HOUR + 40 * 60_000, [60_000], 2), // the hour just before the window
      // (At most a second ahead of the clock: ingest accepts 5 minutes.)
      ...calls("fast", "claude-ai", todayMs() + 1000, [60_000], 1),
    ]);
    await runCron(Date.now());
    const base = { metric: "p95_ms", op: ">", threshold: 500, window_hours: 24, for_evaluations: 1 };
    const each = await createRule(project.project_id, { ...base, tool: "*", min_calls: 20 });
    const whole = await createRule(project.project_id, { ...base, min_calls: 5 });
    const one = await createRule(project.project_id, { ...base, tool: "slow", client: "cursor", min_calls: 5 });
    // An evaluation in the window's last hour: the window is exactly that UTC day.
    await evaluateAt(day + 23 * HOUR + 30 * 60_000);

    const range = `from=${isoDay(day)}&to=${isoDay(day)}`;
    const tools = new Map((await toolsOf(project.read_key, range)).map((t) => [t.tool_name, t]));
    const perTool = await statesOfRule(project.project_id, each.id);
    expect(perTool.get("slow")).toMatchObject({ state: "firing", value: tools.get("slow")!.duration_ms.p95 });
    expect(perTool.get("fast")).toMatchObject({ state: "ok", value: tools.get("fast")!.duration_ms.p95 });
    expect(tools.get("slow")!.duration_ms.p95).toBeGreaterThan(1000);
    expect(tools.get("slow")!.duration_ms.p95).toBeLessThan(60_000); // the day before is not in it
    expect(tools.get("fast")!.duration_ms.p95).toBeLessThan(100); // nor is today
    // 3 calls of 9 s: over the threshold, but under min_calls, so not evaluated — the state stays ok
    // and keeps no figure (the page says "not evaluated: fewer than 20 calls").
    expect(tools.get("rare")!.duration_ms.p95).toBeGreaterThan(500);
    expect(perTool.get("rare")).toMatchObject({ state: "ok", breaches: 0, value: null });

    const projectWide = (await getJson<{ buckets: { duration_ms: { p95: number | null } }[] }>(`/v1/metrics/timeseries?grain=day&${range}`, project.read_key)).body.buckets;
    expect(projectWide).toHaveLength(1);
    expect((await statesOfRule(project.project_id, whole.id)).get(null)).toMatchObject({ state: "firing", value: projectWide[0]!.duration_ms.p95 });

    const scoped = (await getJson<{ buckets: { duration_ms: { p95: number | null } }[] }>(`/v1/metrics/timeseries?grain=day&${range}&tool=slow&client=cursor`, project.read_key)).body.buckets;
    const slowCursor = (await statesOfRule(project.project_id, one.id)).get("slow");
    expect(slowCursor).toMatchObject({ scope_client: "cursor", state: "firing", value: scoped[0]!.duration_ms.p95 });
    expect(slowCursor!.value).toBeGreaterThan(tools.get("slow")!.duration_ms.p95!);
  });
});

describe("dead_tool", () => {
  it("breaches exactly for the tools the read API calls dead in the same window and client", async () => {
    const project = await createProject("dead tools");
    const day = todayMs() - DAY;
    const tool = (name: string, policy: unknown = null) => ({ name, schema_bytes: 100, schema_hash: "aaaaaaaaaaaa", description_hash: "bbbbbbbbbbbb", policy });
    await ingest(project, [
      startupPayload({
        tools: [tool("search_orders"), tool("delete_order", { requires_authorization: true, requires_verified_identity: false }), tool("unused_tool"), tool("stale_tool"), tool("cursor_only"), tool("edge_tool")],
        agree_declared: [],
      }),
      ...calls("search_orders", "claude-ai", day + 3 * HOUR, [40], 5),
      ...calls("stale_tool", "claude-ai", day - 10 * HOUR, [40], 5), // only the day before the window
      ...calls("edge_tool", "claude-ai", day - HOUR + 30 * 60_000, [40], 1), // the hour just before it
      ...calls("edge_tool", "cursor", day + 23 * HOUR + 5 * 60_000, [40], 1), // its last hour
      ...calls("cursor_only", "cursor", day + 8 * HOUR, [40], 2),
      ...calls("unregistered", "claude-ai", day + 8 * HOUR, [40], 2), // called, never registered: never dead
    ]);
    await runCron(Date.now());
    const each = await createRule(project.project_id, { event: "dead_tool", tool: "*", for_evaluations: 1 });
    const whole = await createRule(project.project_id, { event: "dead_tool", for_evaluations: 1 });
    const forClaude = await createRule(project.project_id, { event: "dead_tool", tool: "*", client: "claude-ai", for_evaluations: 1 });
    const one = await createRule(project.project_id, { event: "dead_tool", tool: "unused_tool", for_evaluations: 1 });
    await evaluateAt(day + 23 * HOUR + 30 * 60_000);

    const range = `from=${isoDay(day)}&to=${isoDay(day)}`;
    for (const [rule, query] of [[each, range], [forClaude, `${range}&client=claude-ai`]] as const) {
      const registered = (await toolsOf(project.read_key, query)).filter((t) => t.tool_name !== "unregistered");
      const states = await statesOfRule(project.project_id, rule.id);
      expect([...states.keys()].sort()).toEqual(registered.map((t) => t.tool_name).sort());
      for (const t of registered) {
        expect([t.tool_name, states.get(t.tool_name)?.state, states.get(t.tool_name)?.value]).toEqual([t.tool_name, t.dead ? "firing" : "ok", t.calls]);
      }
    }
    const deadNames = (await toolsOf(project.read_key, range)).filter((t) => t.dead).map((t) => t.tool_name).sort();
    expect(deadNames).toEqual(["stale_tool", "unused_tool"]);
    expect((await toolsOf(project.read_key, `${range}&client=claude-ai`)).filter((t) => t.dead).map((t) => t.tool_name).sort()).toEqual(["cursor_only", "edge_tool", "stale_tool", "unused_tool"]);
    expect((await statesOfRule(project.project_id, whole.id)).get(null)).toMatchObject({ state: "firing", value: deadNames.length });
    expect((await statesOfRule(project.project_id, one.id)).get("unused_tool")).toMatchObject({ state: "firing", value: 0 });

    // A week-long window reaches the stale tool's calls: no longer dead there, as the read API says for those days.
    const week = await createRule(project.project_id, { event: "dead_tool", tool: "stale_tool", window_hours: 48, for_evaluations: 1 });
    await evaluateAt(day + 23 * HOUR + 30 * 60_000);
    const twoDays = (await toolsOf(project.read_key, `from=${isoDay(day - DAY)}&to=${isoDay(day)}`)).find((t) => t.tool_name === "stale_tool")!;
    expect(twoDays.dead).toBe(false);
    expect((await statesOfRule(project.project_id, week.id)).get("stale_tool")).toMatchObject({ state: "ok", value: twoDays.calls });
  });
});

describe("description_churn", () => {
  it("breaches for the tools /v1/metrics/descriptions reports as churn, while the newest description is within the window", async () => {
    const project = await createProject("churn");
    const tool = (name: string, schema: string, description: string) => ({ name, schema_bytes: 100, schema_hash: schema, description_hash: description, policy: null });
    await ingest(project, [startupPayload({ tools: [tool("churny", "aaaaaaaaaaaa", "d1d1d1d1d1d1"), tool("evolving", "111111111111", "222222222222"), tool("steady", "333333333333", "444444444444")], agree_declared: [] })]);
    await runCron(Date.now());
    // The description of churny changes under the same schema; evolving changes both (a new version, not churn).
    await ingest(project, [startupPayload({ tools: [tool("churny", "aaaaaaaaaaaa", "d2d2d2d2d2d2"), tool("evolving", "555555555555", "666666666666"), tool("steady", "333333333333", "444444444444")], agree_declared: [] })]);
    const receivedMs = Date.now();
    await runCron(receivedMs);
    const each = await createRule(project.project_id, { event: "description_churn", tool: "*", for_evaluations: 1 });
    const whole = await createRule(project.project_id, { event: "description_churn", for_evaluations: 1 });
    await evaluateAt(receivedMs);

    const { body } = await getJson<{ churn: { tool_name: string; description_versions: number; registered: boolean }[] }>("/v1/metrics/descriptions", project.read_key);
    expect(body.churn.map((c) => [c.tool_name, c.description_versions, c.registered])).toEqual([["churny", 2, true]]);
    const states = await statesOfRule(project.project_id, each.id);
    expect([...states.entries()].map(([t, s]) => [t, s.state, s.value]).sort()).toEqual([
      ["churny", "firing", body.churn[0]!.description_versions],
      ["evolving", "ok", 1],
      ["steady", "ok", 1],
    ]);
    expect((await statesOfRule(project.project_id, whole.id)).get(null)).toMatchObject({ state: "firing", value: body.churn.length });

    // Once the newest description is older than window_hours (24), the change is no longer news: resolved.
    await evaluateAt(receivedMs + 25 * HOUR);
    expect((await statesOfRule(project.project_id, each.id)).get("churny")).toMatchObject({ state: "ok", value: 2 });
    expect((await statesOfRule(project.project_id, whole.id)).get(null)).toMatchObject({ state: "ok", value: 0 });
  });
});

describe("schema_regression", () => {
  it("agrees with GET /v1/metrics/schema-regressions per tool, for the project and per client", async () => {
    const project = await createProject("regressions");
    const p = project.project_id;
    // A schema change at 12:30 on a day long past; the report compares the 7 days before 12:00 with the 7 days from 13:00.
    const changeMs = Date.parse("2026-06-10T12:30:00Z");
    const changeHour = Date.parse("2026-06-10T12:00:00Z");
    const before = changeHour - 3 * DAY;
    const after = changeHour + 2 * DAY;
    const side = async (tool: string, client: string, hourMs: number, counters: { calls: number; bad_args?: number; first_call_attempts?: number; first_call_ok?: number }) =>
      seedHour({ projectId: p, hourMs, tool, client, counters: { ok: counters.calls - (counters.bad_args ?? 0), first_call_attempts: counters.calls, first_call_ok: counters.calls - (counters.bad_args ?? 0), ...counters } });
    const changed = async (tool: string) => {
      await seedVersion(p, tool, { schemaHash: "0ld0ld0ld0ld", descriptionHash: "dddddddddddd", firstSeenMs: changeMs - 30 * DAY, lastSeenMs: changeMs });
      await seedVersion(p, tool, { schemaHash: "fe5fe5fe5fe5", descriptionHash: "dddddddddddd", firstSeenMs: changeMs - 2 * HOUR, lastSeenMs: changeMs + 5 * DAY });
      await seedRegistered(p, tool, { schemaHash: "fe5fe5fe5fe5" });
    };
    // Bad arguments up from 5 % to 25 % (claude-ai only; cursor's calls stay clean).
    await changed("broke_args");
    await side("broke_args", "claude-ai", before, { calls: 40, bad_args: 2 });
    await side("broke_args", "claude-ai", after, { calls: 40, bad_args: 10 });
    await side("broke_args", "cursor", before, { calls: 30, bad_args: 0 });
    await side("broke_args", "cursor", after, { calls: 30, bad_args: 0 });
    // The change's own hour mixes both schemas: in neither side.
    await side("broke_args", "claude-ai", changeHour, { calls: 500, bad_args: 500 });
    // First-call success down from 95 % to 50 %, bad arguments unchanged.
    await changed("broke_first");
    await side("broke_first", "claude-ai", before, { calls: 40, first_call_ok: 38 });
    await side("broke_first", "claude-ai", after, { calls: 40, first_call_ok: 20 });
    // A small change: not a regression.
    await changed("fine");
    await side("fine", "claude-ai", before, { calls: 40, bad_args: 2 });
    await side("fine", "claude-ai", after, { calls: 40, bad_args: 3 });
    // All bad afterwards, but only 10 calls: too few to say.
    await changed("thin");
    await side("thin", "claude-ai", before, { calls: 40 });
    await side("thin", "claude-ai", after, { calls: 10, bad_args: 10 });
    // One schema ever: nothing to compare.
    await seedVersion(p, "unchanged", { schemaHash: "fe5fe5fe5fe5", descriptionHash: "dddddddddddd", firstSeenMs: changeMs - 30 * DAY, lastSeenMs: changeMs });
    await seedRegistered(p, "unchanged", { schemaHash: "fe5fe5fe5fe5" });
    await side("unchanged", "claude-ai", after, { calls: 40, bad_args: 40 });

    const each = await createRule(p, { event: "schema_regression", tool: "*", for_evaluations: 1 });
    const whole = await createRule(p, { event: "schema_regression", for_evaluations: 1 });
    const cursor = await createRule(p, { event: "schema_regression", tool: "*", client: "cursor", for_evaluations: 1 });
    const single = await createRule(p, { event: "schema_regression", tool: "broke_args", client: "claude-ai", for_evaluations: 1 });
    await evaluateAt(Date.now());

    type Regression = { tool_name: string; regressed: boolean; bad_args_rate_change: number | null };
    const report = async (query: string) => (await getJson<{ regressions: Regression[] }>(`/v1/metrics/schema-regressions${query}`, project.read_key)).body.regressions;
    for (const [rule, query] of [[each, ""], [cursor, "?client=cursor"], [single, "?client=claude-ai&tool=broke_args"]] as const) {
      const regressions = await report(query);
      const states = await statesOfRule(p, rule.id);
      for (const r of regressions) {
        expect([query, r.tool_name, states.get(r.tool_name)?.state, states.get(r.tool_name)?.value]).toEqual([query, r.tool_name, r.regressed ? "firing" : "ok", r.bad_args_rate_change]);
      }
      // Scopes beyond the report's tools (a tool without a change) never breach.
      for (const [tool, s] of states) if (!regressions.some((r) => r.tool_name === tool)) expect([tool, s.state]).toEqual([tool, "ok"]);
    }
    const all = await report("");
    expect(all.filter((r) => r.regressed).map((r) => r.tool_name).sort()).toEqual(["broke_args", "broke_first"]);
    expect((await report("?client=cursor")).filter((r) => r.regressed)).toEqual([]);
    expect((await statesOfRule(p, whole.id)).get(null)).toMatchObject({ state: "firing", value: 2 });
    expect((await statesOfRule(p, single.id)).get("broke_args")).toMatchObject({ state: "firing", value: 0.2 });
  });
});
