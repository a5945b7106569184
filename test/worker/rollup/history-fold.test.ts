// SPEC §7 "History that fits": the daily retention job folds the hour rows of days older than 90
// days into their day rows (src/worker/rollup/retention.ts, FOLD_SQL). Every answer over those days
// stays equal; hour grain there answers 400 HOURS_NOT_KEPT; the fold is bounded per statement, never
// deletes an hour whose day row does not hold it, and never a day at or after the horizon.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { clearFinalSumsCache } from "../../../src/worker/metrics/counter-sums.ts";
import { COUNTER_NAMES } from "../../../src/worker/metrics/counters.ts";
import { chartGrain, loadOverview, loadToolPage } from "../../../src/worker/metrics/page-data.ts";
import { hoursKept, rangeFromDays } from "../../../src/worker/metrics/query.ts";
import { latestSchemaChange, schemaChangeSpansSql, schemaChangeWindows } from "../../../src/worker/metrics/schema-change.ts";
import { openReadScope } from "../../../src/worker/metrics/scope.ts";
import { runRetention, runRollup } from "../../../src/worker/rollup/index.ts";
import { FOLD_SQL } from "../../../src/worker/rollup/retention.ts";
import { namedStatement, type SqlParams } from "../../../src/worker/db/named-sql.ts";
import { HOUR_ROWS_KEPT_DAYS, hourRowsHorizonMs } from "../../../src/worker/time.ts";
import { createProject, type TestProject } from "../helpers/projects.ts";
import { getJson, seedHour, seedRegistered, seedVersion } from "../metrics/seed.ts";
import { call, deliver, resetDb, snapshot, type TestCall, type TestPayload, type TestTool } from "./fixtures.ts";

const db = env.DB;
const DAY = 86_400_000;
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 21, 3, 30); // the daily cron's time
const HORIZON = Date.UTC(2026, 7, 23); // 2026-11-21 − 90 days: the first day whose hours are kept
const SCHEMA_CHANGE = NOW - 120 * DAY + 5 * HOUR; // `search` changed its schema here (before the horizon)

beforeEach(async () => {
  await resetDb(db);
  clearFinalSumsCache();
});
afterEach(() => vi.useRealTimers());

async function hourRows(where = "1 = 1"): Promise<number> {
  const row = await db.prepare(`SELECT COUNT(*) AS n FROM tool_hour_metrics WHERE ${where}`).first<{ n: number }>();
  return row?.n ?? 0;
}

describe("the horizon", () => {
  it("is 90 whole UTC days before the clock's day, whatever the time of day", () => {
    expect(HOUR_ROWS_KEPT_DAYS).toBe(90);
    expect(hourRowsHorizonMs(NOW)).toBe(HORIZON);
    expect(hourRowsHorizonMs(Date.UTC(2026, 10, 21))).toBe(HORIZON);
    expect(hourRowsHorizonMs(Date.UTC(2026, 10, 22) - 1)).toBe(HORIZON);
    expect(hourRowsHorizonMs(Date.UTC(2026, 10, 22))).toBe(HORIZON + DAY);
  });

  it("hours are kept for a range from the horizon on, not a day earlier (the request's clock)", () => {
    expect(hoursKept(rangeFromDays(HORIZON, HORIZON), NOW)).toBe(true);
    expect(hoursKept(rangeFromDays(HORIZON + DAY, HORIZON + DAY), NOW)).toBe(true);
    expect(hoursKept(rangeFromDays(HORIZON - DAY, HORIZON + DAY), NOW)).toBe(false);
    // The dashboard charts a 1-day range per hour only where its hours are kept.
    expect(chartGrain(rangeFromDays(HORIZON, HORIZON), NOW)).toBe("hour");
    expect(chartGrain(rangeFromDays(HORIZON - DAY, HORIZON - DAY), NOW)).toBe("day");
  });
});

