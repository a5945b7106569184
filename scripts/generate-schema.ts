// `npm run schema`: applies every migration to an empty in-memory D1 and writes the resulting full
// schema to schema.sql (for reading and review; test/worker/schema.test.ts fails when it is stale).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { migrateToHead } from "./migrations.ts";
import { dumpSchema } from "./schema-dump.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const mf = new Miniflare(convertV4MiniflareOptions({ modules: true, script: "export default {}", d1Databases: { DB: "schema" } }));
try {
  const db = (await mf.getD1Database("DB")) as unknown as D1Database;
  const applied = await migrateToHead(db);
  writeFileSync(join(root, "schema.sql"), await dumpSchema(db));
  console.log(`schema.sql written from ${applied.length} migration(s): ${applied.join(", ")}`);
} finally {
  await mf.dispose();
}
