// Day rows for past days only (migration 0029, src/worker/db/day-marks.ts, rollup/day-fold.ts): a
// project's hour rows of today are not written to day rows by trigger; reads add them, and the
// rollup folds a day's hour rows into day rows once the day is over, in bounded steps. Two
// projects get the same workload: `folded` has the marks the rollup gives it, `control` a mark far
// in the future, so its day rows are written by trigger as they were before 0029. Every answer of
// the two must be equal at every point: before a fold, after each single step, after a late call.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { clearFinalSumsCache } from "../../../src/worker/metrics/counter-sums.ts";
import { COUNTER_NAMES } from "../../../src/worker/metrics/counters.ts";
import { DAY_FOLD_SQL, runDayFoldStep } from "../../../src/worker/rollup/day-fold.ts";
import { namedStatement } from "../../../src/worker/db/named-sql.ts";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { createProject, type TestProject } from "../helpers/projects.ts";
import { getJson } from "../metrics/seed.ts";
import { call, deliver, resetDb, type TestPayload } from "./fixtures.ts";

const db = env.DB;
const DAY = 86_400_000;
const HOUR = 3_600_000;
const D0 = Date.UTC(2026, 10, 18); // the workload's first day
const FAR = Date.UTC(2100, 0, 1);

beforeEach(async () => {
  await resetDb(db);
  clearFinalSumsCache();
});

/** A day of calls of one project: 3 tools, 2 clients, sessions with retries, sessionless calls, hours 1–22. */
function dayOfCalls(projectId: string, dayMs: number, seed: number): TestPayload[] {
  const payloads: TestPayload[] = [];
  for (let i = 0; i < 24; i++) {
    const t = dayMs + (1 + (i % 22)) * HOUR + i * 1_000;
    const client = i % 3 === 0 ? "cursor" : "claude";
    const session = i % 5 === 4 ? "" : `s${seed}-${i % 4}`;
    const c = (over: Parameters<typeof call>[0]): TestPayload => ({ type: "call", call: call({ project_id: projectId, session_id: session, client_name: client, ...over }) });
    payloads.push(
      c({ started_at_ms: t, tool_name: "search", args_hash: `a${i % 2}`, outcome: (i + seed) % 4 === 0 ? "bad_args" : "ok", duration_ms: (i * 37) % 900 }),
      c({ started_at_ms: t + 5_000, tool_name: "search", args_hash: "a9", duration_ms: 120 }),
      c({ started_at_ms: t + 60_000, tool_name: i % 2 ? "fetch" : "list", args_hash: "f1", is_empty: i % 6 === 0, duration_ms: 2_000 + i }),
    );
  }
  return payloads;
}

async function deliverDay(projects: TestProject[], dayMs: number, seed: number, receivedAtMs: number): Promise<void> {
  for (const p of projects) await deliver(db, dayOfCalls(p.project_id, dayMs, seed), receivedAtMs);
}

async function rollupUntilCaughtUp(atMs: number, options: Parameters<typeof runRollup>[2] = {}): Promise<void> {
  for (let run = 0; run < 50; run++) if ((await runRollup(db, atMs, { maxQueries: 1_000, ...options })).caughtUp) return;
  throw new Error("the rollup did not catch up");
}

const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The answers that read day rows, `as_of` aside, over the workload's days. */
async function answers(p: TestProject): Promise<Record<string, unknown>> {
  clearFinalSumsCache();
  const [from, to] = [iso(D0 - DAY), iso(D0 + 4 * DAY)];
  const out: Record<string, unknown> = {};
  for (const path of [
    `/v1/metrics/tools?from=${from}&to=${to}`,
    `/v1/metrics/tools?from=${from}&to=${to}&client=cursor`,
    `/v1/metrics/clients?from=${from}&to=${to}&tool=search`,
    `/v1/metrics/timeseries?from=${from}&to=${to}`,
    `/v1/metrics/timeseries?from=${from}&to=${to}&tool=fetch&client=claude`,
    `/v1/metrics/sessions?from=${from}&to=${to}`,
    `/v1/metrics/insights?from=${from}&to=${to}`,
  ]) {
    const { status, body } = await getJson(path, p.read_key);
    expect(status, path).toBe(200);
    out[path] = JSON.parse(JSON.stringify(body, (k, v) => (k === "as_of" ? undefined : v)));
  }
  return out;
}

