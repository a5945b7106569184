// The rollup survives D1 faults (issue: "a run that fails part-way resumes on the next run with
// nothing counted twice or lost"): every statement of a run is failed in turn — before D1 runs it
// (its transaction rolls back) and after D1 committed it (the answer is lost) — at the binding, with
// the production code unchanged; the next runs on the healthy database must end with exactly the
// tables of a run that never failed, and those equal the reference computation.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { runRetention, runRollup, type RollupOptions } from "../../../src/worker/rollup/index.ts";
import { call, deliver, faultyDb, rawState, resetDb, snapshot, type TestPayload } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";
import type { TestAgreement, TestCall, TestStartup } from "./fixtures.ts";

const db = env.DB;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 20, 22, 50);
// Small chunks, so that one run holds several transactions of every stream.
const OPTIONS: RollupOptions = { chunkCalls: 5, chunkStartups: 1, chunkAgreements: 2, chunkTouchedCalls: 40, maxQueries: 500 };

/** Requests as received: retries across an hour, a day-long call, pairs, two projects, startups and verdicts. */
function requests(base: number): TestPayload[][] {
  const c = (over: Partial<TestCall> & Pick<TestCall, "started_at_ms">): TestPayload => ({ type: "call", call: call(over) });
  const startup = (project_id: string, session_id: string, tools: string[]): TestPayload => ({
    type: "startup",
    startup: {
      project_id, session_id, client_name: "claude", agree_declared: [{ field: "total", tools }],
      tools: tools.map((name) => ({ name, schema_bytes: 100, schema_hash: "5c01", description_hash: null, description_norm: null, policy: null })),
    } satisfies TestStartup,
  });
  const verdict = (agreed: boolean, at: number): TestPayload => ({
    type: "agreement",
    agreement: { project_id: "p1", session_id: "s1", field: "total", tool_a: "search", tool_b: "fetch", agreed, checked_at_ms: at, window_ms: 300_000 } satisfies TestAgreement,
  });
  return [
    [startup("p1", "s1", ["search", "fetch"]), c({ started_at_ms: base - DAY, duration_ms: DAY - 10_000, args_hash: "a1" })],
    [c({ started_at_ms: base, args_hash: "a1", outcome: "tool_error" }), c({ started_at_ms: base + 5_000, args_hash: "a2" }), c({ started_at_ms: base + 20_000, tool_name: "fetch" })],
    [c({ project_id: "p2", session_id: "q1", started_at_ms: base + 1_000 }), c({ project_id: "p2", session_id: "q1", started_at_ms: base + 2_000, args_hash: "b" }), verdict(false, base)],
    [c({ started_at_ms: base + 15 * 60_000, args_hash: "a3", client_name: "cursor" }), c({ started_at_ms: base + 15 * 60_000 + 10_000, args_hash: "a4", client_name: "cursor" }), verdict(true, base + HOUR)],
    [startup("p2", "q1", ["search"]), c({ started_at_ms: base - 2 * HOUR, tool_name: "fetch" }), c({ started_at_ms: base + 30_000, args_hash: "a5", duration_ms: 250 })],
    [c({ project_id: "p2", session_id: "q2", started_at_ms: base - 3 * DAY }), verdict(false, base - 3 * DAY), c({ started_at_ms: base + 2 * HOUR, tool_name: "fetch", args_hash: "z" })],
  ];
}

async function seed(): Promise<{ calls: Received<TestCall>[]; startups: Received<TestStartup>[]; agreements: Received<TestAgreement>[] }> {
  await resetDb(db);
  const received = { calls: [] as Received<TestCall>[], startups: [] as Received<TestStartup>[], agreements: [] as Received<TestAgreement>[] };
  let seq = 0;
  for (const [i, batch] of requests(T0).entries()) {
    const at = T0 + 60_000 + i * 1_000;
    await deliver(db, batch, at);
    for (const p of batch) {
      if (p.type === "call") received.calls.push({ seq: seq++, received_at_ms: at, item: p.call });
      else if (p.type === "startup") received.startups.push({ seq: seq++, received_at_ms: at, item: p.startup });
      else received.agreements.push({ seq: seq++, received_at_ms: at, item: p.agreement });
    }
  }
  return received;
}

