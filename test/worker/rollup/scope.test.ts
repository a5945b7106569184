// Which projects a rollup run leaves alone is decided once per run, in the transaction that takes its
// lease (rollup/scope.ts): a move that holds or releases a project, or a recompute asked for, in the
// middle of a run changes nothing that run does, and nothing is folded twice, lost, or folded under
// a recompute.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import type { Env } from "../../../src/worker/env.ts";
import { findHold } from "../../../src/worker/db/moves.ts";
import { readRecompute, requestRecompute } from "../../../src/worker/db/recomputes.ts";
import { startMove } from "../../../src/worker/moves/start.ts";
import { MOVE_ROLLUP_WAIT_MS, runMoveSteps } from "../../../src/worker/moves/steps.ts";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { withRollupLease } from "../../../src/worker/db/rollup-state.ts";
import { capturingQueue } from "../helpers/faults.ts";
import { createProject } from "../helpers/projects.ts";
import { call, calls, deliver, hourCounters, resetDb } from "./fixtures.ts";

const T = Date.UTC(2026, 10, 20, 10, 0);
const NOW = T + 3_600_000;
const MINUTE = 60_000;

/** The move's jobs never run behind the test's back. */
const bindings = (): Env => ({ ...env, ROLLUP_QUEUE: capturingQueue().queue }) as Env;

/** `db`, which runs `between` once, before the run's second batch: after the one that took the lease and decided. */
function midRun(db: D1Database, between: () => Promise<void>): D1Database {
  let batches = 0;
  return new Proxy(db, {
    get(target, prop) {
      if (prop !== "batch") return Reflect.get(target, prop, target);
      return async (statements: D1PreparedStatement[]) => {
        batches += 1;
        if (batches === 2) await between();
        return target.batch(statements);
      };
    },
  });
}

/** Three calls of one session of `projectId`. */
const request = (projectId: string, i: number) =>
  calls([0, 1, 2].map((k) => call({ project_id: projectId, session_id: `s${i % 2}`, tool_name: k === 1 ? "fetch" : "search", started_at_ms: T + i * 1_000 + k * 100, args_hash: `a${k}` })));
