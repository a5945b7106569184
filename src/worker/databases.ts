// The list of D1 databases (SPEC §7), read from the env here only: bindings `DB` and `DB_<suffix>`.
// `DB` is first and also holds the directory, keys and dashboard sessions. A project's database is
// resolved once per request or job; nothing under db/ picks a binding (STYLE.md).
import type { MiddlewareHandler } from "hono";
import type { AppEnv, Env } from "./env.ts";
import { findProjectDatabase, projectCountsByDatabase, storedBytes } from "./db/directory.ts";

export type Database = { name: string; db: D1Database };

/** The name of the first database: the directory, and where projects without a directory row live. */
export const FIRST_DATABASE = "DB";

const BINDING_NAME = /^DB(?:_[A-Z0-9_]+)?$/;

function isD1(value: unknown): value is D1Database {
  return typeof value === "object" && value !== null && typeof (value as D1Database).prepare === "function" && typeof (value as D1Database).batch === "function";
}

/** Every database of the deployment: `DB` first, then the others by name ("DB_2" before "DB_10"). */
export function databases(env: Env): Database[] {
  const found: Database[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (name !== FIRST_DATABASE && BINDING_NAME.test(name) && isD1(value)) found.push({ name, db: value });
  }
  found.sort((a, b) => a.name.localeCompare(b.name, "en", { numeric: true }));
  return [{ name: FIRST_DATABASE, db: env.DB }, ...found];
}

/** The database of that name, or null when the deployment has none. */
export function databaseNamed(env: Env, name: string): D1Database | null {
  return databases(env).find((d) => d.name === name)?.db ?? null;
}

/** The directory's database (the first one). */
export function directoryDb(env: Env): D1Database {
  return env.DB;
}

/** A project's database, as the directory names it (null: the first database). Throws when the name is no binding of this deployment. */
export function databaseOf(env: Env, name: string | null): Database {
  const resolved = name ?? FIRST_DATABASE;
  const db = databaseNamed(env, resolved);
  if (!db) throw new Error(`the directory names database ${resolved}, which is no D1 binding of this worker`);
  return { name: resolved, db };
}

/** Looks a project's database up in the directory (one D1 read). */
export async function resolveProjectDatabase(env: Env, projectId: string): Promise<Database> {
  return databaseOf(env, await findProjectDatabase(directoryDb(env), projectId));
}

/**
 * Middleware of the admin routes under /projects/:id: the project's database, looked up in the
 * directory once for the request, as `c.var.db` (an unknown project resolves to the first database,
 * where the handler finds no such project and answers 404).
 */
export const projectDatabaseOfParam: MiddlewareHandler<AppEnv> = async (c, next) => {
  const database = await resolveProjectDatabase(c.env, c.req.param("id") ?? "");
  c.set("database", database.name);
  c.set("db", database.db);
  await next();
};

export type DatabaseSummary = { name: string; projects: number; bytes: number };

/** Every database with its projects and stored bytes (SPEC §7 `GET /v1/admin/databases`), in databases() order. */
export async function summarizeDatabases(env: Env): Promise<DatabaseSummary[]> {
  const all = databases(env);
  const [counts, sizes] = await Promise.all([projectCountsByDatabase(directoryDb(env), FIRST_DATABASE), Promise.all(all.map((d) => storedBytes(d.db)))]);
  return all.map((d, i) => ({ name: d.name, projects: counts.get(d.name) ?? 0, bytes: sizes[i]! }));
}

/** Where a new project goes (SPEC §7): the database with the fewest stored bytes; the first of them on a tie. */
export function placeNewProject(summaries: readonly DatabaseSummary[]): string {
  let best = summaries[0]!;
  for (const s of summaries) if (s.bytes < best.bytes) best = s;
  return best.name;
}