const RUN_AT = T0 + 5 * 60_000;

async function rollupUntilCaughtUp(from: number): Promise<void> {
  for (let i = 0; i < 20; i++) if ((await runRollup(db, from + i * 300_000, OPTIONS)).caughtUp) return;
  throw new Error("the rollup never caught up");
}

describe("a rollup run failing at any statement resumes with nothing counted twice or lost", () => {
  it("fails each statement in turn, before and after D1 commits it", async () => {
    const received = await seed();
    const healthy = faultyDb(db);
    const report = await runRollup(healthy.db, RUN_AT, OPTIONS);
    expect(report.caughtUp).toBe(true);
    // The run holds several transactions of each stream, so a fault lands between committed ones.
    expect(report.callChunks).toBeGreaterThan(2);
    expect(healthy.calls.filter((c) => c.statements.length > 1).length).toBeGreaterThan(4);
    const statements = healthy.statements();
    expect(statements).toBe(report.queries);
    const expected = await snapshot(db);
    expect(expected).toEqual(referenceRollup(received.calls, received.startups, received.agreements));
    const expectedRaw = await rawState(db);

    for (const when of ["before", "after"] as const) {
      for (let k = 1; k <= statements; k++) {
        await seed();
        const faulty = faultyDb(db, { failAt: k, when });
        await expect(runRollup(faulty.db, RUN_AT, OPTIONS), `statement ${k} failing ${when} D1 ran it`).rejects.toThrow(/Network connection lost/);
        expect(faulty.failed()).toBe(true);
        await rollupUntilCaughtUp(RUN_AT + 300_000);
        expect(await snapshot(db), `statement ${k} failing ${when} D1 ran it`).toEqual(expected);
        expect(await rawState(db), `statement ${k} failing ${when} D1 ran it`).toEqual(expectedRaw);
      }
    }
  }, 300_000);
});

describe("a retention run failing at any statement resumes and deletes exactly what it would have", () => {
  // A session whose hours go back past the cutoff, so retention deletes and trims rows in steps.
  const NOW = Date.UTC(2026, 10, 21, 3, 30);
  const CUTOFF = Date.UTC(2026, 9, 22, 2); // NOW − 30 days − 1 hour
  const RETENTION: Parameters<typeof runRetention>[2] = { chunkRows: 2, chunkCalls: 3 };

  async function seedOld(): Promise<void> {
    await resetDb(db);
    const old = Array.from({ length: 8 }, (_, i) => [
      { type: "call" as const, call: call({ started_at_ms: CUTOFF - 6 * HOUR + i * HOUR, args_hash: `h${i}` }) },
      { type: "call" as const, call: call({ started_at_ms: CUTOFF - 6 * HOUR + i * HOUR + 1_000, tool_name: "fetch" }) },
    ]).flat();
    await deliver(db, old, NOW - 40 * DAY);
    await rollupUntilCaughtUp(NOW - 10 * 60_000);
  }

  it("fails each statement in turn", async () => {
    await seedOld();
    const healthy = faultyDb(db);
    const report = await runRetention(healthy.db, NOW, RETENTION);
    expect(report).toMatchObject({ caughtUp: true, deletedCallRows: 5 });
    expect(report.trimmedCallRows).toBe(1);
    const expectedRaw = await rawState(db);
    const expectedSnapshot = await snapshot(db);
    for (const when of ["before", "after"] as const) {
      for (let k = 1; k <= healthy.statements(); k++) {
        await seedOld();
        await expect(runRetention(faultyDb(db, { failAt: k, when }).db, NOW, RETENTION)).rejects.toThrow(/Network connection lost/);
        expect((await runRetention(db, NOW, RETENTION)).caughtUp).toBe(true);
        expect(await rawState(db), `statement ${k} failing ${when}`).toEqual(expectedRaw);
        expect(await snapshot(db)).toEqual(expectedSnapshot);
      }
    }
  }, 120_000);
});