describe("GET /v1/metrics/timeseries?grain=hour before the horizon", () => {
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const series = (p: TestProject, fromMs: number, toMs: number, grain = "hour") =>
    getJson<Record<string, unknown>>(`/v1/metrics/timeseries?from=${iso(fromMs)}&to=${iso(toMs)}&grain=${grain}`, p.read_key);

  it("answers 400 HOURS_NOT_KEPT just outside, 200 at the horizon and just inside", async () => {
    const p = await createProject();
    vi.useFakeTimers({ toFake: ["Date"], now: NOW });
    const at = await series(p, HORIZON, HORIZON + DAY);
    expect(at.status).toBe(200);
    expect((at.body.buckets as unknown[]).length).toBe(48);
    expect((await series(p, HORIZON + DAY, HORIZON + 2 * DAY)).status).toBe(200);

    const outside = await series(p, HORIZON - DAY, HORIZON + DAY);
    expect(outside.status).toBe(400);
    expect(outside.body).toEqual({
      error: "hours are kept for the last 90 days (from 2026-08-23); older hours are folded into their days: ask grain=day, or a 'from' on or after that date",
      code: "HOURS_NOT_KEPT",
      request_id: outside.headers.get("x-request-id"),
    });
    // Day grain over the same days, and the same hours asked a day earlier (the horizon a day back).
    expect((await series(p, HORIZON - DAY, HORIZON + DAY, "day")).status).toBe(200);
    vi.setSystemTime(NOW - DAY);
    expect((await series(p, HORIZON - DAY, HORIZON + DAY)).status).toBe(200);
    // The last millisecond of the day still has the same horizon; the next one moves it.
    vi.setSystemTime(Date.UTC(2026, 10, 22) - 1);
    expect((await series(p, HORIZON, HORIZON)).status).toBe(200);
    vi.setSystemTime(Date.UTC(2026, 10, 22));
    expect((await series(p, HORIZON, HORIZON)).status).toBe(400);
  });
});

// ---------------------------------------------------------------------------------------------
// A workload over more than 90 days, rolled up by the real rollup.
// ---------------------------------------------------------------------------------------------

const tools = (searchSchema: string): TestTool[] =>
  ["search", "fetch", "summarize", "list", "unused"].map((name) => ({
    name,
    schema_bytes: 100 + name.length,
    schema_hash: name === "search" ? searchSchema : `${name}-schema`,
    description_hash: `${name}-description`,
    description_norm: `does ${name}`,
    policy: null,
  }));

/** Calls every other day from 2026-05-01 to the day before NOW: sessions, retries, empties, errors, no-session calls. */
function workload(projectId: string): { receivedAtMs: number; payloads: TestPayload[] }[] {
  const startup = (session: string, schema: string): TestPayload => ({
    type: "startup",
    startup: { project_id: projectId, session_id: session, client_name: "claude", tools: tools(schema), agree_declared: [{ field: "city", tools: ["search", "fetch"] }] },
  });
  const batches: { receivedAtMs: number; payloads: TestPayload[] }[] = [];
  let changed = false;
  for (let day = Date.UTC(2026, 4, 1), i = 0; day < NOW - DAY; day += 2 * DAY, i++) {
    const payloads: TestPayload[] = [];
    if (i === 0) payloads.push(startup("boot-0", "search-v1"));
    if (!changed && day + 10 * HOUR > SCHEMA_CHANGE) {
      changed = true;
      batches.push({ receivedAtMs: SCHEMA_CHANGE, payloads: [startup("boot-1", "search-v2")] });
    }
    const client = i % 3 === 0 ? "cursor" : "claude";
    const c = (over: Partial<TestCall> & Pick<TestCall, "started_at_ms">): TestPayload => ({
      type: "call",
      call: call({ project_id: projectId, session_id: `s${i}`, client_name: client, duration_ms: (i * 37) % 3000, ...over }),
    });
    const t = day + (9 + (i % 5)) * HOUR;
    payloads.push(
      c({ started_at_ms: t, tool_name: "search", args_hash: "a1", outcome: i % 4 === 0 ? "bad_args" : "ok" }),
      c({ started_at_ms: t + 5_000, tool_name: "search", args_hash: "a2", duration_ms: 120 }), // a retry when the first ended in time
      c({ started_at_ms: t + 60_000, tool_name: "fetch", args_hash: "f1", response_bytes: 2_000 + i }),
      c({ started_at_ms: t + 120_000, tool_name: "summarize", args_hash: "m1", outcome: i % 7 === 0 ? "crashed" : "ok" }),
      c({ started_at_ms: t + 11 * HOUR, tool_name: "list", args_hash: "l1", is_empty: true, duration_ms: 9 }),
      c({ started_at_ms: t + 12 * HOUR, session_id: "", tool_name: "fetch", args_hash: "f2", outcome: i % 2 ? "tool_error" : "ok" }),
    );
    payloads.push({
      type: "agreement",
      agreement: { project_id: projectId, session_id: `s${i}`, field: "city", tool_a: "search", tool_b: "fetch", agreed: i % 3 !== 1, checked_at_ms: t + 61_000, window_ms: 60_000 },
    });
    batches.push({ receivedAtMs: day + DAY, payloads });
  }
  batches.push({ receivedAtMs: NOW - 10 * DAY, payloads: [startup("boot-2", "search-v2")] });
  return batches;
}

