// The D1 migrations in migrations/, for code that drives D1 from Node (the end-to-end tests, the
// benches, the schema generator). Tests inside workerd use the Vitest plugin's applyD1Migrations;
// this does the same from Node, where `cloudflare:test` does not exist: the same `d1_migrations`
// table wrangler keeps, one D1 batch (one transaction) per migration, applied ones skipped.
import { readD1Migrations, type D1Migration } from "@cloudflare/vitest-plugin";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** The migrations in order, each split into statements (wrangler's own splitter). */
export function readMigrations(dir = MIGRATIONS_DIR): Promise<D1Migration[]> {
  return readD1Migrations(dir);
}

/** Applies the migrations not yet recorded in `d1_migrations`; returns the names applied. */
export async function applyMigrations(db: D1Database, migrations: D1Migration[]): Promise<string[]> {
  await db
    .prepare(
      `CREATE TABLE IF NOT EXISTS d1_migrations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT UNIQUE,
        applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
      )`,
    )
    .run();
  const done = new Set((await db.prepare("SELECT name FROM d1_migrations").all<{ name: string }>()).results.map((r) => r.name));
  const applied: string[] = [];
  for (const migration of migrations) {
    if (done.has(migration.name)) continue;
    await db.batch([
      ...migration.queries.map((query) => db.prepare(query)),
      db.prepare("INSERT INTO d1_migrations (name) VALUES (?1)").bind(migration.name),
    ]);
    applied.push(migration.name);
  }
  return applied;
}

/** Every migration, read and applied: a database at head. */
export async function migrateToHead(db: D1Database): Promise<string[]> {
  return applyMigrations(db, await readMigrations());
}
