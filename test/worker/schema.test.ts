// schema.sql is generated from the migrations (`npm run schema`): it must be exactly what they
// produce, so a reviewer reading it reads the real schema.
import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { dumpSchema } from "../../scripts/schema-dump.ts";

it("schema.sql is what the migrations produce (run `npm run schema` after adding one)", async () => {
  expect(await dumpSchema(env.DB)).toBe(env.GENERATED_SCHEMA_SQL);
});

it("records every migration as applied, in order", async () => {
  const { results } = await env.DB.prepare("SELECT name FROM d1_migrations ORDER BY id").all<{ name: string }>();
  expect(results.map((r) => r.name)).toEqual(env.TEST_MIGRATIONS.map((m) => m.name));
  expect(results.length).toBeGreaterThan(0);
});