async function seedWorkload(p: TestProject): Promise<void> {
  for (const b of workload(p.project_id)) await deliver(db, b.payloads, b.receivedAtMs);
  for (let run = 0; run < 10; run++) {
    const r = await runRollup(db, NOW);
    if (r.caughtUp) return;
  }
  throw new Error("the rollup did not catch up");
}

const RANGES = [
  ["2026-05-01", "2026-08-22"], // every day folded
  ["2026-08-01", "2026-09-30"], // straddling the horizon
  ["2026-07-10", "2026-07-11"], // two folded days (the dashboard would chart them per hour)
  ["2026-07-20", "2026-07-27"], // the week after the schema change (its hours kept)
  ["2025-11-21", "2026-11-21"], // a year and a day
];

const PATHS = (from: string, to: string) => [
  `/v1/metrics/tools?from=${from}&to=${to}`,
  `/v1/metrics/tools?from=${from}&to=${to}&client=cursor`,
  `/v1/metrics/clients?from=${from}&to=${to}`,
  `/v1/metrics/clients?from=${from}&to=${to}&tool=search`,
  `/v1/metrics/pairs?from=${from}&to=${to}`,
  `/v1/metrics/sessions?from=${from}&to=${to}`,
  `/v1/metrics/timeseries?from=${from}&to=${to}`,
  `/v1/metrics/timeseries?from=${from}&to=${to}&tool=fetch&client=claude`,
  `/v1/metrics/agreement?from=${from}&to=${to}`,
  `/v1/metrics/insights?from=${from}&to=${to}`,
];

/** Every answer over the ranges, `as_of` aside: the read API and the dashboard's page data. */
async function answers(p: TestProject): Promise<Record<string, unknown>> {
  clearFinalSumsCache();
  const strip = (value: unknown) => JSON.parse(JSON.stringify(value, (k, v) => (k === "as_of" || k === "asOf" ? undefined : v)));
  const out: Record<string, unknown> = {};
  const paths = [
    ...RANGES.flatMap(([from, to]) => PATHS(from!, to!)),
    "/v1/metrics/descriptions",
    "/v1/metrics/schema-regressions",
    "/v1/metrics/schema-regressions?tool=search&client=claude",
    `/v1/metrics/timeseries?from=2026-11-18&to=2026-11-20&grain=hour`,
  ];
  for (const path of paths) {
    const { status, body } = await getJson(path, p.read_key);
    expect(status, path).toBe(200);
    out[path] = strip(body);
  }
  // The /mcp tools (SPEC §6), stateless JSON-RPC with the read key.
  const mcpCalls: [string, Record<string, unknown>][] = [
    ...RANGES.flatMap(([from, to]): [string, Record<string, unknown>][] => [
      ["list_tools_health", { from, to }],
      ["get_tool", { name: "search", from, to }],
      ["get_insights", { from, to }],
      ["get_clients", { from, to }],
      ["get_sessions", { from, to }],
    ]),
    ["compare_ranges", { a_from: "2026-07-01", a_to: "2026-07-14", b_from: "2026-07-15", b_to: "2026-07-28" }],
    ["get_schema_regressions", {}],
  ];
  for (const [name, args] of mcpCalls) {
    const res = await exports.default.fetch("http://worker/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${p.read_key}`, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    });
    const text = await res.text();
    const json = JSON.parse(text.startsWith("{") ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? "null")) as { result?: { structuredContent?: unknown; isError?: boolean } };
    expect(json.result?.isError ?? false, `${name} ${text.slice(0, 200)}`).toBe(false);
    expect(json.result?.structuredContent, name).toBeDefined();
    out[`mcp ${name} ${JSON.stringify(args)}`] = strip(json.result?.structuredContent);
  }
  const scope = openReadScope(db, p.project_id, NOW);
  for (const [from, to] of RANGES) {
    const range = rangeFromDays(Date.parse(from!), Date.parse(to!));
    const params = { range, client: undefined, search: undefined, page: 1 };
    out[`overview ${from} ${to}`] = strip(await loadOverview(scope, params, 3));
    out[`tool page ${from} ${to}`] = strip(await loadToolPage(scope, "search", params, 3));
  }
  return out;
}

