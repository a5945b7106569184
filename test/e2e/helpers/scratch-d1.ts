// A D1 database of its own in Miniflare, driven from Node: for tests of migrations and of the
// db/ and rollup/ SQL on a database at a chosen migration (scripts/migrations.ts applies them).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(
  readFileSync(fileURLToPath(new URL("../../../wrangler.toml", import.meta.url)), "utf8"),
)![1]!;

export type ScratchD1 = { db: D1Database; dispose: () => Promise<void> };

/** An empty in-memory D1 database (no migration applied). */
export async function scratchD1(): Promise<ScratchD1> {
  const mf = new Miniflare(convertV4MiniflareOptions({
    modules: true, script: "export default { fetch() { return new Response(''); } }", d1Databases: ["DB"], compatibilityDate: COMPATIBILITY_DATE,
  }));
  const db = (await mf.getD1Database("DB")) as unknown as D1Database;
  return { db, dispose: () => mf.dispose() };
}

/** A scratch database for the tests of one file: made before them, disposed of after; `db()` reads it. */
export function useScratchD1(hooks: { beforeAll: (fn: () => Promise<void>) => void; afterAll: (fn: () => Promise<void>) => void }): () => D1Database {
  let scratch: ScratchD1 | undefined;
  hooks.beforeAll(async () => {
    scratch = await scratchD1();
  });
  hooks.afterAll(async () => {
    await scratch?.dispose();
  });
  return () => scratch!.db;
}
