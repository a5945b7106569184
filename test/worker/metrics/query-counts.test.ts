// D1 statements per read request (issue 9): the free plan allows 50 per invocation, so the overview
// page stays within 12 and schema-regressions spends the same number for 1 changed tool as for 30.
// Every statement is counted where it runs (all/first/run/raw, and each statement of a batch).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../../src/worker/index.ts";
import { clearFinalSumsCache } from "../../../src/worker/metrics/counter-sums.ts";
import { countingDb } from "../helpers/counting-d1.ts";
import { createProject, readSessionCookie } from "../helpers/projects.ts";
import { DAY, HOUR, seedHour, seedPair, seedRegistered, seedSession, seedVersion, setAsOf } from "./seed.ts";

async function countedGet(path: string, headers: Record<string, string>): Promise<{ status: number; text: string; statements: string[] }> {
  const counted = countingDb(env.DB);
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`http://worker${path}`, { headers }) as never, { ...env, DB: counted.db }, ctx);
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  return { status: res.status, text, statements: counted.statements };
}

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

describe("D1 statements per request", () => {
  it("counts what it wraps (the check can fail)", async () => {
    const counted = countingDb(env.DB);
    await counted.db.prepare("SELECT 1").first();
    await counted.db.batch([counted.db.prepare("SELECT 2"), counted.db.prepare("SELECT 3")]);
    expect(counted.statements).toEqual(["SELECT 1", "(batch)", "(batch)"]);
  });

  it("the overview page needs at most 12, on a cold 90-day range with every section filled", async () => {
    const p = await createProject();
    const todayMs = Math.floor(Date.now() / DAY) * DAY;
    await setAsOf(Date.now());
    for (const days of [0, 5, 30, 89, 120]) {
      await seedHour({ projectId: p.project_id, hourMs: todayMs - days * DAY + 3 * HOUR, tool: "search", client: "cli", counters: { calls: 30, ok: 30, first_call_attempts: 30, first_call_ok: 30 } });
    }
    await seedRegistered(p.project_id, "search");
    await seedRegistered(p.project_id, "unused");
    await seedPair(p.project_id, iso(todayMs), "cli", "search", "unused", 2);
    await seedSession(p.project_id, "s1", { firstSeenMs: todayMs + HOUR, client: "cli", calls: 3, responseBytes: 300, schemaBytes: 400 });
    clearFinalSumsCache();
    const cookie = { cookie: await readSessionCookie(p.read_key) };
    const cold = await countedGet(`/?from=${iso(todayMs - 89 * DAY)}&to=${iso(todayMs)}`, cookie);
    expect(cold.status).toBe(200);
    expect(cold.text).toContain("search");
    expect(cold.statements.length, cold.statements.join("\n")).toBeLessThanOrEqual(12);
    // as_of is read once per request.
    expect(cold.statements.filter((s) => s.includes("as_of_ms")).length).toBe(1);
    const defaults = await countedGet("/", cookie);
    expect(defaults.statements.length).toBeLessThanOrEqual(12);
    const toolPage = await countedGet(`/tool?name=search&from=${iso(todayMs - 89 * DAY)}&to=${iso(todayMs)}`, cookie);
    expect(toolPage.status).toBe(200);
    expect(toolPage.statements.length, toolPage.statements.join("\n")).toBeLessThanOrEqual(12);
    expect(toolPage.statements.filter((s) => s.includes("as_of_ms")).length).toBe(1);
  });

  it("schema-regressions spends as many for 30 changed tools as for 1, with each tool's own windows", async () => {
    const change = Date.parse("2026-09-10T06:10:00Z");
    const changeHour = Date.parse("2026-09-10T06:00:00Z");
    const regressions = async (tools: number) => {
      const p = await createProject();
      for (let t = 0; t < tools; t++) {
        const tool = `tool_${String(t).padStart(2, "0")}`;
        await seedRegistered(p.project_id, tool, { schemaHash: "bbbb" });
        await seedVersion(p.project_id, tool, { schemaHash: "aaaa", descriptionHash: "d", firstSeenMs: change - 9 * DAY, lastSeenMs: change - HOUR });
        await seedVersion(p.project_id, tool, { schemaHash: "bbbb", descriptionHash: "d", firstSeenMs: change, lastSeenMs: change + DAY });
        await seedHour({ projectId: p.project_id, hourMs: changeHour - HOUR, tool, client: "c", counters: { calls: 20 + t, ok: 20 + t, first_call_attempts: 20 + t, first_call_ok: 20 + t } });
        await seedHour({ projectId: p.project_id, hourMs: changeHour + HOUR, tool, client: "c", counters: { calls: 40 + t, ok: 40, bad_args: t, first_call_attempts: 40 + t, first_call_ok: 40 } });
      }
      const res = await countedGet("/v1/metrics/schema-regressions", { authorization: `Bearer ${p.read_key}` });
      expect(res.status).toBe(200);
      const body = JSON.parse(res.text) as { regressions: { tool_name: string; before: { calls: number }; after: { calls: number; bad_args: number } }[] };
      expect(body.regressions).toHaveLength(tools);
      for (const r of body.regressions) {
        const t = Number(r.tool_name.slice(5));
        expect(r.before.calls, r.tool_name).toBe(20 + t);
        expect(r.after, r.tool_name).toMatchObject({ calls: 40 + t, bad_args: t });
      }
      return res.statements.length;
    };
    const one = await regressions(1);
    const thirty = await regressions(30);
    expect(thirty).toBe(one);
    // Key, registered tools, tool versions, as_of, the windows.
    expect(one).toBe(5);
  });
});
