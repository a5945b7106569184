// At most one rollup job per database at a time (a cron run can start while the previous one of
// the same database still runs): a run takes the lease in rollup_state, renews it while it works
// and releases it when done; a run that finds it held does nothing, and a crashed run's lease
// expires. Since migration 0031 the lease rides on rows a run with work writes anyway: taken on the
// `ingest_epoch` row (closing the open requests), released on the `as_of_ms` row.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { RUN_SQL } from "../../../src/worker/rollup/run.ts";
import { CHUNK_SELECTION_SQL } from "../../../src/worker/rollup/calls.ts";
import { runDatabaseJob } from "../../../src/worker/queues/rollup-jobs.ts";
import { AS_OF, INGEST_EPOCH } from "../../../src/worker/db/rollup-state.ts";
import { compileNamed } from "../../../src/worker/db/named-sql.ts";
import { call, calls, countingDb, deliver, faultyDb, resetDb, snapshot, type TestCall } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";

const db = env.DB;
const T = Date.UTC(2026, 10, 20, 10, 0);
const NOW = T + 3_600_000;
const LEASE_MS = 60_000;

/** `n` requests of 3 calls, one session each; what the reference needs to count them. */
async function deliverRequests(n: number): Promise<Received<TestCall>[]> {
  const received: Received<TestCall>[] = [];
  for (let i = 0; i < n; i++) {
    const request = [0, 1, 2].map((k) => call({ session_id: `s${i}`, started_at_ms: T + i * 1_000 + k * 100 }));
    await deliver(db, calls(request), NOW - 10_000 + i);
    for (const c of request) received.push({ seq: received.length, received_at_ms: NOW - 10_000 + i, item: c });
  }
  return received;
}

/** The lease as the epoch row holds it; `released` 1 once the as_of row names its holder. */
const lease = async () =>
  (await db.prepare(`SELECT e.lease_holder AS holder, e.lease_until_ms AS until_ms,
      e.lease_holder IS (SELECT a.lease_holder FROM rollup_state a WHERE a.name = ?2) AS released
    FROM rollup_state e WHERE e.name = ?1`).bind(INGEST_EPOCH, AS_OF).first<{ holder: string; until_ms: number; released: number }>())!;
/** Another job's lease until `untilMs`, as its run would have taken it (the epoch row's value unchanged). */
const holdLease = (holder: string, untilMs: number) =>
  db.prepare(`INSERT INTO rollup_state (name, value, lease_holder, lease_until_ms) VALUES (?1, 0, ?2, ?3)
    ON CONFLICT (name) DO UPDATE SET lease_holder = excluded.lease_holder, lease_until_ms = excluded.lease_until_ms`).bind(INGEST_EPOCH, holder, untilMs).run();
const waiting = async () => (await db.prepare("SELECT COUNT(*) AS n FROM call_batches WHERE call_count > 0").first<{ n: number }>())!.n;

beforeEach(() => resetDb(db));

