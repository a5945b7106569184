// Applies schema.sql to the test D1 before each test file (statements split on `;` at line end).
import { env } from "cloudflare:test";

const schemaSql = env.SCHEMA_SQL;
const statements = schemaSql
  .split(/;\s*$/m)
  .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
  .filter((s) => s.length > 0);
await env.DB.batch(statements.map((s) => env.DB.prepare(s)));