const waitingCalls = async (db: D1Database, projectId: string) =>
  (await db.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches WHERE project_id = ?1").bind(projectId).first<{ n: number }>())!.n;
const phaseOf = async (moveId: string) =>
  (await env.DB.prepare("SELECT phase FROM moves WHERE move_id = ?1").bind(moveId).first<{ phase: string }>())!.phase;
const countersOf = async (db: D1Database, projectId: string) =>
  (await hourCounters(db)).filter((r) => r.project_id === projectId).map(({ project_id: _p, ...rest }) => rest);

beforeEach(async () => {
  await resetDb(env.DB);
  await resetDb(env.DB_2!);
});

describe("a move during a rollup run", () => {
  it("its hold waits for the run, which folds the project's calls; once held, the next run leaves them alone", async () => {
    const p = await createProject("held during a run", "DB");
    await deliver(env.DB, request(p.project_id, 0), NOW - 10_000);
    const move = await startMove(bindings(), p.project_id, "DB_2", Date.now());
    const during: { waitUntilMs?: number | null; hold?: unknown; phase?: string } = {};
    const run = await runRollup(midRun(env.DB, async () => {
      const r = await runMoveSteps(bindings(), move.move_id, Date.now(), { maxSteps: 1 });
      Object.assign(during, { waitUntilMs: r.waitUntilMs, hold: await findHold(env.DB, p.project_id), phase: await phaseOf(move.move_id) });
    }), NOW, { pauseMs: 0 });
    expect(during).toMatchObject({ hold: null, phase: "hold" });
    expect(during.waitUntilMs).toBeGreaterThan(0);
    expect(run).toMatchObject({ leaseHeld: false, newCalls: 3 });
    expect(await waitingCalls(env.DB, p.project_id)).toBe(0);

    // After the run the hold is taken (the target's too), and a run leaves the held project alone.
    await runMoveSteps(bindings(), move.move_id, Date.now() + MOVE_ROLLUP_WAIT_MS, { maxSteps: 1 });
    expect(await findHold(env.DB, p.project_id)).toMatchObject({ move_id: move.move_id, role: "source" });
    expect(await findHold(env.DB_2!, p.project_id)).toMatchObject({ move_id: move.move_id, role: "target" });
    const before = await countersOf(env.DB, p.project_id);
    await deliver(env.DB, request(p.project_id, 1), NOW + MINUTE);
    await runRollup(env.DB, NOW + 5 * MINUTE, { pauseMs: 0 });
    expect(await waitingCalls(env.DB, p.project_id)).toBe(3);
    expect(await countersOf(env.DB, p.project_id)).toEqual(before);
  });

  it("its release in the target waits for the target's run, which leaves the project alone; the next run folds what was drained", async () => {
    const p = await createProject("released during a run", "DB");
    await deliver(env.DB, request(p.project_id, 0), NOW - 10_000);
    await runRollup(env.DB, NOW, { pauseMs: 0 });
    const move = await startMove(bindings(), p.project_id, "DB_2", Date.now());
    // Calls that reach the source during the move, drained into the target unfolded.
    await deliver(env.DB, request(p.project_id, 1), NOW + MINUTE);
    let clock = Date.now();
    let phase = "hold";
    for (let i = 0; i < 500 && phase !== "release"; i++) {
      const r = await runMoveSteps(bindings(), move.move_id, clock, { maxSteps: 1, clock: () => Date.now() });
      clock = Math.max(clock + 1_000, r.waitUntilMs ?? 0);
      phase = await phaseOf(move.move_id);
    }
    expect(phase).toBe("release");
    expect(await waitingCalls(env.DB_2!, p.project_id)).toBe(3);

    // The target's run has work of another project, so it takes the lease.
    await deliver(env.DB_2!, request("another", 2), NOW + 2 * MINUTE);
    const during: { waitUntilMs?: number | null; hold?: unknown; phase?: string } = {};
    const run = await runRollup(midRun(env.DB_2!, async () => {
      const r = await runMoveSteps(bindings(), move.move_id, clock, { maxSteps: 1 });
      Object.assign(during, { waitUntilMs: r.waitUntilMs, hold: await findHold(env.DB_2!, p.project_id), phase: await phaseOf(move.move_id) });
    }), NOW + 5 * MINUTE, { pauseMs: 0 });
    expect(during).toMatchObject({ hold: { move_id: move.move_id, role: "target" }, phase: "release" });
    expect(during.waitUntilMs).toBeGreaterThan(0);
    expect(run).toMatchObject({ leaseHeld: false, newCalls: 3 });
    expect(await waitingCalls(env.DB_2!, p.project_id)).toBe(3);

    await runMoveSteps(bindings(), move.move_id, clock + MOVE_ROLLUP_WAIT_MS, { maxSteps: 1 });
    expect(await findHold(env.DB_2!, p.project_id)).toBeNull();
    const next = await runRollup(env.DB_2!, NOW + 10 * MINUTE, { pauseMs: 0 });
    expect(next.newCalls).toBe(3);
    expect(await waitingCalls(env.DB_2!, p.project_id)).toBe(0);
    expect((await countersOf(env.DB_2!, p.project_id)).reduce((n, r) => n + r.calls, 0)).toBe(6);
  }, 60_000);

  it("a step that changes holds takes the database's rollup lease: a run that starts meanwhile does nothing, and none is taken while a run holds it", async () => {
    await deliver(env.DB, request("waiting", 0), NOW - 10_000);
    const inside = await withRollupLease(env.DB, "move:mov_test", Date.now(), MINUTE, () => runRollup(env.DB, NOW, { pauseMs: 0 }));
    expect(inside?.value).toMatchObject({ leaseHeld: true, newCalls: 0 });
    const refused: unknown[] = [];
    const run = await runRollup(midRun(env.DB, async () => {
      refused.push(await withRollupLease(env.DB, "move:mov_test", Date.now(), MINUTE, async () => "ran"));
    }), NOW, { pauseMs: 0 });
    expect(refused).toEqual([null]);
    expect(run).toMatchObject({ leaseHeld: false, newCalls: 3 });
  });
});

describe("a recompute asked for during a rollup run", () => {
  it("is not stepped by that run, which folds the project's calls; the next run leaves them alone until it is done, then folds them", async () => {
    const [twin, p, other] = ["recompute twin", "recomputed", "recomputed before"];
    for (const id of [twin, p, other]) await deliver(env.DB, request(id, 0), NOW - 10_000);
    await runRollup(env.DB, NOW, { pauseMs: 0 });
    // The run steps another project's recompute, one request of calls a chunk between its steps.
    expect(await requestRecompute(env.DB, other, NOW)).toBe(true);
    for (const i of [1, 3, 5]) for (const id of [twin, p]) await deliver(env.DB, request(id, i), NOW + i * 1_000);

    const run = await runRollup(midRun(env.DB, async () => {
      expect(await requestRecompute(env.DB, p, NOW + MINUTE)).toBe(true);
    }), NOW + 5 * MINUTE, { pauseMs: 0, chunkCalls: 1, maxQueries: 300 });
    expect(run).toMatchObject({ newCalls: 18, recomputesDone: 1, caughtUp: true });
    expect(run.callChunks).toBeGreaterThan(2);
    expect((await readRecompute(env.DB, other))?.state).toBe("done");
    expect((await readRecompute(env.DB, p))?.state).toBe("clearing");
    expect(await waitingCalls(env.DB, p)).toBe(0);

    for (const id of [twin, p]) await deliver(env.DB, request(id, 2), NOW + 6 * MINUTE);
    // After every transaction of the next run: while the recompute is under way, the project's calls wait.
    const seen: { state: string | undefined; waiting: number }[] = [];
    const watched = new Proxy(env.DB, {
      get(target, prop) {
        if (prop !== "batch") return Reflect.get(target, prop, target);
        return async (statements: D1PreparedStatement[]) => {
          const r = await target.batch(statements);
          seen.push({ state: (await readRecompute(env.DB, p))?.state, waiting: await waitingCalls(env.DB, p) });
          return r;
        };
      },
    });
    const next = await runRollup(watched, NOW + 10 * MINUTE, { pauseMs: 0, maxQueries: 300 });
    expect(next).toMatchObject({ recomputesDone: 1, caughtUp: true });
    expect(next.recomputeSteps).toBeGreaterThan(1);
    expect(seen.filter((s) => s.state !== "done").every((s) => s.waiting === 3), JSON.stringify(seen)).toBe(true);
    expect(seen.at(-1)).toEqual({ state: "done", waiting: 0 });
    // Every call counted once, and the figures are the twin's.
    expect(await countersOf(env.DB, p)).toEqual(await countersOf(env.DB, twin));
    expect((await countersOf(env.DB, p)).reduce((n, r) => n + r.calls, 0)).toBe(15);
  });
});