describe("one rollup job per database", () => {
  it("a second run while the first holds the lease does nothing; the first counts everything once and releases it", async () => {
    const received = await deliverRequests(4);
    let second: Awaited<ReturnType<typeof runRollup>> | undefined;
    let secondStatements = 0;
    // The second run starts (and finishes) while the first is between its first and second chunk.
    const firstDb = new Proxy(db, {
      get(target, prop) {
        if (prop !== "batch") return Reflect.get(target, prop, target);
        return async (stmts: D1PreparedStatement[]) => {
          const r = await target.batch(stmts);
          if (!second && (await waiting()) < 4) {
            const counted = countingDb(db);
            second = await runRollup(counted.db, NOW, { chunkCalls: 1, pauseMs: 0 });
            secondStatements = counted.count();
          }
          return r;
        };
      },
    });
    const a = await runRollup(firstDb, NOW, { chunkCalls: 1, pauseMs: 0 });
    // Its first batch (the day marks, closing the open rows and the lease, the probe: safe beside another run), nothing more.
    expect(second).toMatchObject({ leaseHeld: true, newCalls: 0, callChunks: 0, queries: 3 });
    expect(secondStatements).toBe(3);
    expect(a).toMatchObject({ leaseHeld: false, newCalls: 12, callChunks: 4, caughtUp: true });
    expect(await snapshot(db)).toEqual(referenceRollup(received, [], []));
    expect(await lease()).toMatchObject({ released: 1 });
    // Released: the next run takes it.
    expect((await runRollup(db, NOW + 300_000)).leaseHeld).toBe(false);
  });

  it("a crashed run's lease is taken over once it expires: held just before, taken at and after its end", async () => {
    await deliverRequests(1);
    await holdLease("crashed", NOW + LEASE_MS);
    for (const [at, held] of [[NOW + LEASE_MS - 1, true], [NOW + LEASE_MS, false]] as const) {
      const r = await runRollup(db, NOW, { clock: () => at, pauseMs: 0 });
      expect({ at, held: r.leaseHeld, calls: r.newCalls }).toEqual({ at, held, calls: held ? 0 : 3 });
    }
    expect(await waiting()).toBe(0);
    await holdLease("crashed", NOW);
    expect((await runRollup(db, NOW, { clock: () => NOW + 1, pauseMs: 0 })).leaseHeld).toBe(false);
  });

  it("a run that fails releases its lease, so the next run need not wait for it to expire", async () => {
    // Statements 1–3 are the first batch (the lease taken in it), 4–10 the first calls chunk: the
    // run fails once its first batch has committed, and in its first chunk.
    for (const [failAt, when] of [[3, "after"], [6, "before"]] as const) {
      await resetDb(db);
      await deliverRequests(2);
      const faulty = faultyDb(db, { failAt, when });
      await expect(runRollup(faulty.db, NOW, { pauseMs: 0 })).rejects.toThrow(/Network connection lost/);
      expect({ failAt, lease: await lease() }).toMatchObject({ failAt, lease: { until_ms: 0, released: 0 } });
      expect((await runRollup(db, NOW, { pauseMs: 0 })).newCalls).toBe(6);
    }
  });

  it("taking and releasing the lease write no row of their own: rollup_state rows written are the epoch's, the chunk's and as_of's", async () => {
    await deliverRequests(2);
    const named = new Map([
      [RUN_SQL.closeOpenBatchesAndTakeLease, "close and take the lease"], [CHUNK_SELECTION_SQL, "calls chunk"], [RUN_SQL.asOf, "as_of and release"],
    ].map(([sql, name]) => [compileNamed(sql!).sql, name!] as const));
    const metered = faultyDb(db);
    expect(await runRollup(metered.db, NOW, { pauseMs: 0 })).toMatchObject({ leaseHeld: false, callChunks: 1, caughtUp: true });
    const stateWrites = metered.calls.flatMap((c) => c.statements)
      .filter((s) => /^\s*(INSERT INTO|UPDATE) rollup_state\b/.test(s.sql) && s.rows_written > 0)
      .map((s) => [named.get(s.sql) ?? s.sql.slice(0, 60), s.rows_written]);
    expect(stateWrites).toEqual([["close and take the lease", 1], ["calls chunk", 1], ["as_of and release", 1]]);
    expect(await lease()).toMatchObject({ released: 1 });
  });

  it("a run whose requests were all closed by an earlier run takes the lease on the epoch row without advancing the epoch", async () => {
    await deliverRequests(2);
    const epoch = async () => (await db.prepare("SELECT value FROM rollup_state WHERE name = ?1").bind(INGEST_EPOCH).first<{ value: number }>())!.value;
    // One chunk of one request: the first run closes both and leaves one waiting.
    const first = await runRollup(db, NOW, { chunkCalls: 1, pauseMs: 0, maxQueries: 5 + 7 });
    expect(first).toMatchObject({ newCalls: 3, caughtUp: false });
    const closedAt = await epoch();
    const metered = faultyDb(db);
    expect(await runRollup(metered.db, NOW + 1, { pauseMs: 0 })).toMatchObject({ leaseHeld: false, newCalls: 3, caughtUp: true });
    expect(await epoch()).toBe(closedAt);
    const take = metered.calls[0]!.statements[1]!;
    expect([take.sql.includes("'ingest_epoch'"), take.rows_written]).toEqual([true, 1]);
    expect(await lease()).toMatchObject({ released: 1 });
  });

  it("a run that finds the lease held still closes the open requests, and leaves the lease as it was", async () => {
    await holdLease("other", NOW + LEASE_MS);
    await deliverRequests(1);
    // Opened in the current epoch, as ingest opens a request's row (the fixture's rows are closed).
    await db.prepare("UPDATE call_batches SET epoch = 0").run();
    const before = (await db.prepare("SELECT value FROM rollup_state WHERE name = ?1").bind(INGEST_EPOCH).first<{ value: number }>())!.value;
    expect(await runRollup(db, NOW, { clock: () => NOW, pauseMs: 0 })).toMatchObject({ leaseHeld: true, newCalls: 0 });
    const after = (await db.prepare("SELECT value, lease_holder, lease_until_ms FROM rollup_state WHERE name = ?1").bind(INGEST_EPOCH).first())!;
    expect(after).toEqual({ value: before + 1, lease_holder: "other", lease_until_ms: NOW + LEASE_MS });
    // Released by its holder (its as_of write), the lease is free at once, long before it would expire.
    await db.prepare("UPDATE rollup_state SET lease_holder = 'other' WHERE name = ?1").bind(AS_OF).run();
    await db.prepare("INSERT OR IGNORE INTO rollup_state (name, value, lease_holder) VALUES (?1, 0, 'other')").bind(AS_OF).run();
    expect(await runRollup(db, NOW, { clock: () => NOW, pauseMs: 0 })).toMatchObject({ leaseHeld: false, newCalls: 3, caughtUp: true });
  });

  it("an idle run takes no lease (it writes only as_of)", async () => {
    const counted = countingDb(db);
    const r = await runRollup(counted.db, NOW, { pauseMs: 0 });
    expect(r).toMatchObject({ caughtUp: true, leaseHeld: false, queries: 5 });
    expect(counted.count()).toBe(5);
    // Even with another job's lease in place, an idle run is not held up.
    await holdLease("other", NOW + LEASE_MS);
    expect(await runRollup(db, NOW, { clock: () => NOW, pauseMs: 0 })).toMatchObject({ caughtUp: true, leaseHeld: false });
    expect(await lease()).toMatchObject({ holder: "other", until_ms: NOW + LEASE_MS, released: 0 });
  });

  it("renews the lease once half of it has passed, and stops when another job has taken it over", async () => {
    await deliverRequests(6);
    // A clock that moves 40 s at every reading: over half the lease has passed before every chunk.
    let t = NOW;
    const clock = () => (t += 40_000);
    const counted = countingDb(db);
    const r = await runRollup(counted.db, NOW, { chunkCalls: 1, pauseMs: 0, clock, leaseMs: LEASE_MS, maxQueries: 100 });
    expect(r).toMatchObject({ callChunks: 6, caughtUp: true });
    // 5 fixed statements, 6 chunks of 7, and a renewal before each chunk.
    expect(r.queries).toBe(5 + 6 * 7 + 6);
    expect(counted.count()).toBe(r.queries);

    // Another job takes the lease over (this one's looked expired to it) after the first chunk: this one stops.
    await resetDb(db);
    await deliverRequests(6);
    let chunks = 0;
    const stolen = new Proxy(db, {
      get(target, prop) {
        if (prop !== "batch") return Reflect.get(target, prop, target);
        return async (stmts: D1PreparedStatement[]) => {
          const res = await target.batch(stmts);
          if (stmts.length === 7 && ++chunks === 1) {
            await holdLease("other", t + LEASE_MS);
          }
          return res;
        };
      },
    });
    const lost = await runRollup(stolen, NOW, { chunkCalls: 1, pauseMs: 0, clock, leaseMs: LEASE_MS, maxQueries: 100 });
    expect(lost).toMatchObject({ callChunks: 1, newCalls: 3, caughtUp: false });
    // The other job's lease is left alone: its as_of write does not release it.
    expect(await lease()).toMatchObject({ holder: "other", released: 0 });
  });
});

