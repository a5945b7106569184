// One counter list (src/worker/metrics/counters.ts). What derives from it is checked by the type
// checker; what cannot import it — the day triggers of migration 0013, the counter tables — is
// checked here against it. Then the migration of "Adding a counter" (docs/architecture.md) is
// applied for a counter added at run time, in this test's own database: an hour row written with the
// new counter, its day row (written by the triggers, not by the rollup) and the read API's answer.
// The guide followed for a real counter, through ingest and the rollup, is counter-guide.test.ts.
import { env } from "cloudflare:test";
import { afterAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { CALLS_DATASET } from "../../src/worker/analytics/calls-dataset.ts";
import { DAY_TRIGGER_NAMES, addCounterMigration, addCounterStatements, dayTriggerStatements } from "../../src/worker/db/day-triggers.ts";
import { clearFinalSumsCache } from "../../src/worker/metrics/counter-sums.ts";
import { COUNTERS, COUNTER_NAMES, CounterFigures, PER_CALL_COUNTER_NAMES, RATES } from "../../src/worker/metrics/counters.ts";
import { createProject } from "./helpers/projects.ts";
import { HOUR, dayMs, getJson, seedHour, setAsOf } from "./metrics/seed.ts";

const squash = (sql: string) => sql.replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")").trim().replace(/;$/, "");

async function triggerSql(name: string): Promise<string> {
  const row = await env.DB.prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1").bind(name).first<{ sql: string }>();
  if (!row) throw new Error(`no trigger ${name}`);
  return row.sql;
}

/** The counters a day trigger adds up (`x = x + excluded.x`), in its order. */
const countersOfTrigger = (sql: string) => [...sql.matchAll(/(\w+) = \1 \+ excluded\.\1/g)].map((m) => m[1] as string);

async function columnsOf(table: string): Promise<string[]> {
  const { results } = await env.DB.prepare(`SELECT name FROM pragma_table_info('${table}')`).all<{ name: string }>();
  return results.map((r) => r.name);
}

const KEYS = ["project_id", "hour_start_ms", "day_start_ms", "tool_name", "client_name", "duration_histogram_json"];

describe("the counter list and what cannot import it", () => {
  it("the hour and day tables have exactly the counters' columns", async () => {
    for (const table of ["tool_hour_metrics", "tool_day_metrics"]) {
      expect((await columnsOf(table)).filter((c) => !KEYS.includes(c)).sort(), table).toEqual([...COUNTER_NAMES].sort());
    }
  });

  it("both day triggers add up exactly the counters, and are what dayTriggerStatements writes", async () => {
    for (const [i, name] of DAY_TRIGGER_NAMES.entries()) {
      const sql = await triggerSql(name);
      const order = countersOfTrigger(sql);
      expect([...order].sort(), name).toEqual([...COUNTER_NAMES].sort());
      // Every counter also in the inserted columns and values (NEW.x, or NEW.x - OLD.x on update).
      for (const c of COUNTER_NAMES) expect(sql).toContain(i === 0 ? `NEW.${c},` : `NEW.${c} - OLD.${c}`);
      // The generator reproduces migration 0013 word for word (given 0013's order).
      expect(squash(dayTriggerStatements(order)[i] as string)).toBe(squash(sql));
    }
  });

  it("the check fails on a trigger that misses a counter", () => {
    const missing = dayTriggerStatements(COUNTER_NAMES.filter((c) => c !== "first_call_ok"))[0] as string;
    expect([...countersOfTrigger(missing)].sort()).not.toEqual([...COUNTER_NAMES].sort());
  });

  it("the Analytics Engine doubles are the per-call counters; the answers' schema shows every counter the answers show", () => {
    // double1–9 are the first layout's per-call counters, double10–12 one call's values (started_at,
    // duration, size); a counter added later takes the next free slot (append-only).
    const oneCall = ["started_at_ms", "duration_ms", "response_bytes"];
    const doubles = Object.keys(CALLS_DATASET.doubles);
    expect(doubles.filter((d) => !oneCall.includes(d)).sort()).toEqual([...PER_CALL_COUNTER_NAMES].sort());
    expect(doubles.slice(9, 12)).toEqual(oneCall);
    expect(PER_CALL_COUNTER_NAMES).not.toContain("retries");
    const shown = COUNTER_NAMES.filter((c) => COUNTERS[c].shown === "count");
    for (const field of [...shown, ...Object.keys(RATES), "duration_ms", "response_bytes"]) expect(Object.keys(CounterFigures.shape)).toContain(field);
  });
});