// The workload's tests take seconds (a rollup of ~1,400 calls, ~100 answers read twice): a timeout
// far above that, so a busy machine never fails them.
describe("folding a workload of more than 90 days", () => {
  it("deletes the hour rows before the horizon and leaves every answer over those days equal", async () => {
    const p = await createProject();
    const other = await createProject("other");
    await seedWorkload(p);
    await seedWorkload(other);
    vi.useFakeTimers({ toFake: ["Date"], now: NOW + HOUR });
    const before = await answers(p);
    const { days: daysBefore } = await snapshot(db);
    const oldHours = await hourRows(`hour_start_ms < ${HORIZON}`);
    const keptHours = await hourRows(`hour_start_ms >= ${HORIZON}`);
    expect(oldHours).toBeGreaterThan(500);

    const r = await runRetention(db, NOW);
    expect(r).toMatchObject({ hourHorizonMs: HORIZON, skippedBecauseRollupBehind: false, caughtUp: true });
    expect(r.foldedHourRows).toBeGreaterThan(0);

    // Only the hours around search's schema change stay before the horizon, for both projects.
    const { before: windowBefore, after: windowAfter } = schemaChangeWindows(SCHEMA_CHANGE);
    const firstKeptDay = windowBefore.startMs - (windowBefore.startMs % DAY);
    const outsideWindow = `hour_start_ms < ${HORIZON} AND NOT (tool_name = 'search' AND hour_start_ms >= ${firstKeptDay} AND hour_start_ms < ${windowAfter.endMs + DAY})`;
    expect(await hourRows(outsideWindow)).toBe(0);
    const inWindow = await hourRows(`hour_start_ms < ${HORIZON} AND tool_name = 'search'`);
    expect(inWindow).toBeGreaterThan(0);
    expect(r.foldedHourRows).toBe(oldHours - inWindow);
    expect(await hourRows(`hour_start_ms >= ${HORIZON}`)).toBe(keptHours);
    expect((await snapshot(db)).days).toEqual(daysBefore);

    expect(await answers(p)).toEqual(before);
    // A second run finds nothing more to fold.
    expect((await runRetention(db, NOW)).foldedHourRows).toBe(0);
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// Bounded, checked, never too young.
// ---------------------------------------------------------------------------------------------

/** 24 hour rows of one (project, day, tool, client), in one statement (the day row follows by trigger). */
async function fullDay(projectId: string, dayStartMs: number, tool = "search", client = "claude"): Promise<void> {
  const value = (c: string) => ({ calls: "n + 1", ok: "n + 1", first_call_attempts: "n + 1", first_call_ok: "n" })[c] ?? "0";
  await db
    .prepare(
      `INSERT INTO tool_hour_metrics (project_id, hour_start_ms, tool_name, client_name, ${COUNTER_NAMES.join(", ")}, duration_histogram_json)
       WITH RECURSIVE h (n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM h WHERE n < 23)
       SELECT ?1, ?2 + n * ${HOUR}, ?3, ?4, ${COUNTER_NAMES.map(value).join(", ")}, json_object('10', n + 1) FROM h`,
    )
    .bind(projectId, dayStartMs, tool, client)
    .run();
}

async function markRolledUp(asOfMs = NOW): Promise<void> {
  await db.prepare("INSERT OR REPLACE INTO rollup_state (name, value) VALUES ('as_of_ms', ?1)").bind(asOfMs).run();
}

describe("the fold", () => {
  it("never folds the day at the horizon; folds the day before it, to its last hour", async () => {
    await seedHour({ projectId: "p1", hourMs: HORIZON - HOUR, tool: "a", client: "c", counters: { calls: 1, ok: 1 } });
    await seedHour({ projectId: "p1", hourMs: HORIZON, tool: "a", client: "c", counters: { calls: 2, ok: 2 } });
    await seedHour({ projectId: "p1", hourMs: HORIZON - DAY, tool: "a", client: "c", counters: { calls: 3, ok: 3 } });
    await markRolledUp(Date.UTC(2026, 10, 22));
    // At any time of the horizon's own day + 90, the day at the horizon stays.
    for (const at of [Date.UTC(2026, 10, 21), NOW, Date.UTC(2026, 10, 22) - 1]) {
      const r = await runRetention(db, at);
      expect(r.hourHorizonMs).toBe(HORIZON);
    }
    const { results } = await db.prepare("SELECT hour_start_ms FROM tool_hour_metrics ORDER BY hour_start_ms").all<{ hour_start_ms: number }>();
    expect(results.map((row) => row.hour_start_ms)).toEqual([HORIZON]);
    // The next day, it goes.
    expect((await runRetention(db, Date.UTC(2026, 10, 22))).foldedHourRows).toBe(1);
    expect(await hourRows()).toBe(0);
    expect((await snapshot(db)).days.map((d) => d.calls)).toEqual([4, 2]);
  });

  it("folds nothing while the rollup is behind", async () => {
    await fullDay("p1", HORIZON - 10 * DAY);
    await db.prepare("INSERT OR REPLACE INTO rollup_state (name, value) VALUES ('as_of_ms', ?1)").bind(NOW - 13 * HOUR).run();
    const r = await runRetention(db, NOW);
    expect(r).toMatchObject({ skippedBecauseRollupBehind: true, foldedHourRows: 0 });
    expect(await hourRows()).toBe(24);
  });

  it("keeps the hours of a day row that is missing or differs from their sum in any counter", async () => {
    const broken = COUNTER_NAMES.map((_, n) => HORIZON - (30 + n) * DAY);
    const whole = HORIZON - 20 * DAY;
    for (const d of [...broken, whole]) await fullDay("p1", d);
    await fullDay("p1", broken[0]!, "other"); // folded beside the missing day row of its day
    await db.prepare("DELETE FROM tool_day_metrics WHERE day_start_ms = ?1 AND tool_name = 'search'").bind(broken[0]).run();
    // Every other counter off by one on its own day.
    for (const [n, counter] of COUNTER_NAMES.slice(1).entries()) {
      await db.prepare(`UPDATE tool_day_metrics SET ${counter} = ${counter} + 1 WHERE day_start_ms = ?1`).bind(broken[n + 1]).run();
    }
    await markRolledUp();
    const r = await runRetention(db, NOW);
    expect(r.foldedHourRows).toBe(48);
    const { results } = await db
      .prepare("SELECT hour_start_ms - hour_start_ms % 86400000 AS day, tool_name, COUNT(*) AS n FROM tool_hour_metrics GROUP BY 1, 2 ORDER BY 1 DESC")
      .all<{ day: number; tool_name: string; n: number }>();
    expect(results).toEqual(broken.map((day) => ({ day, tool_name: "search", n: 24 })));
  });

  it("works through a backlog in bounded steps over several runs", async () => {
    // 3 projects × 20 days × 2 (tool, client) = 2,880 old hour rows, and a recent day that stays.
    for (const project of ["p1", "p2", "p3"]) {
      for (let n = 1; n <= 20; n++) {
        await fullDay(project, HORIZON - n * DAY, "search", "claude");
        await fullDay(project, HORIZON - n * DAY, "fetch", "cursor");
      }
    }
    await fullDay("p2", HORIZON);
    await markRolledUp();
    const daysBefore = (await snapshot(db)).days;
    const statementBudget = 9; // the as_of check, the raw deletes' 4, 2 fold steps of 2 statements
    const runs: number[] = [];
    for (let run = 0; run < 40; run++) {
      const left = await hourRows(`hour_start_ms < ${HORIZON}`);
      const r = await runRetention(db, NOW, { maxQueries: statementBudget, foldRows: 100 });
      expect(r.queries).toBeLessThanOrEqual(statementBudget);
      // A step takes 100 rows and the rest of its last project-day (48 rows a day here).
      expect(r.foldedHourRows).toBeLessThanOrEqual(2 * (100 + 48));
      expect(left - (await hourRows(`hour_start_ms < ${HORIZON}`))).toBe(r.foldedHourRows);
      // Never a part of a day: each project-day is whole or gone.
      const { results } = await db
        .prepare(`SELECT COUNT(*) AS n FROM tool_hour_metrics WHERE hour_start_ms < ${HORIZON} GROUP BY project_id, hour_start_ms - hour_start_ms % ${DAY}`)
        .all<{ n: number }>();
      expect(results.every((row) => row.n === 48)).toBe(true);
      runs.push(r.foldedHourRows);
      if (r.caughtUp) break;
    }
    expect(runs.length).toBeGreaterThanOrEqual(10);
    expect(runs.reduce((a, b) => a + b, 0)).toBe(3 * 20 * 48);
    expect(await hourRows()).toBe(24);
    expect((await snapshot(db)).days).toEqual(daysBefore);
  }, 120_000);

  it("reads at most foldRowsPerRun old hour rows a run, and a step at least one project-day", async () => {
    for (let n = 1; n <= 10; n++) await fullDay("p1", HORIZON - n * DAY);
    await markRolledUp();
    // 240 old rows, 24 a day: a run that may read 48 in steps of 24 folds two days.
    const first = await runRetention(db, NOW, { foldRows: 24, foldRowsPerRun: 48 });
    expect(first).toMatchObject({ foldedHourRows: 48, caughtUp: false });
    // A step smaller than one day still folds that day whole.
    const second = await runRetention(db, NOW, { foldRows: 1, foldRowsPerRun: 1 });
    expect(second).toMatchObject({ foldedHourRows: 24, caughtUp: false });
    const third = await runRetention(db, NOW);
    expect(third).toMatchObject({ foldedHourRows: 168, caughtUp: true });
    expect(await hourRows()).toBe(0);
  });

  it("a step reads from its cursor on: kept hours at the front never stall the fold", async () => {
    // p1's oldest days hold the hours of a schema change (kept); everything after them is folded.
    await seedRegistered("p1", "search", { schemaHash: "v2" });
    await seedVersion("p1", "search", { schemaHash: "v1", descriptionHash: "d", firstSeenMs: 0, lastSeenMs: HORIZON - 50 * DAY });
    await seedVersion("p1", "search", { schemaHash: "v2", descriptionHash: "d", firstSeenMs: HORIZON - 50 * DAY + HOUR, lastSeenMs: NOW });
    for (let n = 40; n <= 60; n++) await fullDay("p1", HORIZON - n * DAY);
    await fullDay("p2", HORIZON - 70 * DAY);
    await markRolledUp();
    for (let run = 0; run < 20; run++) if ((await runRetention(db, NOW, { foldRows: 30 })).caughtUp) break;
    const { results } = await db
      .prepare("SELECT DISTINCT project_id, (hour_start_ms - hour_start_ms % 86400000) AS day FROM tool_hour_metrics ORDER BY day")
      .all<{ project_id: string; day: number }>();
    // The change is at HORIZON − 50 days + 1 h: its windows reach from 57 days to 43 days back.
    expect(results).toEqual(Array.from({ length: 15 }, (_, i) => ({ project_id: "p1", day: HORIZON - (57 - i) * DAY })));
  });
});

describe("the fold's query plans", () => {
  // Hour rows, day rows, registered tools and versions are reached by their keys, never scanned: a
  // step's reads follow the rows it folds, not the size of the tables. (`v` is the tool versions
  // source, db/tool-versions.ts: a subquery whose tables are searched by key.)
  for (const [name, sql] of Object.entries(FOLD_SQL)) {
    it(`${name} searches every table by its key`, async () => {
      const params: SqlParams = name === "foldDays" ? { units: "[]" } : { cursor_project_id: "", cursor_hour_ms: 0, horizon_ms: HORIZON, max_rows: 100 };
      const { results } = await namedStatement(db, `EXPLAIN QUERY PLAN ${sql}`, params).all<{ detail: string }>();
      const plan = results.map((r) => r.detail);
      expect(plan).toContain("SEARCH h USING PRIMARY KEY (project_id=? AND hour_start_ms>? AND hour_start_ms<?)");
      expect(plan.filter((d) => /^SCAN (h|d|r|tool_hour_metrics|tool_day_metrics|registered_tools|tool_versions|raw_startups)\b/.test(d))).toEqual([]);
    });
  }
});

describe("the schema-change windows in SQL", () => {
  it("agree with latestSchemaChange and schemaChangeWindows", async () => {
    type V = { schema_hash: string; first_seen_ms: number; last_seen_ms: number };
    const cases: { name: string; current: string | null; versions: V[] }[] = [
      { name: "one schema", current: "a", versions: [{ schema_hash: "a", first_seen_ms: 1_000, last_seen_ms: 5 * DAY }] },
      { name: "a to b", current: "b", versions: [{ schema_hash: "a", first_seen_ms: 0, last_seen_ms: 3 * DAY + 1 }, { schema_hash: "b", first_seen_ms: 3 * DAY + 7 * HOUR + 5, last_seen_ms: 9 * DAY }] },
      { name: "a to b to a", current: "a", versions: [{ schema_hash: "a", first_seen_ms: 0, last_seen_ms: 20 * DAY }, { schema_hash: "b", first_seen_ms: DAY, last_seen_ms: 12 * DAY + 30 * 60_000 }] },
      { name: "b seen after a took over", current: "a", versions: [{ schema_hash: "a", first_seen_ms: 10 * DAY, last_seen_ms: 20 * DAY }, { schema_hash: "b", first_seen_ms: 0, last_seen_ms: 15 * DAY }] },
      { name: "no hash before", current: "a", versions: [{ schema_hash: "", first_seen_ms: 0, last_seen_ms: 2 * DAY }, { schema_hash: "a", first_seen_ms: DAY, last_seen_ms: 3 * DAY }] },
      { name: "current never seen", current: "z", versions: [{ schema_hash: "a", first_seen_ms: 0, last_seen_ms: 2 * DAY }] },
      { name: "no schema hash", current: null, versions: [{ schema_hash: "a", first_seen_ms: 0, last_seen_ms: 2 * DAY }, { schema_hash: "", first_seen_ms: 3 * DAY, last_seen_ms: 4 * DAY }] },
    ];
    for (const c of cases) {
      await seedRegistered("p1", c.name, { schemaHash: c.current });
      for (const [i, v] of c.versions.entries()) {
        await seedVersion("p1", c.name, { schemaHash: v.schema_hash, descriptionHash: `d${i}`, firstSeenMs: v.first_seen_ms, lastSeenMs: v.last_seen_ms });
      }
    }
    const { results } = await db.prepare(schemaChangeSpansSql("SELECT ?1")).bind("p1").all<{ tool_name: string; first_ms: number; end_ms: number }>();
    const fromSql = Object.fromEntries(results.map((r) => [r.tool_name, [r.first_ms, r.end_ms]]));
    const fromJs = Object.fromEntries(
      cases.flatMap((c) => {
        const found = c.current === null ? null : latestSchemaChange(c.current, c.versions);
        if (!found) return [];
        const w = schemaChangeWindows(found.changedAtMs);
        return [[c.name, [w.before.startMs, w.after.endMs]]];
      }),
    );
    expect(Object.keys(fromJs).sort()).toEqual(["a to b", "a to b to a", "b seen after a took over", "no hash before"]);
    expect(fromSql).toEqual(fromJs);
  });
});
