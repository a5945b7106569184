// How the rollup runs: late arrivals, idempotency, chunking, the per-invocation query budget,
// as_of, and the cron dispatch (SPEC §2.2, §2.6).
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import worker from "../../../src/worker/index.ts";
import { CALL_CHUNK_STATEMENTS } from "../../../src/worker/rollup/calls.ts";
import { AGREEMENT_CHUNK_STATEMENTS } from "../../../src/worker/rollup/agreements.ts";
import { STARTUP_CHUNK_STATEMENTS } from "../../../src/worker/rollup/startups.ts";
import { AS_OF, DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS, parseMaxQueries, parsePauseMs, runRollup } from "../../../src/worker/rollup/index.ts";
import { call, calls, countingDb, deliver, resetDb, snapshot, type TestCall } from "./fixtures.ts";
import { referenceRollup } from "./reference.ts";
import { runCron } from "../helpers/cron.ts";

const db = env.DB;
const T = Date.UTC(2026, 10, 20, 23, 59, 0); // a minute before UTC midnight
const NOW = Date.UTC(2026, 10, 21, 1);

beforeEach(() => resetDb(db));

async function asOf(): Promise<number | null> {
  const row = await db.prepare("SELECT value FROM rollup_state WHERE name = ?1").bind(AS_OF).first<{ value: number }>();
  return row?.value ?? null;
}

async function rollupUntilCaughtUp(d: D1Database, options = {}) {
  let runs = 0;
  for (;;) {
    runs += 1;
    const r = await runRollup(d, NOW, options);
    if (r.caughtUp) return runs;
    if (runs > 1000) throw new Error("rollup did not catch up");
  }
}

/** A session of n calls alternating tools and hashes, 10 s apart, crossing midnight. */
function sessionCalls(n: number, session = "s1"): TestCall[] {
  return Array.from({ length: n }, (_, i) =>
    call({
      session_id: session,
      started_at_ms: T + i * 10_000,
      duration_ms: 1_000,
      tool_name: i % 3 === 2 ? "fetch" : "search",
      args_hash: i % 2 ? "aaaa" : "bbbb",
      client_name: i % 5 === 0 ? "cursor" : "claude",
      outcome: i % 7 === 3 ? "bad_args" : "ok",
    }),
  );
}

/** Each call as its own request (a chunk takes whole requests: the oldest, up to its call count). */
async function deliverOneRequestEach(list: TestCall[], receivedAtMs: number): Promise<void> {
  for (const c of list) await deliver(db, calls([c]), receivedAtMs);
}

describe("late arrivals", () => {
  it("a call arriving between two rolled-up calls moves the pair and the retry flags", async () => {
    const a = call({ started_at_ms: T, duration_ms: 1_000, args_hash: "aaaa", tool_name: "search" });
    const b = call({ started_at_ms: T + 2_000, duration_ms: 1_000, args_hash: "bbbb", tool_name: "search" });
    const c = call({ started_at_ms: T + 40_000, args_hash: "cccc", tool_name: "fetch" });
    await deliver(db, calls([a, c]), NOW - 2_000);
    await runRollup(db, NOW);
    let snap = await snapshot(db);
    expect(snap.pairs.map((p) => [p.from_tool, p.to_tool, p.pair_count])).toEqual([["search", "fetch", 1]]);
    expect(snap.hours.reduce((s, r) => s + r.retries, 0)).toBe(0);

    await deliver(db, calls([b]), NOW - 1_000); // b is late: started between a and c
    await runRollup(db, NOW);
    snap = await snapshot(db);
    const ref = referenceRollup(
      [a, c, b].map((item, seq) => ({ seq, received_at_ms: 0, item })),
      [],
      [],
    );
    expect(snap.hours).toEqual(ref.hours);
    expect(snap.days).toEqual(ref.days);
    expect(snap.pairs).toEqual(ref.pairs);
    expect(snap.hours.reduce((s, r) => s + r.retries, 0)).toBe(1); // b is a retry of a
    expect(snap.pairs.map((p) => [p.from_tool, p.to_tool, p.pair_count])).toEqual([["search", "fetch", 1]]); // b → c
  });

  it("rolling up twice changes nothing", async () => {
    await deliver(db, calls(sessionCalls(40)), NOW - 1_000);
    await runRollup(db, NOW);
    const first = await snapshot(db);
    const again = await runRollup(db, NOW + 300_000);
    expect(again.newCalls).toBe(0);
    expect(await snapshot(db)).toEqual(first);
  });
});