describe("pauses between transactions", () => {
  /** Runs the rollup over 6 one-request chunks while each D1 batch takes `perBatchMs` of a fake wall clock. */
  async function pausesAt(perBatchMs: number, holdMs = 1_000) {
    await deliverRequests(6);
    let wall = 0;
    const slowDb = new Proxy(db, {
      get(target, prop) {
        if (prop !== "batch") return Reflect.get(target, prop, target);
        return async (stmts: D1PreparedStatement[]) => {
          const r = await target.batch(stmts);
          wall += perBatchMs;
          return r;
        };
      },
    });
    const r = await runRollup(slowDb, NOW, { chunkCalls: 1, pauseMs: 1, holdMs, maxQueries: 100, wallClock: () => wall });
    expect(r).toMatchObject({ callChunks: 6, newCalls: 18, caughtUp: true });
    return r.pauses;
  }

  it("holds the database at most holdMs: back to back while the held time plus the last transaction fits, else a pause", async () => {
    // 500 ms transactions: the second starts at 500 held + 500 = 1,000 (at the limit, no pause), the third would pass it.
    expect(await pausesAt(500)).toBe(2);
    await resetDb(db);
    // Just over the limit: a pause before every transaction after the first.
    expect(await pausesAt(501)).toBe(5);
    await resetDb(db);
    // Well under: three back to back (900 ms held), then a pause.
    expect(await pausesAt(300)).toBe(1);
  });

  it("pauses before every transaction after the first with holdMs 0, and never with pauseMs 0", async () => {
    expect(await pausesAt(10, 0)).toBe(5);
    await resetDb(db);
    await deliverRequests(6);
    expect((await runRollup(db, NOW, { chunkCalls: 1, pauseMs: 0, maxQueries: 100 })).pauses).toBe(0);
  });
});

describe("the cron's rollup job", () => {
  it("leaves the work and the alert step to the job holding the lease, and says so", async () => {
    await deliverRequests(2);
    await holdLease("another-job", Date.now() + LEASE_MS);
    const logged: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void logged.push(String(line)));
    try {
      await runDatabaseJob(env, { kind: "rollup", database: "DB", scheduledTimeMs: NOW });
    } finally {
      spy.mockRestore();
    }
    expect(logged.map((l) => JSON.parse(l).event)).toEqual(["rollup_lease_held"]);
    expect(await waiting()).toBe(2);
    expect(await lease()).toMatchObject({ holder: "another-job", released: 0 });
  });
});
