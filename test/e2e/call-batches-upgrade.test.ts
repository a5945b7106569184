// Migration 0025 (call_batches appended to) on a database with requests still waiting for the
// rollup: they are kept, closed (never appended to), counted once by the next run, and their
// Idempotency-Keys still recognise a resend.
import { afterAll, beforeAll, expect, test } from "vitest";
import { applyMigrations, readMigrations } from "../../scripts/migrations.ts";
import { useScratchD1 } from "./helpers/scratch-d1.ts";
import { persistBatch } from "../../src/worker/db/raw-writes.ts";
import { runRollup } from "../../src/worker/rollup/index.ts";

const scratch = useScratchD1({ beforeAll, afterAll });

const T0 = Date.UTC(2026, 10, 20, 12, 0);
const tuple = (tool: string, startedAtMs: number) => ["s1", "claude-ai", tool, startedAtMs, 10, "ok", 5, 0, "a1b2c3d4e5f6", 0];

test("requests waiting when 0025 runs are kept, closed, counted once, and guard their resends", async () => {
  const db = scratch();
  const migrations = await readMigrations();
  const at = migrations.findIndex((m) => m.name.startsWith("0025_"));
  expect(at).toBeGreaterThan(0);
  await applyMigrations(db, migrations.slice(0, at));
  await db.prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES ('p1', 'p1', 0)").run();
  const insert = db.prepare("INSERT INTO call_batches (project_id, received_at_ms, call_count, batch_id, calls_json) VALUES ('p1', ?1, 1, ?2, ?3)");
  await db.batch([
    insert.bind(T0 + 1, "old-key-1", JSON.stringify([tuple("a", T0)])),
    insert.bind(T0 + 2, null, JSON.stringify([tuple("b", T0 + 1)])),
  ]);

  await applyMigrations(db, migrations.slice(at));
  const rows = (await db.prepare("SELECT epoch, call_count, chars, length(calls_json) AS length, batch_ids, last_received_at_ms FROM call_batches ORDER BY batch_seq").all()).results;
  expect(rows).toEqual([
    { epoch: null, call_count: 1, chars: rows[0]!.length, length: rows[0]!.length, batch_ids: " old-key-1 ", last_received_at_ms: T0 + 1 },
    { epoch: null, call_count: 1, chars: rows[1]!.length, length: rows[1]!.length, batch_ids: " ", last_received_at_ms: T0 + 2 },
  ]);

  // A resend of the waiting request is recognised; a new request starts a row of its own.
  const write = (id: string, tool: string) =>
    persistBatch(db, { projectId: "p1", receivedAtMs: T0 + 10, requestId: id, batchId: id, resendGuard: true, tuples: { calls: [tuple(tool, T0 + 2)], startups: [], agreements: [] } });
  await write("old-key-1", "a");
  await write("new-key-2", "c");
  expect((await db.prepare("SELECT call_count FROM call_batches ORDER BY batch_seq").all()).results.map((r) => r.call_count)).toEqual([1, 1, 1]);

  await runRollup(db, T0 + 300_000);
  const counted = await db.prepare("SELECT tool_name, calls FROM tool_hour_metrics ORDER BY tool_name").all();
  expect(counted.results).toEqual([{ tool_name: "a", calls: 1 }, { tool_name: "b", calls: 1 }, { tool_name: "c", calls: 1 }]);
  // …and after the run, the emptied rows still recognise the resend.
  await write("old-key-1", "a");
  await runRollup(db, T0 + 600_000);
  expect((await db.prepare("SELECT SUM(calls) AS n FROM tool_hour_metrics").first<{ n: number }>())!.n).toBe(3);
});