describe("session rows", () => {
  it("are created as ingest would when the rollup meets calls of a session without a row", async () => {
    await deliver(
      db,
      calls([
        call({ started_at_ms: T + 5_000, client_name: "cursor", response_bytes: 3 }),
        call({ started_at_ms: T, client_name: "claude", response_bytes: 4 }),
      ]),
      NOW - 1_000,
    );
    await db.prepare("DELETE FROM sessions").run();
    await runRollup(db, NOW);
    const row = await db.prepare("SELECT * FROM sessions").first();
    expect(row).toEqual({
      project_id: "p1", session_id: "s1", first_seen_ms: T, last_seen_ms: T + 5_000, client_name: "cursor",
      calls: 2, response_bytes_sum: 7, schema_bytes_sum: 0,
    });
  });
});

describe("chunks and the query budget", () => {
  it("takes ROLLUP_MAX_QUERIES from its fixed statements (5) to 1,000 (D1's Paid limit), else the free plan's default", () => {
    expect(ROLLUP_FIXED_STATEMENTS).toBe(5);
    expect(parseMaxQueries(undefined)).toBe(DEFAULT_ROLLUP_OPTIONS.maxQueries);
    expect(parseMaxQueries("4")).toBe(DEFAULT_ROLLUP_OPTIONS.maxQueries);
    expect(parseMaxQueries("5")).toBe(5);
    expect(parseMaxQueries("6")).toBe(6);
    expect(parseMaxQueries("999")).toBe(999);
    expect(parseMaxQueries("1000")).toBe(1000);
    expect(parseMaxQueries("1001")).toBe(DEFAULT_ROLLUP_OPTIONS.maxQueries);
    expect(parseMaxQueries("12.5")).toBe(DEFAULT_ROLLUP_OPTIONS.maxQueries);
    expect(parseMaxQueries("lots")).toBe(DEFAULT_ROLLUP_OPTIONS.maxQueries);
  });

  it("takes ROLLUP_PAUSE_MS from 0 to 1,000 ms, else the default pause", () => {
    expect(DEFAULT_ROLLUP_OPTIONS.pauseMs).toBe(50);
    for (const [value, pause] of [
      [undefined, 50], ["", 50], ["-1", 50], ["0", 0], ["1", 1], ["999", 999], ["1000", 1000], ["1001", 50], ["2.5", 50], ["soon", 50],
    ] as const) {
      expect({ value, pause: parsePauseMs(value) }).toEqual({ value, pause });
    }
  });

  // One free-plan run (the default maxQueries) folds as many call chunks as its statement budget
  // holds after its fixed statements (the new day marks, closing the open rows with the lease, the probe, the cleanup, as_of with the release), and after a startups and a verdicts chunk when those
  // are pending: measured on a real run at a small chunk size (10 calls), at the limit and one chunk
  // over it. At the default chunk size that is what rollup/run.ts promises (4 × 12,000 = 48,000
  // calls with startups and verdicts pending, 6 × 12,000 = 72,000 without).
  const CHUNK = 10;
  const chunksPerRun = (othersPending: boolean) =>
    Math.floor((DEFAULT_ROLLUP_OPTIONS.maxQueries - ROLLUP_FIXED_STATEMENTS - (othersPending ? STARTUP_CHUNK_STATEMENTS + AGREEMENT_CHUNK_STATEMENTS : 0)) / CALL_CHUNK_STATEMENTS);

  /** `chunks` requests of CHUNK calls each (a chunk takes whole requests), and optionally a startup and a verdict. */
  async function deliverChunks(chunks: number, othersPending: boolean): Promise<void> {
    for (let i = 0; i < chunks; i++) {
      await deliver(db, calls(Array.from({ length: CHUNK }, (_, j) => call({ session_id: `s${i}`, started_at_ms: T + j * 60_000 }))), NOW - 1_000);
    }
    if (othersPending) {
      await deliver(db, [{ type: "startup", startup: { project_id: "p1", session_id: "s0", client_name: "claude", tools: [], agree_declared: [] } }], NOW - 1_000);
      await deliver(db, [{ type: "agreement", agreement: { project_id: "p1", session_id: "s0", field: "total", tool_a: "a", tool_b: "b", agreed: true, checked_at_ms: T, window_ms: 1_000 } }], NOW - 1_000);
    }
  }

  for (const othersPending of [false, true]) {
    const what = othersPending ? "with a startups and a verdicts chunk pending" : "with only calls pending";
    it(`one free-plan run folds ${chunksPerRun(othersPending)} call chunks ${what}, within its statement budget`, async () => {
      const chunks = chunksPerRun(othersPending);
      expect(chunks * DEFAULT_ROLLUP_OPTIONS.chunkCalls).toBe(othersPending ? 48_000 : 72_000);
      await deliverChunks(chunks, othersPending);
      const counted = countingDb(db);
      const report = await runRollup(counted.db, NOW, { chunkCalls: CHUNK });
      expect(report).toMatchObject({ caughtUp: true, newCalls: chunks * CHUNK, newStartups: othersPending ? 1 : 0 });
      expect(counted.count()).toBe(report.queries);
      expect(report.queries).toBeLessThanOrEqual(DEFAULT_ROLLUP_OPTIONS.maxQueries);
    });

    it(`one chunk more ${what} is left for the next run`, async () => {
      const chunks = chunksPerRun(othersPending);
      await deliverChunks(chunks + 1, othersPending);
      const first = await runRollup(db, NOW, { chunkCalls: CHUNK });
      expect(first.caughtUp).toBe(false);
      expect(first.queries).toBeLessThanOrEqual(DEFAULT_ROLLUP_OPTIONS.maxQueries);
      const second = await runRollup(db, NOW, { chunkCalls: CHUNK });
      expect(first.newCalls + second.newCalls).toBe((chunks + 1) * CHUNK);
      expect(second.caughtUp).toBe(true);
    });
  }

  it("a tiny chunk size takes several runs and gives the same tables as one big chunk", async () => {
    const workload = [...sessionCalls(60, "s1"), ...sessionCalls(25, "s2")];
    await deliverOneRequestEach(workload, NOW - 1_000);
    const runs = await rollupUntilCaughtUp(db, { chunkCalls: 2 });
    expect(runs).toBeGreaterThan(5);
    const chunked = await snapshot(db);

    await resetDb(db);
    await deliver(db, calls(workload), NOW - 1_000);
    expect(await rollupUntilCaughtUp(db)).toBe(1);
    expect(await snapshot(db)).toEqual(chunked);
    expect(chunked.sessions.map((s) => s.calls)).toEqual([60, 25]);
  });

  it("never runs more statements per invocation than the budget (default under 50)", async () => {
    await deliverOneRequestEach(sessionCalls(200), NOW - 1_000);
    const counted = countingDb(db);
    let before = 0;
    let caughtUp = false;
    let runs = 0;
    while (!caughtUp) {
      const r = await runRollup(counted.db, NOW, { chunkCalls: 7 });
      const used = counted.count() - before;
      before = counted.count();
      expect(used).toBe(r.queries);
      expect(used).toBeLessThanOrEqual(DEFAULT_ROLLUP_OPTIONS.maxQueries);
      expect(DEFAULT_ROLLUP_OPTIONS.maxQueries).toBeLessThan(50);
      caughtUp = r.caughtUp;
      runs += 1;
    }
    expect(runs).toBeGreaterThan(1);
    expect((await snapshot(db)).sessions[0]!.calls).toBe(200);
  });

  it("honours a smaller budget exactly: the fixed statements + one calls chunk fit, one statement less fits none", async () => {
    const one = ROLLUP_FIXED_STATEMENTS + CALL_CHUNK_STATEMENTS;
    await deliverOneRequestEach(sessionCalls(30), NOW - 1_000);
    const counted = countingDb(db);
    const first = await runRollup(counted.db, NOW, { chunkCalls: 5, maxQueries: one });
    expect(counted.count()).toBe(one);
    expect(first.newCalls).toBe(5);
    const starved = await runRollup(counted.db, NOW, { chunkCalls: 5, maxQueries: one - 1 });
    expect(counted.count()).toBe(one + ROLLUP_FIXED_STATEMENTS);
    expect(starved.newCalls).toBe(0);
    expect(starved.caughtUp).toBe(false);
    const two = await runRollup(counted.db, NOW, { chunkCalls: 5, maxQueries: one + CALL_CHUNK_STATEMENTS });
    expect(counted.count()).toBe(one + ROLLUP_FIXED_STATEMENTS + one + CALL_CHUNK_STATEMENTS);
    expect(two.newCalls).toBe(10);
  });
});

