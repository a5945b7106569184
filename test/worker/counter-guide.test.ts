// "Adding a counter" (docs/architecture.md), followed for the counter it was last used for:
// `calls_without_args_hash` (SPEC §10: calls whose arguments are not known, an OTLP span without
// them). Each step's product is checked where it lives, then the counter is taken end to end
// through the real worker: ingest (SDK calls and OTLP spans) → the cron's rollup → the read API's
// tools, clients and timeseries answers (hour and day grain). That its SQL in the rollup (step 3)
// counts what its `perCall` (step 1) says is test/worker/counter-rules.test.ts.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CALLS_DATASET } from "../../src/worker/analytics/calls-dataset.ts";
import { DAY_TRIGGER_NAMES, addCounterStatements } from "../../src/worker/db/day-triggers.ts";
import { COUNTERS, COUNTER_NAMES, CounterFigures } from "../../src/worker/metrics/counters.ts";
import { CALL_CHUNK_SQL } from "../../src/worker/rollup/calls.ts";
import { runCron } from "./helpers/cron.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { exportRequest, postTraces, protobufOf, toolSpan } from "./helpers/otlp.ts";
import { createProject } from "./helpers/projects.ts";
import { getJson } from "./metrics/seed.ts";

const COUNTER = "calls_without_args_hash";
const HOUR_MS = 3_600_000;
const squash = (sql: string) => sql.replace(/^--.*$/gm, "").replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")").trim().replace(/;$/, "");

describe(`Adding a counter, as docs/architecture.md says: ${COUNTER}`, () => {
  it("step 1: one entry in COUNTERS, with its rule per call and an Analytics Engine slot; the MCP schema shows it", () => {
    const definition = COUNTERS[COUNTER];
    expect(definition.shown).toBe("count");
    expect(definition.perCall({ session_id: "s", outcome: "ok", is_empty: false, duration_ms: 1, response_bytes: 1, args_hash: "" })).toBe(1);
    expect(definition.perCall({ session_id: "s", outcome: "ok", is_empty: false, duration_ms: 1, response_bytes: 1, args_hash: "52a4fe5fc814" })).toBe(0);
    expect(CALLS_DATASET.doubles[COUNTER]).toMatch(/^double\d+$/);
    expect(Object.keys(CounterFigures.shape)).toContain(COUNTER);
  });

  it("step 2: its migration is what `npm run counter:migration` generates — the columns and both day triggers recreated with it", () => {
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.endsWith(`_add_${COUNTER}.sql`));
    expect(migration, env.TEST_MIGRATIONS.map((m) => m.name).join(", ")).toBeDefined();
    // The counter list the migration's triggers were written with (the list of its day), in order.
    const insert = migration!.queries.find((q) => q.includes(`CREATE TRIGGER ${DAY_TRIGGER_NAMES[0]}`))!;
    const counters = [...insert.matchAll(/(\w+) = \1 \+ excluded\.\1/g)].map((m) => m[1] as string);
    expect(counters).toContain(COUNTER);
    expect(migration!.queries.map(squash)).toEqual(addCounterStatements(COUNTER, counters).map(squash));
  });

  it("step 3: the rollup's hour statement writes its column", () => {
    expect(CALL_CHUNK_SQL.applyHourDeltas).toContain(`AS ${COUNTER}`);
    expect(COUNTER_NAMES).toContain(COUNTER);
  });

  it("end to end: calls without an args_hash are counted by the rollup and reach the tools, clients and timeseries answers", async () => {
    const p = await createProject("counter guide");
    // Two hours of yesterday, a finished day: its day rows are written (by the triggers, or the
    // fold of finished days), not read from the hours.
    const now = Date.now();
    const yesterday = now - (now % 86_400_000) - 86_400_000;
    const earlier = yesterday + 10 * HOUR_MS;
    const later = yesterday + 11 * HOUR_MS;
    const iso = (ms: number) => new Date(ms).toISOString();
    // SDK calls always carry an args_hash; OTLP spans without gen_ai.tool.call.arguments do not.
    const sdkCalls = [0, 1, 2].map((i) => callPayload({ tool_name: "search", started_at: iso(earlier + i * 60_000), args_hash: `52a4fe5fc81${i}` }));
    expect((await postIngest({ batch: sdkCalls }, { key: p.ingest_key })).status).toBe(202);
    const spans = [
      toolSpan("search", { startMs: earlier + 600_000 }),
      toolSpan("search", { startMs: later + 60_000 }),
      toolSpan("lookup", { startMs: later + 120_000 }),
    ];
    expect((await postTraces(protobufOf(exportRequest(spans)), { key: p.ingest_key })).status).toBe(200);

    const from = new Date(earlier).toISOString().slice(0, 10);
    const to = new Date(now).toISOString().slice(0, 10);
    type Figures = Record<string, number> & { tool_name?: string; client_name?: string; start?: string };
    const answers = async () => ({
      tools: (await getJson<{ tools: Figures[] }>(`/v1/metrics/tools?from=${from}&to=${to}`, p.read_key)).body.tools,
      clients: (await getJson<{ clients: Figures[] }>(`/v1/metrics/clients?from=${from}&to=${to}`, p.read_key)).body.clients,
      hours: (await getJson<{ buckets: Figures[] }>(`/v1/metrics/timeseries?from=${from}&to=${to}&grain=hour`, p.read_key)).body.buckets,
      days: (await getJson<{ buckets: Figures[] }>(`/v1/metrics/timeseries?from=${from}&to=${to}&grain=day`, p.read_key)).body.buckets,
    });
    const sum = (rows: Figures[]) => rows.reduce((total, r) => total + (r[COUNTER] ?? 0), 0);

    // Nothing is counted before the rollup has folded the calls.
    const before = await answers();
    expect([sum(before.tools), sum(before.clients), sum(before.hours), sum(before.days)]).toEqual([0, 0, 0, 0]);

    await runCron(now);

    const after = await answers();
    const byTool = Object.fromEntries(after.tools.map((t) => [t.tool_name, [t.calls, t[COUNTER]]]));
    expect(byTool).toEqual({ search: [5, 2], lookup: [1, 1] });
    expect(sum(after.clients)).toBe(3);
    // Each hour's bucket carries its hour's calls without an args_hash, and the days add up.
    const hourly = after.hours.filter((b) => (b[COUNTER] ?? 0) > 0).map((b) => b[COUNTER]);
    expect(hourly).toEqual([1, 2]);
    expect(sum(after.days)).toBe(3);
    // The day rows, written by the triggers step 2 recreated, carry it too.
    const dayRows = await env.DB.prepare(`SELECT SUM(${COUNTER}) AS n FROM tool_day_metrics WHERE project_id = ?1`).bind(p.project_id).first<{ n: number }>();
    expect(dayRows?.n).toBe(3);
  });
});
