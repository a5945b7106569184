// Moving a project between databases online (SPEC §7; docs/scaling.md "Moving a project"): a
// project moved while its producer keeps sending ends with every answer equal to an identical
// project that never moved, the source keeps no row of it, a failure before the switch leaves it
// whole where it was, every step is bounded, and the admin routes answer as documented. Faults are
// injected at the bindings.
import { createExecutionContext, env, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/worker/index.ts";
import type { Env } from "../../src/worker/env.ts";
import type { KeyBudget, KeyState } from "../../src/worker/budget/key-budget.ts";
import { tablesWithProjectRows } from "../../src/worker/db/projects.ts";
import { DIRECTORY_TABLES, unknownTables } from "../../src/worker/db/moves.ts";
import { MOVE_PAGE_ROWS, MOVE_SETTLE_MS, runMoveSteps, type MoveOptions } from "../../src/worker/moves/steps.ts";
import { createDestination, createRule } from "./alerts/helpers.ts";
import { runDatabaseJob } from "../../src/worker/queues/rollup-jobs.ts";
import { startupsWatermarkSql } from "../../src/worker/db/rollup-state.ts";
import { toolVersionsSourceSql } from "../../src/worker/db/tool-versions.ts";
import { capturingQueue } from "./helpers/faults.ts";
import { runCron } from "./helpers/cron.ts";
import { agreementPayload, callPayload, postIngest, startupPayload } from "./helpers/ingest.ts";
import { adminHeaders, createProject, type TestProject } from "./helpers/projects.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const iso = (ms: number) => new Date(ms).toISOString();

type Move = {
  move_id: string; project_id: string; state: string; phase: string; table: string | null; source: string; target: string;
  counts: Record<string, number>; steps: number; max_step_rows: number; started_at: string; switched_at: string | null; finished_at: string | null; error: string | null;
};

/** The bindings of these tests: the rollup queue only records (a move's jobs never run behind the test's back). */
function bindings(overrides: Partial<Env> = {}): Env {
  return { ...env, ROLLUP_QUEUE: capturingQueue().queue, ...overrides } as Env;
}

async function admin(path: string, init: RequestInit = {}, env_: Env = bindings()): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch!(new Request(`http://worker/v1/admin${path}`, { ...init, headers: adminHeaders() }) as never, env_, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

async function startMove(projectId: string, database: string): Promise<Move> {
  const res = await admin(`/projects/${projectId}/move`, { method: "POST", body: JSON.stringify({ to: database }) });
  expect(res.status).toBe(202);
  return res.json<Move>();
}

async function readMove(moveId: string): Promise<Move> {
  const res = await admin(`/moves/${moveId}`);
  expect(res.status).toBe(200);
  return res.json<Move>();
}

/** A workload of one moment: startups, verdicts and calls of several tools, sessions, clients and outcomes, spread over `spanMs` before `t`. */
function workload(t: number, n: number, spanMs = 30 * MINUTE, tag = 0): Record<string, unknown>[] {
  const outcomes = ["ok", "ok", "tool_error", "ok", "crashed", "bad_args", "ok"];
  const sessions = ["s_aaaaaaaaaaaa", "s_bbbbbbbbbbbb", `s_c${String(tag).padStart(11, "0")}`];
  return [
    startupPayload({ session_id: sessions[tag % 3], client_name: tag % 2 ? "cursor" : "claude-ai" }),
    agreementPayload({ session_id: sessions[0], agreed: tag % 2 === 0, checked_at: iso(t - spanMs / 2) }),
    ...Array.from({ length: n }, (_, i) =>
      callPayload({
        session_id: sessions[(i + tag) % 3],
        client_name: (i + tag) % 2 ? "claude-ai" : "cursor",
        tool_name: ["search_orders", "get_order", "delete_order"][(i + tag) % 3],
        started_at: iso(t - spanMs + Math.floor((i * spanMs) / Math.max(1, n))),
        duration_ms: 10 + i,
        outcome: outcomes[(i + tag) % outcomes.length],
        args_hash: (((i + tag) % 4).toString(16) + "00000000000").slice(0, 12),
        response_bytes: 100 * i,
        is_empty: i % 5 === 0 && outcomes[(i + tag) % outcomes.length] === "ok",
      }),
    ),
  ];
}

/** The read API's answers over a project (`as_of` aside), every metrics endpoint. */
async function answers(p: TestProject, t: number): Promise<Record<string, unknown>> {
  const from = iso(t - 3 * 86_400_000).slice(0, 10);
  const to = iso(t).slice(0, 10);
  const out: Record<string, unknown> = {};
  for (const path of ["tools", "clients", "pairs", "sessions", "timeseries", "descriptions", "agreement", "insights", "schema-regressions", "alerts"]) {
    const range = path === "descriptions" || path === "schema-regressions" || path === "alerts" ? "" : `?from=${from}&to=${to}`;
    const res = await worker.fetch!(new Request(`http://worker/v1/metrics/${path}${range}`, { headers: { authorization: `Bearer ${p.read_key}` } }) as never, env, createExecutionContext());
    expect(res.status, path).toBe(200);
    const body = await res.json<Record<string, unknown>>();
    delete body.as_of;
    out[path] = body;
  }
  // The hourly grain too, over the last day.
  const hourly = await worker.fetch!(new Request(`http://worker/v1/metrics/timeseries?from=${iso(t - 86_400_000).slice(0, 10)}&to=${to}&grain=hour`, { headers: { authorization: `Bearer ${p.read_key}` } }) as never, env, createExecutionContext());
  expect(hourly.status, "timeseries-hour").toBe(200);
  const hourlyBody = await hourly.json<Record<string, unknown>>();
  delete hourlyBody.as_of;
  out["timeseries-hour"] = hourlyBody;
  return out;
}

/**
 * An answer without what differs between two projects by construction — their rules' and
 * destinations' ids and creation times — and the alert states' fields that depend on how many
 * evaluations ran (the twin's ran while the moved project was held) or when a delivery is due.
 */
function withoutEvaluationClock(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value), (k, v) =>
    /since|evaluated|breaches|notified|revision|next_attempt|attempts|^id$|rule_id|destination|created_at|updated_at/.test(k) ? undefined : v);
}