describe("as_of (SPEC §2.6)", () => {
  it("is absent before the first rollup, the scheduled time once caught up, and never moves back", async () => {
    expect(await asOf()).toBeNull();
    await deliver(db, calls(sessionCalls(3)), NOW - 5_000);
    await runRollup(db, NOW);
    expect(await asOf()).toBe(NOW);
    await runRollup(db, NOW - 600_000);
    expect(await asOf()).toBe(NOW);
  });

  it("stops just before the first payload still waiting when a run could not catch up", async () => {
    await deliver(db, calls(sessionCalls(3)), NOW - 50_000);
    await deliver(db, calls(sessionCalls(3, "s2")), NOW - 40_000);
    await runRollup(db, NOW - 30_000, { chunkCalls: 3, maxQueries: ROLLUP_FIXED_STATEMENTS + CALL_CHUNK_STATEMENTS });
    expect(await asOf()).toBe(NOW - 40_001);
    await runRollup(db, NOW, { chunkCalls: 3, maxQueries: ROLLUP_FIXED_STATEMENTS + CALL_CHUNK_STATEMENTS });
    expect(await asOf()).toBe(NOW);
  });
});

describe("scheduled handler", () => {
  it("runs the rollup on the 5-minute cron with the controller's time", async () => {
    await deliver(db, calls(sessionCalls(4)), NOW - 1_000);
    const jobs = await runCron(NOW);
    expect(jobs.map((j) => [j.kind, j.database])).toEqual([["rollup", "DB"], ["rollup", "DB_2"]]);
    expect(await asOf()).toBe(NOW);
    expect((await snapshot(db)).sessions[0]!.calls).toBe(4);
  });

  it("runs retention on the daily cron, and nothing on an unknown cron", async () => {
    await runRollup(db, NOW);
    const jobs = await runCron(NOW, "30 3 * * *");
    expect(jobs.map((j) => [j.kind, j.database])).toEqual([["retention", "DB"], ["retention", "DB_2"]]);
    const kept = await db.prepare("SELECT value FROM rollup_state WHERE name = 'raw_kept_from_ms'").first<{ value: number }>();
    expect(kept?.value).toBe(Date.UTC(2026, 9, 22)); // 30 days and an hour back, on the hour
    await resetDb(db);
    expect(await runCron(NOW, "0 0 * * *")).toEqual([]);
    expect(await asOf()).toBeNull();
  });

  it("runs the rollup on a manual trigger without a cron", async () => {
    await runCron(NOW, "");
    expect(await asOf()).toBe(NOW);
  });
});
