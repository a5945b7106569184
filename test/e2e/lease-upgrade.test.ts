// Migration 0031 (the rollup lease on the epoch and as_of rows): a lease a job of the release
// before holds at the upgrade keeps the database for that job until it expires, then the next run
// takes it; a database without one keeps its rows as they were and its first run takes the lease.
import { afterAll, beforeAll, expect, test } from "vitest";
import { applyMigrations, readMigrations } from "../../scripts/migrations.ts";
import { scratchD1, useScratchD1 } from "./helpers/scratch-d1.ts";
import { persistBatch } from "../../src/worker/db/raw-writes.ts";
import { runRollup } from "../../src/worker/rollup/index.ts";

const scratch = useScratchD1({ beforeAll, afterAll });

const T0 = Date.UTC(2026, 11, 7, 12, 0);
const LEASE_MS = 60_000;
const tuple = (tool: string, startedAtMs: number) => ["s1", "claude-ai", tool, startedAtMs, 10, "ok", 5, 0, "a1b2c3d4e5f6", 0];

/** Migrations before 0031, a project with one waiting request; then `before(db)`, then the rest. */
async function upgrade(db: D1Database, before: (db: D1Database) => Promise<unknown>): Promise<void> {
  const migrations = await readMigrations();
  const at = migrations.findIndex((m) => m.name.startsWith("0031_"));
  expect(at).toBeGreaterThan(0);
  await applyMigrations(db, migrations.slice(0, at));
  await db.prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES ('p1', 'p1', 0)").run();
  await persistBatch(db, { projectId: "p1", receivedAtMs: T0 - 1_000, requestId: "r1", batchId: "k1", resendGuard: true, tuples: { calls: [tuple("a", T0 - 2_000)], startups: [], agreements: [] } });
  await before(db);
  await applyMigrations(db, migrations.slice(at));
}

const stateRows = async (db: D1Database) =>
  (await db.prepare("SELECT name, value, lease_holder, lease_until_ms FROM rollup_state ORDER BY name").all()).results;

test("a lease held at the upgrade keeps the database for its job until it expires; the next run takes it then", async () => {
  const db = scratch();
  await upgrade(db, (d) =>
    d.prepare("INSERT INTO rollup_state (name, value) VALUES ('rollup_lease', json_object('holder', 'old-job', 'until_ms', ?1))").bind(T0 + LEASE_MS).run());
  // The epoch row keeps its value (the request is still open in epoch 1) and takes the lease.
  const held = [{ name: "ingest_epoch", value: 1, lease_holder: "old-job", lease_until_ms: T0 + LEASE_MS }];
  expect(await stateRows(db)).toEqual(held);

  // Held just before its end (the open request is closed all the same), taken at it.
  expect(await runRollup(db, T0, { clock: () => T0 + LEASE_MS - 1, pauseMs: 0 })).toMatchObject({ leaseHeld: true, newCalls: 0 });
  expect(await stateRows(db)).toEqual([{ ...held[0], value: 2 }]);
  const taken = await runRollup(db, T0, { clock: () => T0 + LEASE_MS, pauseMs: 0 });
  expect(taken).toMatchObject({ leaseHeld: false, newCalls: 1, caughtUp: true });
  const rows = await stateRows(db);
  const epoch = rows.find((r) => r.name === "ingest_epoch")!;
  const asOf = rows.find((r) => r.name === "as_of_ms")!;
  expect(epoch).toMatchObject({ value: 2, lease_until_ms: T0 + 2 * LEASE_MS });
  expect(epoch.lease_holder).not.toBe("old-job");
  // Released by the run's as_of write.
  expect(asOf).toMatchObject({ value: T0, lease_holder: epoch.lease_holder });
});

test("without a lease at the upgrade no state row changes, and the first run takes and releases one", async () => {
  const own = await scratchD1();
  try {
    const db = own.db;
    await upgrade(db, (d) => d.prepare("INSERT INTO rollup_state (name, value) VALUES ('as_of_ms', ?1)").bind(T0 - 60_000).run());
    expect(await stateRows(db)).toEqual([
      { name: "as_of_ms", value: T0 - 60_000, lease_holder: null, lease_until_ms: null },
      { name: "ingest_epoch", value: 1, lease_holder: null, lease_until_ms: null },
    ]);
    expect(await runRollup(db, T0, { clock: () => T0, pauseMs: 0 })).toMatchObject({ leaseHeld: false, newCalls: 1, caughtUp: true });
    const rows = await stateRows(db);
    const epoch = rows.find((r) => r.name === "ingest_epoch")!;
    expect(epoch).toMatchObject({ value: 2, lease_until_ms: T0 + LEASE_MS });
    expect(rows.find((r) => r.name === "as_of_ms")).toMatchObject({ value: T0, lease_holder: epoch.lease_holder });
  } finally {
    await own.dispose();
  }
});