describe("Adding a counter, as docs/architecture.md says", () => {
  const NEW_COUNTER = "slow_calls";
  const before = [...COUNTER_NAMES];

  afterAll(async () => {
    // Leave this file's database and module as they were.
    delete (COUNTERS as Record<string, unknown>)[NEW_COUNTER];
    COUNTER_NAMES.splice(0, COUNTER_NAMES.length, ...before);
    const restore = [
      ...DAY_TRIGGER_NAMES.map((n) => `DROP TRIGGER IF EXISTS ${n}`),
      ...dayTriggerStatements(before),
      `ALTER TABLE tool_hour_metrics DROP COLUMN ${NEW_COUNTER}`,
      `ALTER TABLE tool_day_metrics DROP COLUMN ${NEW_COUNTER}`,
    ];
    await env.DB.batch(restore.map((sql) => env.DB.prepare(sql)));
    clearFinalSumsCache();
  });

  it("the guide's migration refuses a counter that is not in COUNTERS yet (step 1 comes first)", () => {
    expect(() => addCounterMigration(NEW_COUNTER, COUNTER_NAMES)).toThrow(/add it to COUNTERS first/);
    expect(() => addCounterMigration("x; DROP TABLE projects", [...COUNTER_NAMES, "x; DROP TABLE projects"])).toThrow(/not a column name/);
  });

  it("a counter added by the guide reaches its day rows by trigger and the read API's answers", async () => {
    // Hour grain reads only the last 90 days' hours (SPEC §7): the request's clock stands a few days after the data.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 2, 5) });
    onTestFinished(() => void vi.useRealTimers());
    // Step 1, the definition: one entry in COUNTERS (here added at run time, as the source would have it).
    Object.assign(COUNTERS, { [NEW_COUNTER]: { sums: "SUM", shown: "count", perCall: null, description: "calls over a second" } });
    (COUNTER_NAMES as string[]).push(NEW_COUNTER);

    // Step 2, the migration, generated from the list: the columns, and the day triggers recreated.
    expect(addCounterMigration(NEW_COUNTER, COUNTER_NAMES)).toContain(`ALTER TABLE tool_day_metrics ADD COLUMN ${NEW_COUNTER}`);
    await env.DB.batch(addCounterStatements(NEW_COUNTER, COUNTER_NAMES).map((sql) => env.DB.prepare(sql)));
    expect(countersOfTrigger(await triggerSql(DAY_TRIGGER_NAMES[0]))).toContain(NEW_COUNTER);

    // Step 3 fills it in the hour rows (the rollup's statement); here an hour row is written directly,
    // inserted, then changed, plus a second hour of the same day.
    const p = await createProject();
    const day = dayMs("2026-03-02");
    await seedHour({ projectId: p.project_id, hourMs: day + 10 * HOUR, tool: "search", client: "c", counters: { calls: 4, ok: 4, [NEW_COUNTER]: 1 } as never });
    await env.DB.prepare(`UPDATE tool_hour_metrics SET ${NEW_COUNTER} = 3 WHERE project_id = ?1 AND hour_start_ms = ?2`).bind(p.project_id, day + 10 * HOUR).run();
    await seedHour({ projectId: p.project_id, hourMs: day + 11 * HOUR, tool: "search", client: "c", counters: { calls: 2, ok: 2, [NEW_COUNTER]: 2 } as never });
    const dayRow = await env.DB.prepare(`SELECT calls, ${NEW_COUNTER} AS added FROM tool_day_metrics WHERE project_id = ?1`).bind(p.project_id).first<{ calls: number; added: number }>();
    expect(dayRow).toEqual({ calls: 6, added: 5 });

    // The answers: hour grain, day grain and the tools answer all carry it, summed.
    await setAsOf(day + DAY_MS_PLUS);
    clearFinalSumsCache();
    const tools = await getJson<{ tools: Record<string, unknown>[] }>("/v1/metrics/tools?from=2026-03-02&to=2026-03-02", p.read_key);
    expect(tools.body.tools[0]).toEqual(expect.objectContaining({ tool_name: "search", calls: 6, [NEW_COUNTER]: 5 }));
    const hours = await getJson<{ buckets: Record<string, unknown>[] }>("/v1/metrics/timeseries?from=2026-03-02&to=2026-03-02&grain=hour", p.read_key);
    expect(hours.body.buckets.map((b) => b[NEW_COUNTER])).toEqual(expect.arrayContaining([3, 2]));
  });
});

const DAY_MS_PLUS = 36 * HOUR;