async function expectSameAnswers(folded: TestProject, control: TestProject): Promise<void> {
  const [a, b] = [await answers(folded), await answers(control)];
  expect(Object.values(a).some((body) => JSON.stringify(body).includes('"calls":'))).toBe(true);
  expect(a).toEqual(b);
}

async function dayRows(p: TestProject, dayMs: number): Promise<Record<string, unknown>[]> {
  const { results } = await db
    .prepare(`SELECT tool_name, client_name, ${COUNTER_NAMES.join(", ")}, duration_histogram_json FROM tool_day_metrics
      WHERE project_id = ?1 AND day_start_ms = ?2 ORDER BY tool_name, client_name`)
    .bind(p.project_id, dayMs)
    .all();
  return results;
}

async function mark(p: TestProject) {
  return db.prepare("SELECT folded_to_ms, cursor_hour_ms, cursor_tool, cursor_client FROM day_marks WHERE project_id = ?1").bind(p.project_id).first<{
    folded_to_ms: number; cursor_hour_ms: number | null; cursor_tool: string | null; cursor_client: string | null;
  }>();
}

async function twoProjects(): Promise<[TestProject, TestProject]> {
  const folded = await createProject("folded");
  const control = await createProject("control");
  await db.prepare("INSERT INTO day_marks (project_id, folded_to_ms) VALUES (?1, ?2)").bind(control.project_id, FAR).run();
  return [folded, control];
}

