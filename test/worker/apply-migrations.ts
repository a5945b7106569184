// Brings every test D1 to head before each test file: every migration in migrations/, applied to
// every database (DB and DB_2, wrangler.toml) the way `wrangler d1 migrations apply` does (recorded
// in d1_migrations), by the Vitest plugin.
import { applyD1Migrations, env } from "cloudflare:test";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await applyD1Migrations(env.DB_2!, env.TEST_MIGRATIONS);

// In the fast lane the files share one database: a rollup job another file left unfinished (a fault
// it injected, a job still running after its test ended) must not hold this file's rollups back
// for the lease's minute. Each file starts with no database leased (a fresh one has none anyway).
for (const db of [env.DB, env.DB_2!]) await db.prepare("UPDATE rollup_state SET lease_until_ms = 0 WHERE lease_until_ms > 0").run();