/** Every row of the project in `db`, per table (the directory's tables left out unless asked), sorted. */
async function rowsIn(db: D1Database, projectId: string, withDirectory = false): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of await tablesWithProjectRows(db)) {
    if (!withDirectory && (DIRECTORY_TABLES as readonly string[]).includes(table)) continue;
    const { results } = await db.prepare(`SELECT * FROM "${table}" WHERE project_id = ?1`).bind(projectId).all();
    if (results.length > 0) out[table] = results.map((r) => JSON.stringify(r)).sort();
  }
  return out;
}

const keyStub = (ingestKey: string) => env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(ingestKey.slice(0, 16)));

/** Runs the move one step at a time, calling `between` after each, with the test's clock; waits are skipped by advancing the clock. */
async function driveMove(moveId: string, clock: { now: number }, options: MoveOptions, between: (move: Move) => Promise<void> = async () => {}, env_: Env = bindings()): Promise<Move> {
  for (let i = 0; i < 2_000; i++) {
    const r = await runMoveSteps(env_, moveId, clock.now, { maxSteps: 1, ...options });
    clock.now += r.waitUntilMs !== null ? r.waitUntilMs - clock.now : 1_000;
    const move = await readMove(moveId);
    // The answer's state is one of SPEC §7's four, at every step.
    expect(["copying", "switching", "done", "failed"]).toContain(move.state);
    if (move.finished_at) return move;
    await between(move);
  }
  throw new Error(`the move did not finish: ${JSON.stringify(await readMove(moveId))}`);
}

