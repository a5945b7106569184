// Migration 0027 (a project's tool versions as one JSON row, `tool_versions` a view over it): every
// version row a database held reads back the same through the view, and the rollup adds to it.
import { afterAll, beforeAll, expect, test } from "vitest";
import { applyMigrations, readMigrations } from "../../scripts/migrations.ts";
import { useScratchD1 } from "./helpers/scratch-d1.ts";
import { runRollup } from "../../src/worker/rollup/index.ts";

const scratch = useScratchD1({ beforeAll, afterAll });

const T0 = Date.UTC(2026, 10, 20, 12, 0);
const ALL = "SELECT project_id, tool_name, schema_hash, description_hash, description_norm, first_seen_ms, last_seen_ms, startups FROM tool_versions ORDER BY 1, 2, 3, 4";

test("the version rows read back equal through the view, and a startup adds to them", async () => {
  const db = scratch();
  const migrations = await readMigrations();
  const at = migrations.findIndex((m) => m.name.startsWith("0027_"));
  expect(at).toBeGreaterThan(0);
  await applyMigrations(db, migrations.slice(0, at));
  await db.prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES ('p1', 'p1', 0), ('p2', 'p2', 0)").run();
  const insert = db.prepare(`INSERT INTO tool_versions (project_id, tool_name, schema_hash, description_hash, description_norm,
    first_seen_ms, last_seen_ms, startups) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`);
  await db.batch([
    insert.bind("p1", "search", "5c0", "d0", "find orders", T0 - 5_000, T0 - 1_000, 7),
    insert.bind("p1", "search", "5c0", "d1", null, T0 - 900, T0 - 800, 2),
    insert.bind("p1", 'we"ird [tool]', "", "", "", T0 - 700, T0 - 600, 1),
    insert.bind("p2", "search", "5c9", "d9", "other", T0 - 500, T0 - 400, 3),
  ]);
  const before = (await db.prepare(ALL).all()).results;
  expect(before).toHaveLength(4);

  await applyMigrations(db, migrations.slice(at));
  expect((await db.prepare(ALL).all()).results).toEqual(before);

  // A startup listing one stored version and one new one: the stored one counts on, the new one starts.
  await db.prepare(`INSERT INTO raw_startups (startup_seq, project_id, session_id, client_name, received_at_ms, tools_json, agree_declared_json)
    VALUES (1, 'p1', 's1', 'claude-ai', ?1, ?2, '[]')`)
    .bind(T0, JSON.stringify([
      { name: "search", schema_bytes: 10, schema_hash: "5c0", description_hash: "d0", description_norm: "find orders" },
      { name: "lookup", schema_bytes: 20, schema_hash: "5c5", description_hash: "d5", description_norm: null },
    ])).run();
  await runRollup(db, T0 + 300_000);
  const after = (await db.prepare(ALL).all()).results;
  expect(after).toEqual([
    { project_id: "p1", tool_name: "lookup", schema_hash: "5c5", description_hash: "d5", description_norm: null, first_seen_ms: T0, last_seen_ms: T0, startups: 1 },
    { ...before[0], last_seen_ms: T0, startups: 8 },
    ...before.slice(1),
  ]);
});
