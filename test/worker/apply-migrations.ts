// Brings every test D1 to head before each test file: every migration in migrations/, applied to
// every database (DB and DB_2, wrangler.toml) the way `wrangler d1 migrations apply` does (recorded
// in d1_migrations), by the Vitest plugin.
import { applyD1Migrations, env } from "cloudflare:test";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await applyD1Migrations(env.DB_2!, env.TEST_MIGRATIONS);