describe("day rows of finished days only", () => {
  it("writes no day row for the current day, folds a finished day in bounded steps, and every answer stays equal", { timeout: 120_000 }, async () => {
    const [folded, control] = await twoProjects();
    // Day 0: the first run gives the new project a mark at today; day 0 gets no day row.
    await deliverDay([folded, control], D0, 0, D0 + 23 * HOUR);
    await rollupUntilCaughtUp(D0 + 23 * HOUR + 60_000);
    expect(await mark(folded)).toEqual({ folded_to_ms: D0, cursor_hour_ms: null, cursor_tool: null, cursor_client: null });
    expect(await dayRows(folded, D0)).toEqual([]);
    expect((await dayRows(control, D0)).length).toBeGreaterThan(0);
    await expectSameAnswers(folded, control);

    // Day 1, rolled up during day 1: day 0 is folded (the day rows the triggers wrote for
    // `control`), and day 1 has no day row.
    await deliverDay([folded, control], D0 + DAY, 1, D0 + DAY + 23 * HOUR);
    await rollupUntilCaughtUp(D0 + DAY + 23 * HOUR + 60_000);
    expect(await dayRows(folded, D0)).toEqual(await dayRows(control, D0));
    expect(await dayRows(folded, D0 + DAY)).toEqual([]);
    expect((await dayRows(control, D0 + DAY)).length).toBeGreaterThan(0);
    await expectSameAnswers(folded, control);

    // Day 2 begins: day 1 is folded, 7 hour rows a step; the answers equal after every single step.
    const hourRowsOfDay1 = (await db.prepare("SELECT COUNT(*) AS n FROM tool_hour_metrics WHERE project_id = ?1 AND hour_start_ms >= ?2 AND hour_start_ms < ?3")
      .bind(folded.project_id, D0 + DAY, D0 + 2 * DAY).first<{ n: number }>())!.n;
    expect(hourRowsOfDay1).toBeGreaterThan(20);
    let steps = 0;
    for (let more = true; more; steps++) {
      const before = await mark(folded);
      more = (await runDayFoldStep(db, D0 + 2 * DAY, 7)).more;
      const after = await mark(folded);
      if (more) {
        // A full step moves the cursor within day 1, past exactly 7 rows.
        expect(after!.folded_to_ms).toBe(D0 + DAY);
        const passed = await db.prepare(`SELECT COUNT(*) AS n FROM tool_hour_metrics WHERE project_id = ?1 AND hour_start_ms >= ?2
            AND (hour_start_ms, tool_name, client_name) > (?3, ?4, ?5) AND (hour_start_ms, tool_name, client_name) <= (?6, ?7, ?8)`)
          .bind(folded.project_id, D0 + DAY, before!.cursor_hour_ms ?? 0, before!.cursor_tool ?? "", before!.cursor_client ?? "", after!.cursor_hour_ms, after!.cursor_tool, after!.cursor_client)
          .first<{ n: number }>();
        expect(passed!.n).toBe(7);
      }
      await expectSameAnswers(folded, control);
    }
    expect(steps).toBe(Math.floor(hourRowsOfDay1 / 7) + 1);
    expect(await mark(folded)).toEqual({ folded_to_ms: D0 + 2 * DAY, cursor_hour_ms: null, cursor_tool: null, cursor_client: null });
    // Folded, the day rows are the ones the triggers wrote for `control`, histograms included.
    expect(await dayRows(folded, D0 + DAY)).toEqual(await dayRows(control, D0 + DAY));

    // A late call into day 1, after its fold: the trigger moves the day row, as before 0029.
    for (const p of [folded, control]) {
      await deliver(db, [{ type: "call", call: call({ project_id: p.project_id, session_id: "late", started_at_ms: D0 + DAY + 5 * HOUR, tool_name: "search", duration_ms: 40_000 }) }], D0 + 2 * DAY + HOUR);
    }
    await rollupUntilCaughtUp(D0 + 2 * DAY + HOUR + 60_000);
    expect(await dayRows(folded, D0 + DAY)).toEqual(await dayRows(control, D0 + DAY));
    await expectSameAnswers(folded, control);
  });

  it("folds finished days in the rollup run, skipping days without calls", { timeout: 120_000 }, async () => {
    const [folded, control] = await twoProjects();
    await deliverDay([folded, control], D0, 0, D0 + 20 * HOUR);
    await rollupUntilCaughtUp(D0 + 20 * HOUR);
    await deliverDay([folded, control], D0 + DAY, 1, D0 + DAY + 20 * HOUR);
    await deliverDay([folded, control], D0 + 3 * DAY, 3, D0 + 3 * DAY + 20 * HOUR);
    await rollupUntilCaughtUp(D0 + 3 * DAY + 20 * HOUR);
    // Rolled up on day 3: day 1 is over and folded, the mark skips day 2 (no calls) to day 3, which
    // has no day row yet.
    expect(await dayRows(folded, D0 + DAY)).toEqual(await dayRows(control, D0 + DAY));
    expect(await mark(folded)).toMatchObject({ folded_to_ms: D0 + 3 * DAY, cursor_hour_ms: null });
    expect(await dayRows(folded, D0 + 3 * DAY)).toEqual([]);
    await expectSameAnswers(folded, control);
    // Day 5: day 3 is folded, and the mark stops at day 5.
    await rollupUntilCaughtUp(D0 + 5 * DAY + 10 * 60_000);
    expect(await mark(folded)).toMatchObject({ folded_to_ms: D0 + 5 * DAY, cursor_hour_ms: null });
    for (const day of [D0, D0 + DAY, D0 + 2 * DAY, D0 + 3 * DAY]) expect(await dayRows(folded, day)).toEqual(await dayRows(control, day));
    await expectSameAnswers(folded, control);
  });

  it("gives a project without a mark (every project before 0029) one at its last hour row: what the triggers wrote stays", async () => {
    const [folded, control] = await twoProjects();
    // As if upgraded from before 0029: rolled up with every hour row in its day row (a far mark), then no mark.
    await db.prepare("INSERT INTO day_marks (project_id, folded_to_ms) VALUES (?1, ?2)").bind(folded.project_id, FAR).run();
    await deliverDay([folded, control], D0 + DAY, 1, D0 + DAY + 12 * HOUR);
    await rollupUntilCaughtUp(D0 + DAY + 12 * HOUR);
    await db.prepare("DELETE FROM day_marks WHERE project_id = ?1").bind(folded.project_id).run();
    const last = await db.prepare("SELECT hour_start_ms, tool_name, client_name FROM tool_hour_metrics WHERE project_id = ?1 ORDER BY 1 DESC, 2 DESC, 3 DESC LIMIT 1")
      .bind(folded.project_id).first<{ hour_start_ms: number; tool_name: string; client_name: string }>();
    expect(await dayRows(folded, D0 + DAY)).toEqual(await dayRows(control, D0 + DAY));
    // New calls arrive: one before the last row in key order (in: the trigger adds it), one after (out until folded).
    for (const p of [folded, control]) {
      await deliver(db, [
        { type: "call", call: call({ project_id: p.project_id, session_id: "n", started_at_ms: D0 + DAY + 2 * HOUR, tool_name: "zz-new" }) },
        { type: "call", call: call({ project_id: p.project_id, session_id: "n", started_at_ms: D0 + DAY + 23 * HOUR, tool_name: "search" }) },
      ], D0 + DAY + 23 * HOUR + 60_000);
    }
    const r = await namedStatement(db, DAY_FOLD_SQL.markNewProjects, { today_ms: D0 + DAY }).run();
    expect(r.meta.changes).toBe(1);
    expect(await mark(folded)).toEqual({ folded_to_ms: D0 + DAY, cursor_hour_ms: last!.hour_start_ms, cursor_tool: last!.tool_name, cursor_client: last!.client_name });
    // Running it again writes nothing.
    expect((await namedStatement(db, DAY_FOLD_SQL.markNewProjects, { today_ms: D0 + DAY }).run()).meta.rows_written).toBe(0);
    await rollupUntilCaughtUp(D0 + DAY + 23 * HOUR + 120_000);
    const searchAt23 = (rows: Record<string, unknown>[]) => rows.filter((row) => row.tool_name === "search").map((row) => row.calls);
    const newTool = (rows: Record<string, unknown>[]) => rows.filter((row) => row.tool_name === "zz-new");
    const [f, c] = [await dayRows(folded, D0 + DAY), await dayRows(control, D0 + DAY)];
    expect(newTool(f)).toEqual(newTool(c));
    expect(newTool(f)).toHaveLength(1);
    expect(searchAt23(f)).not.toEqual(searchAt23(c)); // the 23:00 call waits for the fold
    await expectSameAnswers(folded, control);
    await rollupUntilCaughtUp(D0 + 2 * DAY);
    expect(await dayRows(folded, D0 + DAY)).toEqual(await dayRows(control, D0 + DAY));
  });
});