describe("moving a project to another database", () => {
  it("while its producer keeps sending: every answer equals an identical project that never moved; the source keeps no row of it", async () => {
    const twin = await createProject("twin", "DB");
    const moved = await createProject("twin", "DB");
    const t = Date.now();
    const clock = { now: t };
    // Three days of history, alerts on both.
    for (const p of [twin, moved]) {
      for (const day of [2, 1, 0]) {
        expect((await postIngest({ batch: workload(t - day * 86_400_000, 40, 6 * HOUR, day) }, { key: p.ingest_key, headers: { "idempotency-key": `history-${day}` } })).status).toBe(202);
      }
      const hook = await createDestination(p.project_id, { kind: "webhook", url: "https://hooks.example.com/hook" });
      await createRule(p.project_id, { metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [hook.id] });
    }
    await runCron(clock.now, undefined, bindings());
    const before = await answers(moved, t);
    expect(withoutEvaluationClock(before)).toEqual(withoutEvaluationClock(await answers(twin, t)));

    const move = await startMove(moved.project_id, "DB_2");
    expect(move).toMatchObject({ state: "copying", phase: "hold", source: "DB", target: "DB_2", steps: 0, switched_at: null, finished_at: null, error: null });
    let sent = 0;
    let lateWritten = false;
    const sendBoth = async (extra: Record<string, string> = {}) => {
      sent += 1;
      const body = { batch: workload(t, 6, 20 * MINUTE, sent) };
      for (const p of [twin, moved]) expect((await postIngest(body, { key: p.ingest_key, headers: extra })).status).toBe(202);
    };
    const done = await driveMove(move.move_id, clock, { pageRows: 7 }, async (m) => {
      // Ingest between every step: it answers 202 throughout.
      await sendBoth(sent === 3 ? { "idempotency-key": "during-the-move" } : {});
      // Now and then the cron: the source's rollup skips the held project, the twin's goes on.
      if (sent % 5 === 0) await runCron(clock.now, undefined, bindings());
      if (m.state === "switching" && m.phase === "grace" && !lateWritten) {
        // A write that still lands in the source after the switch: an ingest whose key's object was
        // not told and has not refreshed its state yet (within the grace period).
        lateWritten = true;
        await runInDurableObject(keyStub(moved.ingest_key), async (instance: KeyBudget) => {
          const { state } = await instance.keyState();
          // The switch told the object.
          expect(state?.database).toBe("DB_2");
          await instance.setKeyState({ ...(state as KeyState), database: "DB" });
        });
        const waiting = async () =>
          (await env.DB.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches WHERE project_id = ?1").bind(moved.project_id).first<{ n: number }>())!.n;
        const before = await waiting();
        await sendBoth();
        expect(await waiting()).toBe(before + 6);
        // A resend of a request sent before the switch, after the key's object restarted (it forgot
        // its Idempotency-Keys): the target's guard rows recognise it before the drain.
        for (const p of [twin, moved]) {
          await runInDurableObject(keyStub(p.ingest_key), async (instance: KeyBudget) => {
            (instance as unknown as { idempotencyKeys: Map<string, number> }).idempotencyKeys.clear();
          });
        }
        // The object learns it again (as a refresh would).
        await runInDurableObject(keyStub(moved.ingest_key), async (instance: KeyBudget) => {
          const { state } = await instance.keyState();
          await instance.setKeyState({ ...(state as KeyState), database: "DB_2" });
        });
        const inTarget = async () =>
          (await env.DB_2!.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches WHERE project_id = ?1").bind(moved.project_id).first<{ n: number }>())!.n;
        const waitingBefore = await inTarget();
        const resend = { batch: workload(t, 6, 20 * MINUTE, 3) };
        for (const p of [twin, moved]) expect((await postIngest(resend, { key: p.ingest_key, headers: { "idempotency-key": "during-the-move" } })).status).toBe(202);
        expect(await inTarget()).toBe(waitingBefore);
      }
    });
    expect(lateWritten).toBe(true);
    expect(done).toMatchObject({ state: "done", phase: "finished", error: null, source: "DB", target: "DB_2" });
    expect(done.switched_at).not.toBeNull();
    // The cron's move jobs run steps too, with the default page.
    expect(done.max_step_rows).toBeLessThanOrEqual(MOVE_PAGE_ROWS);
    expect(done.counts.call_state).toBeGreaterThan(7);
    expect(sent).toBeGreaterThan(20);

    // The directory names the target; the source keeps no row of the project (but the directory's).
    const listed = await (await admin("/projects")).json<{ projects: { project_id: string; database: string }[] }>();
    expect(listed.projects.find((p) => p.project_id === moved.project_id)?.database).toBe("DB_2");
    // In the first database the project's row is the directory's (with its keys and directory row): nothing else is left.
    expect(Object.keys(await rowsIn(env.DB, moved.project_id))).toEqual(["projects"]);
    const directory = await rowsIn(env.DB, moved.project_id, true);
    expect(Object.keys(directory).sort()).toEqual(["api_keys", "moves", "project_databases", "projects"]);
    expect(Object.keys(await rowsIn(env.DB_2!, moved.project_id))).toEqual(expect.arrayContaining(["projects", "sessions", "call_state", "tool_hour_metrics", "tool_day_metrics", "alert_rules", "alert_states"]));
    expect(await rowsIn(env.DB_2!, moved.project_id)).not.toHaveProperty("project_holds");
    expect(await rowsIn(env.DB_2!, moved.project_id)).not.toHaveProperty("move_cursors");

    // A resend of a request sent during the move, after the key's object forgot its keys: counted once.
    for (const p of [twin, moved]) {
      await runInDurableObject(keyStub(p.ingest_key), async (instance: KeyBudget) => {
        (instance as unknown as { idempotencyKeys: Map<string, number> }).idempotencyKeys.clear();
      });
    }
    const resend = { batch: workload(t, 6, 20 * MINUTE, 3) };
    for (const p of [twin, moved]) expect((await postIngest(resend, { key: p.ingest_key, headers: { "idempotency-key": "during-the-move" } })).status).toBe(202);

    // After the target's rollup: every answer equal to the twin's.
    clock.now += 5 * MINUTE;
    await runCron(clock.now, undefined, bindings());
    const a = await answers(twin, t);
    const b = await answers(moved, t);
    expect(withoutEvaluationClock(b)).toEqual(withoutEvaluationClock(a));
    const calls = (x: Record<string, unknown>) => (x.tools as { tools: { calls: number }[] }).tools.reduce((s, r) => s + r.calls, 0);
    // Tool versions as reads see them (counted rows plus the startups folded in but not counted yet):
    // the same versions and startups (first and last seen are receive times, which differ between the two).
    const versions = async (db: D1Database, id: string) =>
      (await db.prepare(`SELECT tool_name, schema_hash, description_hash, description_norm, startups
        FROM ${toolVersionsSourceSql("?1")} WHERE project_id = ?1 ORDER BY 1, 2, 3`).bind(id).all()).results;
    const twinVersions = await versions(env.DB, twin.project_id);
    expect(twinVersions.length).toBeGreaterThan(0);
    expect(await versions(env.DB_2!, moved.project_id)).toEqual(twinVersions);
    // Every call sent counted once (the resend not at all).
    expect(calls(before)).toBe(3 * 40);
    expect(calls(b)).toBe(3 * 40 + sent * 6);
    expect(JSON.stringify(b.alerts)).toContain("firing");

    // Ingest goes on in the target, and the moved project is an ordinary project there.
    for (const p of [twin, moved]) expect((await postIngest({ batch: workload(t, 5, 10 * MINUTE, 99) }, { key: p.ingest_key })).status).toBe(202);
    clock.now += 5 * MINUTE;
    await runCron(clock.now, undefined, bindings());
    expect(withoutEvaluationClock(await answers(moved, t))).toEqual(withoutEvaluationClock(await answers(twin, t)));
    expect(Object.keys(await rowsIn(env.DB, moved.project_id))).toEqual(["projects"]);
  }, 120_000);

  it("every table with a project_id is named by a move rule", async () => {
    for (const db of [env.DB, env.DB_2!]) expect(unknownTables(await tablesWithProjectRows(db))).toEqual([]);
    expect(unknownTables(["projects", "something_new"])).toEqual(["something_new"]);
  });
});

/** `inner`, failing every statement and batch whose SQL `matches` while `on` is set (a D1 outage at the binding). */
function faultyD1(inner: D1Database, matches: (sql: string) => boolean) {
  const state = { on: false, failed: 0, db: undefined as unknown as D1Database };
  const real = new WeakMap<object, D1PreparedStatement>();
  const sqlOf = new WeakMap<object, string>();
  const outage = () => {
    state.failed += 1;
    return new Error("D1_ERROR: Network connection lost (simulated outage)");
  };
  const wrap = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
        if (prop === "first" || prop === "all" || prop === "run" || prop === "raw") {
          return async (...args: unknown[]) => {
            if (state.on && matches(sql)) throw outage();
            return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, stmt);
    sqlOf.set(proxy, sql);
    return proxy;
  };
  state.db = new Proxy(inner, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (prop === "batch") {
        return async (statements: D1PreparedStatement[]) => {
          if (state.on && statements.some((s) => matches(sqlOf.get(s) ?? ""))) throw outage();
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return state;
}

/** A project in the first database with three days of history, alerts, rolled up. */
async function seeded(name: string, clock: { now: number }, calls = 12): Promise<TestProject> {
  const p = await createProject(name, "DB");
  for (const day of [2, 1, 0]) {
    expect((await postIngest({ batch: workload(clock.now - day * 86_400_000, calls, 6 * HOUR, day) }, { key: p.ingest_key, headers: { "idempotency-key": `seeded-day-${day}` } })).status).toBe(202);
  }
  const hook = await createDestination(p.project_id, { kind: "webhook", url: "https://hooks.example.com/hook" });
  await createRule(p.project_id, { metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [hook.id] });
  await runCron(clock.now, undefined, bindings());
  return p;
}

/** One step (its waits skipped by advancing the clock); the move as it stands after it. */
async function step(moveId: string, clock: { now: number }, env_: Env, options: MoveOptions = {}): Promise<Move> {
  const r = await runMoveSteps(env_, moveId, clock.now, { maxSteps: 1, retryMs: 1_000, ...options });
  clock.now += r.waitUntilMs !== null ? Math.max(1_000, r.waitUntilMs - clock.now) : 1_000;
  return readMove(moveId);
}

const directoryOnly = (sql: string) => /\bmoves\b/.test(sql);

describe("a move that fails before the switch", () => {
  it("at any step, retried until it is given up: the project stays whole in the source and nothing of it is left in the target", async () => {
    const clock = { now: Date.now() };
    // The steps before the switch, from a move that does not fail.
    const probe = await seeded("probe", clock);
    const probeMove = await startMove(probe.project_id, "DB_2");
    const phases: string[] = [];
    for (let m = await readMove(probeMove.move_id); m.switched_at === null && m.finished_at === null; m = await step(probeMove.move_id, clock, bindings())) {
      phases.push(`${m.phase}${m.table ? ` ${m.table}` : ""}`);
    }
    expect(phases[0]).toBe("hold");
    expect(phases.at(-1)).toBe("switch");
    // Every copied table takes a step at least (its last, empty read).
    expect(phases.filter((p) => p.startsWith("copy")).length).toBeGreaterThan(18);

    for (const [k, phase] of phases.entries()) {
      if (phase === "settle") continue; // a timer: it touches no database
      // Each move on its own clock, as the probe's (the rows a resend must still find depend on it).
      clock.now = Date.now();
      const p = await seeded(`fails at step ${k}`, clock);
      const source = await rowsIn(env.DB, p.project_id);
      const move = await startMove(p.project_id, "DB_2");
      for (let i = 0; i < k; i++) await step(move.move_id, clock, bindings());
      // The switch reads the source; the other steps fail at the target or at the source in turn.
      const inTarget = phase !== "switch" && k % 2 === 0;
      const fault = inTarget ? faultyD1(env.DB_2!, () => true) : faultyD1(env.DB, (sql) => !directoryOnly(sql));
      const faulty = bindings(inTarget ? { DB_2: fault.db } : { DB: fault.db });
      fault.on = true;
      let m = await readMove(move.move_id);
      expect(`${m.phase}${m.table ? ` ${m.table}` : ""}`, `step ${k}`).toBe(phase);
      for (let attempt = 0; attempt < 10 && m.state !== "failed"; attempt++) m = await step(move.move_id, clock, faulty);
      expect(m.state, `step ${k} (${phase})`).toBe("failed");
      expect(m.error).toContain(phase.split(" ")[0]);
      expect(fault.failed).toBeGreaterThanOrEqual(5);
      // The rollback runs once the database answers again.
      fault.on = false;
      for (let i = 0; i < 200 && m.finished_at === null; i++) m = await step(move.move_id, clock, bindings());
      expect(m).toMatchObject({ state: "failed", phase: "finished" });
      expect(await rowsIn(env.DB_2!, p.project_id, true), `step ${k}`).toEqual({});
      expect((await env.DB_2!.prepare("SELECT COUNT(*) AS n FROM move_cursors WHERE move_id = ?1").bind(move.move_id).first<{ n: number }>())?.n).toBe(0);
      expect(await rowsIn(env.DB, p.project_id), `step ${k}`).toEqual(source);
      const listed = await (await admin("/projects")).json<{ projects: { project_id: string; database: string }[] }>();
      expect(listed.projects.find((x) => x.project_id === p.project_id)?.database).toBe("DB");
    }
  }, 240_000);

  it("with ingest during it: what the held source skipped is folded after the failure, and every answer equals a twin's", async () => {
    const clock = { now: Date.now() };
    const twin = await seeded("twin of a failed move", clock);
    const p = await seeded("twin of a failed move", clock);
    const move = await startMove(p.project_id, "DB_2");
    let n = 0;
    const sendBoth = async () => {
      n += 1;
      for (const x of [twin, p]) expect((await postIngest({ batch: workload(clock.now, 4, 20 * MINUTE, n) }, { key: x.ingest_key })).status).toBe(202);
    };
    // Copying, with ingest and the cron (the twin's startups and verdicts fold, moving the watermarks past the held ones).
    for (let i = 0; i < 12; i++) {
      await step(move.move_id, clock, bindings(), { pageRows: 5 });
      await sendBoth();
      // The source's rollup job (the cron's move job would take the move on with its own steps).
      // An hour on, so its hourly count of tool versions passes the held project's startups too.
      if (i % 3 === 2) await runDatabaseJob(bindings(), { kind: "rollup", database: "DB", scheduledTimeMs: clock.now + HOUR });
    }
    const held = await env.DB.prepare("SELECT startups_seq FROM project_holds WHERE project_id = ?1").bind(p.project_id).first<{ startups_seq: number }>();
    const watermark = await env.DB.prepare(`SELECT ${startupsWatermarkSql()} AS value`).first<{ value: number }>();
    expect(watermark!.value).toBeGreaterThan(held!.startups_seq);
    const fault = faultyD1(env.DB_2!, () => true);
    fault.on = true;
    let m = await readMove(move.move_id);
    for (let i = 0; i < 10 && m.state !== "failed"; i++) m = await step(move.move_id, clock, bindings({ DB_2: fault.db }));
    expect(m.state).toBe("failed");
    fault.on = false;
    for (let i = 0; i < 200 && m.finished_at === null; i++) m = await step(move.move_id, clock, bindings());
    expect(await rowsIn(env.DB_2!, p.project_id, true)).toEqual({});
    await sendBoth();
    clock.now += 5 * MINUTE;
    await runCron(clock.now, undefined, bindings());
    expect(withoutEvaluationClock(await answers(p, clock.now))).toEqual(withoutEvaluationClock(await answers(twin, clock.now)));
    const tools = (await answers(p, clock.now)).tools as { tools: { calls: number }[] };
    expect(tools.tools.reduce((s, r) => s + r.calls, 0)).toBe(3 * 12 + n * 4);
    // Tool versions as reads see them: every startup counted once, those the held source's hourly count passed over too.
    const versions = async (id: string) =>
      (await env.DB.prepare(`SELECT tool_name, schema_hash, description_hash, startups FROM ${toolVersionsSourceSql("?1")} WHERE project_id = ?1 ORDER BY 1, 2, 3`).bind(id).all()).results;
    const twinVersions = await versions(twin.project_id);
    expect(twinVersions.map((v) => v.startups)).toEqual([3 + n, 3 + n]);
    expect(await versions(p.project_id)).toEqual(twinVersions);
  }, 120_000);
});

describe("a move that fails after the switch", () => {
  it("only goes forward: a failing step is retried until the database answers, and the move ends done", async () => {
    const clock = { now: Date.now() };
    const p = await seeded("forward only", clock);
    const before = await answers(p, clock.now);
    const move = await startMove(p.project_id, "DB_2");
    let m = await readMove(move.move_id);
    while (m.phase !== "drain") m = await step(move.move_id, clock, bindings());
    const fault = faultyD1(env.DB_2!, () => true);
    fault.on = true;
    for (let i = 0; i < 12; i++) m = await step(move.move_id, clock, bindings({ DB_2: fault.db }));
    expect(m).toMatchObject({ state: "switching", phase: "drain", finished_at: null });
    expect(m.error).toContain("drain call_batches");
    expect(fault.failed).toBeGreaterThanOrEqual(12);
    fault.on = false;
    for (let i = 0; i < 500 && m.finished_at === null; i++) m = await step(move.move_id, clock, bindings());
    expect(m).toMatchObject({ state: "done", error: null });
    expect(Object.keys(await rowsIn(env.DB, p.project_id))).toEqual(["projects"]);
    expect(withoutEvaluationClock(await answers(p, clock.now))).toEqual(withoutEvaluationClock(before));
  }, 60_000);
});

describe("bounded steps", () => {
  it("a step writes at most a page of rows, and a table larger than a page takes several steps", async () => {
    const clock = { now: Date.now() };
    const p = await seeded("bounded", clock, 30);
    const sizes: Record<string, number> = {};
    for (const table of ["sessions", "call_state", "tool_hour_metrics", "tool_day_metrics"]) {
      sizes[table] = (await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE project_id = ?1`).bind(p.project_id).first<{ n: number }>())!.n;
    }
    expect(sizes.tool_hour_metrics).toBeGreaterThan(10);
    const move = await startMove(p.project_id, "DB_2");
    const pageRows = 5;
    const perTable: Record<string, number> = {};
    let m = await readMove(move.move_id);
    while (m.finished_at === null) {
      const table = m.phase === "copy" ? m.table : null;
      const before = m.counts[table ?? ""] ?? 0;
      m = await step(move.move_id, clock, bindings(), { pageRows });
      expect(m.max_step_rows).toBeLessThanOrEqual(pageRows);
      if (table && (m.counts[table] ?? 0) > before) perTable[table] = (perTable[table] ?? 0) + 1;
    }
    expect(m.state).toBe("done");
    for (const [table, rows] of Object.entries(sizes)) {
      expect(m.counts[table], table).toBe(rows);
      // A page of at most 5 rows: exactly ceil(rows / 5) steps wrote rows of the table.
      expect(perTable[table], table).toBe(Math.ceil(rows / pageRows));
    }
    expect(m.max_step_rows).toBe(pageRows);
  }, 60_000);

  it("a page is bounded in characters too: at least one row, then as many as fit", async () => {
    const clock = { now: Date.now() };
    const p = await seeded("long rows", clock);
    const move = await startMove(p.project_id, "DB_2");
    let m = await readMove(move.move_id);
    let steps = 0;
    while (m.finished_at === null) {
      const before = Object.values(m.counts).reduce((a, b) => a + b, 0);
      m = await step(move.move_id, clock, bindings(), { pageChars: 1 });
      const written = Object.values(m.counts).reduce((a, b) => a + b, 0) - before;
      expect(written).toBeLessThanOrEqual(1);
      if (written === 1) steps += 1;
    }
    expect(m.state).toBe("done");
    // One row a step: as many writing steps as rows written.
    expect(steps).toBe(Object.values(m.counts).reduce((a, b) => a + b, 0));
  }, 60_000);
});

describe("the admin routes of a move", () => {
  it("POST /v1/admin/projects/:id/move: 202 with the move; 400 for a bad body, an unknown or the same database; 404 for an unknown project; 409 while one runs", async () => {
    const p = await createProject("routes", "DB");
    const post = (id: string, body: unknown) => admin(`/projects/${id}/move`, { method: "POST", body: JSON.stringify(body) });
    const unknownDb = await post(p.project_id, { to: "DB_9" });
    expect(unknownDb.status).toBe(400);
    expect(JSON.stringify(await unknownDb.json())).toContain("DB, DB_2");
    const same = await post(p.project_id, { to: "DB" });
    expect(same.status).toBe(400);
    expect(JSON.stringify(await same.json())).toContain("already in DB");
    expect((await post(p.project_id, {})).status).toBe(400);
    expect((await post(p.project_id, { to: "" })).status).toBe(400);
    expect((await post(p.project_id, { to: "D".repeat(65) })).status).toBe(400);
    expect((await post("prj_doesnotexist00", { to: "DB_2" })).status).toBe(404);

    const queue = capturingQueue();
    const res = await admin(`/projects/${p.project_id}/move`, { method: "POST", body: JSON.stringify({ to: "DB_2" }) }, bindings({ ROLLUP_QUEUE: queue.queue }));
    expect(res.status).toBe(202);
    const move = await res.json<Move>();
    expect(res.headers.get("location")).toBe(`/v1/admin/moves/${move.move_id}`);
    expect(move).toMatchObject({ project_id: p.project_id, state: "copying", source: "DB", target: "DB_2", counts: {}, steps: 0, finished_at: null });
    expect(move.move_id).toMatch(/^mov_[0-9A-Za-z]{16}$/);
    // Its first job is on the rollup queue.
    expect(queue.sent).toEqual([{ v: 1, kind: "move", move_id: move.move_id }]);
    const again = await post(p.project_id, { to: "DB_2" });
    expect(again.status).toBe(409);
    expect(JSON.stringify(await again.json())).toContain(move.move_id);
    // While it runs, the project is not deleted and not recomputed.
    expect((await admin(`/projects/${p.project_id}`, { method: "DELETE" })).status).toBe(409);
    expect((await admin(`/projects/${p.project_id}/recompute`, { method: "POST" })).status).toBe(409);

    expect(await readMove(move.move_id)).toEqual(move);
    expect((await admin("/moves/mov_doesnotexist000")).status).toBe(404);
    const unauthorized = await worker.fetch!(new Request(`http://worker/v1/admin/moves/${move.move_id}`) as never, bindings(), createExecutionContext());
    expect(unauthorized.status).toBe(401);
  });

  it("the project can be moved back once a move is finished; a recompute under way refuses a move", async () => {
    const clock = { now: Date.now() };
    const p = await seeded("there and back", clock);
    const before = await answers(p, clock.now);
    for (const [to, from] of [["DB_2", "DB"], ["DB", "DB_2"]] as const) {
      const move = await startMove(p.project_id, to);
      expect(move.source).toBe(from);
      let m = move;
      for (let i = 0; i < 500 && m.finished_at === null; i++) m = await step(move.move_id, clock, bindings());
      expect(m.state).toBe("done");
    }
    expect(withoutEvaluationClock(await answers(p, clock.now))).toEqual(withoutEvaluationClock(before));
    expect(await rowsIn(env.DB_2!, p.project_id, true)).toEqual({});

    expect((await admin(`/projects/${p.project_id}/recompute`, { method: "POST" })).status).toBe(202);
    const refused = await admin(`/projects/${p.project_id}/move`, { method: "POST", body: JSON.stringify({ to: "DB_2" }) });
    expect(refused.status).toBe(409);
    expect(JSON.stringify(await refused.json())).toContain("recompute");
  }, 60_000);

  it("alert edits of a project being copied away answer 409, and the source's triggers refuse them whatever the path", async () => {
    const clock = { now: Date.now() };
    const p = await seeded("alerts held", clock);
    const move = await startMove(p.project_id, "DB_2");
    await step(move.move_id, clock, bindings()); // hold
    const rule = { metric: "error_rate", op: ">", threshold: 0.5, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [] };
    const refused = await admin(`/projects/${p.project_id}/alert-rules`, { method: "POST", body: JSON.stringify(rule) });
    expect(refused.status).toBe(409);
    expect(JSON.stringify(await refused.json())).toContain("being moved");
    const destination = await admin(`/projects/${p.project_id}/alert-destinations`, { method: "POST", body: JSON.stringify({ kind: "webhook", url: "https://hooks.example.com/x" }) });
    expect(destination.status).toBe(409);
    await expect(env.DB.prepare("DELETE FROM alert_rules WHERE project_id = ?1").bind(p.project_id).run()).rejects.toThrow(/project_moving/);
    await expect(env.DB.prepare("UPDATE alert_destinations SET name = 'x' WHERE project_id = ?1").bind(p.project_id).run()).rejects.toThrow(/project_moving/);
    // Other projects' alerts are not held.
    const other = await createProject("not moving", "DB");
    expect((await admin(`/projects/${other.project_id}/alert-rules`, { method: "POST", body: JSON.stringify(rule) })).status).toBe(201);
    // After the move, edits go to the target.
    let m = await readMove(move.move_id);
    for (let i = 0; i < 500 && m.finished_at === null; i++) m = await step(move.move_id, clock, bindings());
    expect((await admin(`/projects/${p.project_id}/alert-rules`, { method: "POST", body: JSON.stringify(rule) })).status).toBe(201);
    expect((await env.DB_2!.prepare("SELECT COUNT(*) AS n FROM alert_rules WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>())?.n).toBe(2);
  }, 60_000);

  it("runs as jobs on the rollup queue: each job sends the next, delayed over a wait; the cron continues a move whose job was lost", async () => {
    const clock = { now: Date.now() };
    const p = await seeded("queued", clock);
    // The rollup queue, recording each message with its delay.
    const queue = { sent: [] as unknown[], delays: [] as (number | undefined)[] };
    const rollupQueue = {
      async send(body: unknown, options?: { delaySeconds?: number }) {
        queue.sent.push(structuredClone(body));
        queue.delays.push(options?.delaySeconds);
      },
      async sendBatch(messages: Iterable<MessageSendRequest<unknown>>) {
        for (const m of messages) queue.sent.push(structuredClone(m.body));
      },
    } as unknown as Queue<unknown>;
    const env_ = bindings({ ROLLUP_QUEUE: rollupQueue });
    const move = await startMove(p.project_id, "DB_2");
    // A job: the hold, then the settle wait: the next job is sent delayed until it ends.
    const consume = async (body: unknown) => {
      const { createMessageBatch } = await import("cloudflare:test");
      await worker.queue!(createMessageBatch("mcpulse-rollup", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]) as never, env_);
    };
    await consume({ v: 1, kind: "move", move_id: move.move_id, scheduled_time_ms: clock.now });
    expect((await readMove(move.move_id)).phase).toBe("settle");
    expect(queue.sent).toHaveLength(1);
    expect(queue.sent[0]).toEqual({ v: 1, kind: "move", move_id: move.move_id });
    expect(queue.delays[0]).toBe(MOVE_SETTLE_MS / 1000);
    // The job is lost; the cron sends one for every unfinished move, and it runs up to 8 steps.
    queue.sent.length = 0;
    queue.delays.length = 0;
    clock.now += 2 * MINUTE;
    await runCron(clock.now, undefined, env_);
    const m = await readMove(move.move_id);
    expect(m.phase).toBe("copy");
    expect(m.steps).toBe(1 + 8);
    // (Other tests' unfinished moves are continued too.)
    expect(queue.sent.filter((body) => (body as { move_id: string }).move_id === move.move_id)).toEqual([{ v: 1, kind: "move", move_id: move.move_id }]);
    // Two jobs never run the same move at once: the lease.
    const { claimMove } = await import("../../src/worker/db/moves.ts");
    expect(await claimMove(env.DB, move.move_id, clock.now, clock.now + 60_000)).not.toBeNull();
    const busy = await runMoveSteps(env_, move.move_id, clock.now);
    expect(busy).toMatchObject({ steps: 0, busy: true });
  }, 60_000);
});
