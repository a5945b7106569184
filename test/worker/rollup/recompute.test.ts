/// <reference types="vite/client" />
// Recomputing a project's counters from its raw calls (src/worker/rollup/recompute.ts): after the
// stored chain figures and pairs are damaged, a recompute gives back exactly what the rollup had
// computed (and the reference computes), in bounded steps, without touching another project, with
// the days before the raw window frozen, and with calls arriving during it counted once.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import migrationsDoc from "../../../docs/migrations.md?raw";
import { RECOMPUTE_MARK_SQL, readRecompute, requestRecompute } from "../../../src/worker/db/recomputes.ts";
import { retentionCutoffMs, runRetention, runRollup, type RollupOptions } from "../../../src/worker/rollup/index.ts";
import { recomputeFromMs, runRecomputeStep } from "../../../src/worker/rollup/recompute.ts";
import { DAY_MS, HOUR_MS } from "../../../src/worker/time.ts";
import { adminHeaders } from "../helpers/projects.ts";
import { call, calls, deliver, faultyDb, resetDb, snapshot, type RollupSnapshot, type TestCall } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";
import { buildPayloads, deliverRandomly, emptyReceived, rollupOptionsArb, rollupUntilCaughtUp, workloadArb } from "./workloads.ts";

const db = env.DB;
const T0 = Date.UTC(2026, 10, 20, 23, 0);

beforeEach(() => resetDb(db));

/**
 * Damages a project's chain figures and pairs the way a wrong rule or a bug would: every hour row's
 * retries and chains changed (the day rows follow by trigger), the latest day's pair rows gone and the
 * others holding a pair that never happened.
 */
async function damage(projectId: string): Promise<void> {
  await db.batch([
    db.prepare(`UPDATE tool_hour_metrics SET retries = retries + 3, first_call_attempts = 0, first_call_ok = calls WHERE project_id = ?1`).bind(projectId),
    db.prepare(`DELETE FROM pair_days WHERE project_id = ?1 AND day_start_ms = (SELECT MAX(day_start_ms) FROM pair_days WHERE project_id = ?1)`).bind(projectId),
    db.prepare(`UPDATE pair_days SET pairs_json = json_set(pairs_json, '$."[\\"x\\",\\"y\\"]"', 5) WHERE project_id = ?1`).bind(projectId),
  ]);
}

/** The snapshot's rows of one project (the tables the recompute writes, and the others for good measure). */
function rowsOf(s: RollupSnapshot, projectId: string) {
  return Object.fromEntries(Object.entries(s).map(([table, rows]) => [table, (rows as { project_id: string }[]).filter((r) => r.project_id === projectId)]));
}

/** Runs the rollup until it reports it caught up (recomputes included); the number of runs. */
async function rollupUntilDone(from: number, options: RollupOptions = {}): Promise<number> {
  for (let n = 1; n <= 500; n++) if ((await runRollup(db, from + n * 300_000, options)).caughtUp) return n;
  throw new Error("the rollup never caught up");
}

const BOUNDS = { recomputeCalls: 4, recomputeRows: 3, recomputeSequences: 2 };

/** rollupUntilDone through another D1 binding (one that fails on demand), with small steps. */
async function rollupUntilDoneOn(binding: D1Database, from: number): Promise<void> {
  for (let n = 1; n <= 100; n++) if ((await runRollup(binding, from + n * 300_000, { recomputeCalls: 6, recomputeRows: 4, recomputeSequences: 2, maxQueries: 20 })).caughtUp) return;
  throw new Error("the rollup never caught up");
}