describe("the read of day rows with unfolded hours", () => {
  it("answers the same over D1's compound limits: many branches, each with its union", async () => {
    const [folded, control] = await twoProjects();
    await deliverDay([folded, control], D0, 0, D0 + 12 * HOUR);
    await rollupUntilCaughtUp(D0 + DAY + HOUR);
    await deliverDay([folded, control], D0 + DAY, 1, D0 + DAY + 12 * HOUR);
    await rollupUntilCaughtUp(D0 + DAY + 13 * HOUR);
    // The insights read many sums in one request (several UNION ALL branches per statement).
    const path = `/v1/metrics/insights?from=${iso(D0 - 6 * DAY)}&to=${iso(D0 + DAY)}`;
    const [a, b] = [await getJson(path, folded.read_key), await getJson(path, control.read_key)];
    expect(a.status).toBe(200);
    const strip = (body: unknown) => JSON.parse(JSON.stringify(body, (k, v) => (k === "as_of" ? undefined : v)));
    expect(strip(a.body)).toEqual(strip(b.body));
  });
});

describe("the day fold's query plans", () => {
  it("finds the marks before today by their index, not a scan of every project's mark", async () => {
    const step = { today_ms: D0, fold_rows: 100, held_projects: "[]" };
    for (const [sql, params] of [[DAY_FOLD_SQL.pending, { today_ms: D0, held_projects: "[]" }], [DAY_FOLD_SQL.addToDays, step], [DAY_FOLD_SQL.advanceMark, step]] as const) {
      const { results } = await namedStatement(db, `EXPLAIN QUERY PLAN ${sql}`, params).all<{ detail: string }>();
      const plan = results.map((r) => r.detail);
      expect(plan.some((d) => /SEARCH (day_marks|k) USING (COVERING )?INDEX day_marks_by_day \(folded_to_ms<\?\)/.test(d)), plan.join("\n")).toBe(true);
      // (`k` is the one chosen mark, materialized.)
      expect(plan.filter((d) => /^SCAN (day_marks|h|tool_hour_metrics)\b/.test(d)), plan.join("\n")).toEqual([]);
    }
  });
});