describe("a recompute gives back what the raw calls say", () => {
  it("holds for random workloads, damage and step bounds: the project equals the reference again, the other project keeps its damage", async () => {
    await fc.assert(
      fc.asyncProperty(workloadArb, fc.gen(), async (w, g) => {
        await resetDb(db);
        const received = emptyReceived();
        const scheduled = await deliverRandomly(g, buildPayloads(w, T0), T0 + 2 * HOUR_MS, received);
        expect(await rollupUntilCaughtUp(g, scheduled)).toBe(true);
        const original = await snapshot(db);
        expect(original).toEqual(referenceRollup(received.calls, received.startups, received.agreements));

        await damage("p1");
        await damage("p2");
        const damaged = await snapshot(db);
        expect(await requestRecompute(db, "p1", scheduled)).toBe(true);
        const options = {
          ...g(() => rollupOptionsArb),
          recomputeCalls: g(fc.constantFrom, 1, 5, 30_000),
          recomputeRows: g(fc.constantFrom, 1, 4, 10_000),
          recomputeSequences: g(fc.constantFrom, 1, 3, 2_000),
        };
        await rollupUntilDone(scheduled, options);
        const after = await snapshot(db);
        expect(rowsOf(after, "p1")).toEqual(rowsOf(original, "p1"));
        expect(rowsOf(after, "p2")).toEqual(rowsOf(damaged, "p2"));
        expect(await db.prepare("SELECT (SELECT COUNT(*) FROM recompute_hours) + (SELECT COUNT(*) FROM recompute_pairs) AS n").first("n")).toBe(0);
        expect((await readRecompute(db, "p1"))?.state).toBe("done");
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it("keeps every step within its bounds, and each counting step's sequences whole", async () => {
    const list: TestCall[] = [];
    for (let s = 0; s < 6; s++) {
      for (let i = 0; i < 5; i++) list.push(call({ session_id: `s${s}`, tool_name: i % 2 ? "fetch" : "search", started_at_ms: T0 + s * HOUR_MS + i * 10_000, args_hash: `h${i % 3}` }));
    }
    await deliver(db, calls(list), T0 + DAY_MS);
    await runRollup(db, T0 + DAY_MS + 1);
    const original = await snapshot(db);
    await damage("p1");
    await requestRecompute(db, "p1", T0 + DAY_MS);
    const kinds: string[] = [];
    for (let n = 0; n < 200; n++) {
      const r = await runRecomputeStep(db, T0 + DAY_MS, { recomputeCalls: 12, recomputeRows: 4, recomputeSequences: 10 });
      if (r === null) break;
      const step = JSON.parse((await db.prepare("SELECT step FROM recomputes WHERE project_id = 'p1'").first<string>("step"))!);
      kinds.push(step.kind);
      if (step.kind === "counting") expect(step.calls <= 12 || step.groups.length === 1).toBe(true);
      if (step.kind === "hours") expect(step.rows).toBeLessThanOrEqual(4);
      if (step.kind === "pairs") expect(step.keys).toBeLessThanOrEqual(4);
      expect(r.statements).toBeLessThanOrEqual(6);
    }
    // 6 sequences of 5 calls: two per counting step; 12 hour rows, four per step.
    expect(kinds.filter((k) => k === "counting")).toHaveLength(3);
    expect(kinds.filter((k) => k === "hours")).toHaveLength(3);
    expect(kinds.at(-1)).toBe("pairs_done");
    expect(await snapshot(db)).toEqual(original);
  });

  it("reads and writes within a fixed multiple of its bounds, whatever the size of another project", async () => {
    for (const [project, sessions] of [["p1", 40], ["p2", 400]] as const) {
      const list: TestCall[] = [];
      for (let s = 0; s < sessions; s++) {
        for (let i = 0; i < 25; i++) {
          list.push(call({ project_id: project, session_id: `s${s}`, tool_name: ["a", "b", "c"][i % 3]!, client_name: `c${s % 3}`,
            started_at_ms: T0 + s * 600_000 + i * 7_000, duration_ms: 2_000, args_hash: `h${i % 4}` }));
        }
      }
      for (let k = 0; k < list.length; k += 1_000) await deliver(db, calls(list.slice(k, k + 1_000)), T0 + 3 * DAY_MS);
      await runRollup(db, T0 + 3 * DAY_MS + 1, { maxQueries: 1_000 });
    }
    const original = await snapshot(db);
    await damage("p1");
    await requestRecompute(db, "p1", T0);
    const bounds = { recomputeCalls: 200, recomputeRows: 50, recomputeSequences: 100 };
    const metered = faultyDb(db);
    for (;;) {
      const before = metered.calls.length;
      const r = await runRecomputeStep(metered.db, T0, bounds);
      if (r === null) break;
      const bound = r.kind === "counting" ? bounds.recomputeCalls : bounds.recomputeRows;
      for (const s of metered.calls.slice(before).flatMap((c) => c.statements)) {
        // p2 alone holds 10,000 calls and 600 hour rows: a statement that read them would be over.
        expect(s.rows_read, `${r.kind}: ${s.sql.slice(0, 60)}`).toBeLessThanOrEqual(16 * bound + 200);
        expect(s.rows_written, `${r.kind}: ${s.sql.slice(0, 60)}`).toBeLessThanOrEqual(2 * bound + 1);
      }
    }
    expect(await snapshot(db)).toEqual(original);
  });

  it("at the bound: sequences of exactly the bound in calls are one step each, one call over makes two", async () => {
    const list = [0, 1, 2].flatMap((s) => [0, 1, 2].map((i) => call({ session_id: `s${s}`, started_at_ms: T0 + i * 1_000 + s, args_hash: `h${i}` })));
    await deliver(db, calls(list), T0 + HOUR_MS);
    await runRollup(db, T0 + HOUR_MS + 1);
    const countingSteps = async (bound: number) => {
      await requestRecompute(db, "p1", T0);
      let counting = 0;
      for (let r = await runRecomputeStep(db, T0, { recomputeCalls: bound, recomputeRows: 100, recomputeSequences: 100 }); r; r = await runRecomputeStep(db, T0, { recomputeCalls: bound, recomputeRows: 100, recomputeSequences: 100 })) {
        if (r.kind === "counting") counting++;
      }
      return counting;
    };
    expect(await countingSteps(9)).toBe(1); // 3 sequences of 3 calls: all within 9
    expect(await countingSteps(8)).toBe(2); // just under: the third sequence waits
    expect(await countingSteps(6)).toBe(2);
    expect(await countingSteps(2)).toBe(3); // under one sequence: each alone (the first is always taken)
  });
});

describe("a recompute failing at any statement", () => {
  it("resumes and ends with the same tables, before and after D1 commits the statement", async () => {
    const list = [0, 1, 2, 3].flatMap((s) => [0, 1, 2].map((i) => call({ session_id: `s${s}`, tool_name: i === 2 ? "fetch" : "search", started_at_ms: T0 + s * HOUR_MS + i * 3_000, args_hash: `h${i}` })));
    const seed = async () => {
      await resetDb(db);
      await deliver(db, calls([...list, call({ project_id: "p2", started_at_ms: T0 })]), T0 + DAY_MS);
      await runRollup(db, T0 + DAY_MS + 1);
      await damage("p1");
      await requestRecompute(db, "p1", T0);
    };
    await seed();
    await deliver(db, calls([call({ started_at_ms: T0 + 4_000, args_hash: "late" })]), T0 + DAY_MS + 2);
    const healthy = faultyDb(db);
    await rollupUntilDoneOn(healthy.db, T0 + DAY_MS);
    const expected = await snapshot(db);
    const statements = healthy.statements();
    expect(statements).toBeGreaterThan(20);
    for (const when of ["before", "after"] as const) {
      for (let k = 1; k <= statements; k++) {
        await seed();
        await deliver(db, calls([call({ started_at_ms: T0 + 4_000, args_hash: "late" })]), T0 + DAY_MS + 2);
        const faulty = faultyDb(db, { failAt: k, when });
        await expect(rollupUntilDoneOn(faulty.db, T0 + DAY_MS), `statement ${k} failing ${when}`).rejects.toThrow(/Network connection lost/);
        await rollupUntilDone(T0 + 2 * DAY_MS, BOUNDS);
        expect(await snapshot(db), `statement ${k} failing ${when}`).toEqual(expected);
      }
    }
  }, 300_000);
});

describe("the recompute mark", () => {
  it("recomputes every project at the next runs, as docs/migrations.md shows it", async () => {
    const list = [0, 1, 2].flatMap((i) => ["p1", "p2"].map((p) => call({ project_id: p, started_at_ms: T0 + i * 2_000, args_hash: `h${i}` })));
    await deliver(db, calls(list), T0 + HOUR_MS);
    await runRollup(db, T0 + HOUR_MS + 1);
    const original = await snapshot(db);
    await damage("p1");
    await damage("p2");
    await requestRecompute(db, "p2", T0);
    await db.prepare(RECOMPUTE_MARK_SQL).run();
    expect((await db.prepare("SELECT project_id, state FROM recomputes ORDER BY project_id").all()).results)
      .toEqual([{ project_id: "p1", state: "clearing" }, { project_id: "p2", state: "clearing" }]);
    await rollupUntilDone(T0 + HOUR_MS, BOUNDS);
    expect(await snapshot(db)).toEqual(original);
    expect(migrationsDoc.replace(/\r/g, "")).toContain(RECOMPUTE_MARK_SQL);
  });
});

describe("the raw window", () => {
  it("recomputes the days from the first whole one after the kept raw calls and leaves the days before frozen", async () => {
    const NOW = Date.UTC(2026, 11, 20, 12);
    // One session's calls each day for 40 days: a retried call, its retry, and another tool.
    const list: TestCall[] = [];
    for (let d = 40; d >= 1; d--) {
      const t = NOW - d * DAY_MS;
      list.push(call({ started_at_ms: t, duration_ms: 100, args_hash: "a" }));
      list.push(call({ started_at_ms: t + 5_000, args_hash: "b" }));
      list.push(call({ started_at_ms: t + 60_000, args_hash: "b", tool_name: "fetch" }));
    }
    // A retry on the first recomputed day whose predecessor is on the day before, frozen: the
    // recompute reads calls from a retry reach before its first day.
    const from = recomputeFromMs(retentionCutoffMs(NOW, 30));
    list.push(call({ session_id: "edge", started_at_ms: from - 10_000, duration_ms: 1_000, args_hash: "a", tool_name: "list" }));
    list.push(call({ session_id: "edge", started_at_ms: from + 5_000, args_hash: "b", tool_name: "list" }));
    await deliver(db, calls(list), NOW - HOUR_MS);
    await runRollup(db, NOW - HOUR_MS + 1);
    const original = await snapshot(db);
    const retention = await runRetention(db, NOW, { retentionDays: 30 });
    expect(retention.deletedCallRows).toBeGreaterThan(0);
    await damage("p1");
    const damaged = await snapshot(db);

    await requestRecompute(db, "p1", NOW);
    await rollupUntilDone(NOW, BOUNDS);
    const progress = (await readRecompute(db, "p1"))!;
    expect(progress.kept_from_ms).toBe(retention.cutoffMs);
    expect(progress.from_ms).toBe(from);
    expect(original.hours.find((r) => r.start_ms === from && r.tool_name === "list")).toMatchObject({ retries: 1, first_call_attempts: 0 });
    expect(from).toBeGreaterThan(retention.cutoffMs);
    expect(from - retention.cutoffMs).toBeLessThanOrEqual(2 * DAY_MS);

    const after = await snapshot(db);
    const split = (rows: object[], before: boolean) =>
      rows.filter((r) => (((r as { start_ms?: number }).start_ms ?? (r as { day_start_ms?: number }).day_start_ms)! < from) === before);
    for (const table of ["hours", "days", "pairs"] as const) {
      expect(split(after[table], false)).toEqual(split(original[table], false));
      expect(split(after[table], true)).toEqual(split(damaged[table], true));
      // Both sides hold rows, so both halves were really checked.
      expect(split(after[table], true).length * split(after[table], false).length).toBeGreaterThan(0);
    }
  });

  it("starts its counting again when retention moves the kept raw calls under it", async () => {
    const list = [0, 1, 2, 3].map((s) => call({ session_id: `s${s}`, started_at_ms: T0 + s * 1_000 }));
    await deliver(db, calls(list), T0 + HOUR_MS);
    await runRollup(db, T0 + HOUR_MS + 1);
    await requestRecompute(db, "p1", T0);
    const bounds = { recomputeCalls: 1, recomputeRows: 100, recomputeSequences: 100 };
    expect((await runRecomputeStep(db, T0, bounds))?.kind).toBe("clearing");
    expect((await runRecomputeStep(db, T0, bounds))?.kind).toBe("counting");
    await db.prepare("INSERT INTO rollup_state (name, value) VALUES ('raw_kept_from_ms', ?1)").bind(T0 - 10 * DAY_MS).run();
    expect((await runRecomputeStep(db, T0, bounds))?.kind).toBe("restart");
    expect((await readRecompute(db, "p1"))).toMatchObject({ state: "clearing", sessions: 0, calls: 0 });
    expect((await runRecomputeStep(db, T0, bounds))?.kind).toBe("clearing");
    expect((await readRecompute(db, "p1"))).toMatchObject({ state: "counting", kept_from_ms: T0 - 10 * DAY_MS, from_ms: recomputeFromMs(T0 - 10 * DAY_MS) });
  });
});

describe("calls arriving during a recompute", () => {
  it("wait for it in their project and are counted once after it; another project's are folded in meanwhile", async () => {
    const first: TestCall[] = [];
    for (let s = 0; s < 4; s++) {
      for (let i = 0; i < 4; i++) first.push(call({ session_id: `s${s}`, started_at_ms: T0 + s * 600_000 + i * 20_000, duration_ms: 1_000, args_hash: `h${i}` }));
      first.push(call({ project_id: "p2", session_id: `s${s}`, started_at_ms: T0 + s * 600_000, args_hash: "a" }));
    }
    const received: Received<TestCall>[] = [];
    const receive = async (list: TestCall[], at: number) => {
      await deliver(db, calls(list), at);
      for (const c of list) received.push({ seq: received.length, received_at_ms: at, item: c });
    };
    await receive(first, T0 + HOUR_MS);
    await runRollup(db, T0 + HOUR_MS + 1);
    await damage("p1");
    await requestRecompute(db, "p1", T0 + HOUR_MS);

    // One run with room for two steps: the recompute is under way.
    // The probe and as_of, a calls chunk and a recompute step.
    const budget = { ...BOUNDS, maxQueries: 16 };
    await runRollup(db, T0 + 2 * HOUR_MS, budget);
    expect((await readRecompute(db, "p1"))?.state).not.toBe("done");
    // New calls of both projects, some retrying calls already counted (their neighbours' figures change).
    const late = [
      call({ session_id: "s0", started_at_ms: T0 + 60_000 + 1_000 + 10_000, args_hash: "zz" }),
      call({ session_id: "s1", started_at_ms: T0 + 600_000 - 5_000, args_hash: "yy" }),
      call({ session_id: "s9", started_at_ms: T0 + 30_000, args_hash: "xx" }),
      call({ project_id: "p2", session_id: "s0", started_at_ms: T0 + 10_000, args_hash: "b" }),
    ];
    await receive(late, T0 + 2 * HOUR_MS + 1);
    await runRollup(db, T0 + 2 * HOUR_MS + 300_000, budget);
    const waiting = await db.prepare("SELECT project_id FROM call_batches ORDER BY batch_seq").all<{ project_id: string }>();
    expect((await readRecompute(db, "p1"))?.state).not.toBe("done");
    // p2's request was folded in during the recompute; p1's waits for it.
    expect(waiting.results.map((r) => r.project_id)).toEqual(["p1"]);

    await rollupUntilDone(T0 + 3 * HOUR_MS, BOUNDS);
    expect(await db.prepare("SELECT COUNT(*) AS n FROM call_batches").first("n")).toBe(0);
    expect(await snapshot(db)).toEqual(referenceRollup(received, [], []));
  });
});

describe("POST /v1/admin/projects/:id/recompute", () => {
  const admin = (path: string, method = "GET", headers: Record<string, string> = adminHeaders()) =>
    exports.default.fetch(`http://worker/v1/admin${path}`, { method, headers });

  it("answers 202 with its progress at the Location, 409 while under way, and the progress until done", async () => {
    await deliver(db, calls([call({ started_at_ms: T0 }), call({ started_at_ms: T0 + 1_000, args_hash: "b" })]), T0 + HOUR_MS);
    await runRollup(db, T0 + HOUR_MS + 1);
    const started = await admin("/projects/p1/recompute", "POST");
    expect(started.status).toBe(202);
    expect(started.headers.get("location")).toBe("/v1/admin/projects/p1/recompute");
    expect(await started.json()).toMatchObject({ project_id: "p1", state: "clearing", from: null, finished_at: null, steps: 0 });
    const again = await admin("/projects/p1/recompute", "POST");
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: "a recompute of this project is under way", code: "CONFLICT", request_id: again.headers.get("x-request-id") });

    await rollupUntilDone(T0 + HOUR_MS);
    const done = await admin("/projects/p1/recompute");
    expect(done.status).toBe(200);
    const body = await done.json<Record<string, unknown>>();
    expect(body).toMatchObject({ state: "done", from: "1970-01-03", sequences: 1, calls: 2, hour_rows: 1, pair_rows: 0 });
    expect(typeof body.finished_at).toBe("string");
    // Done: it may be asked for again.
    expect((await admin("/projects/p1/recompute", "POST")).status).toBe(202);
  });

  it("answers 404 for an unknown project or one never recomputed, 401 without the admin token", async () => {
    await deliver(db, calls([call({ started_at_ms: T0 })]), T0);
    expect((await admin("/projects/nope/recompute", "POST")).status).toBe(404);
    expect((await admin("/projects/p1/recompute")).status).toBe(404);
    expect((await admin("/projects/p1/recompute", "POST", {})).status).toBe(401);
    expect(await db.prepare("SELECT COUNT(*) AS n FROM recomputes").first("n")).toBe(0);
  });
});
