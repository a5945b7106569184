// What `npm run dev` and `npm run deploy` run, with wrangler itself: `wrangler d1 migrations apply`
// on a local D1 that the first release made with its schema.sql keeps every row and records 0001
// (docs/migrations.md).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function wrangler(persistTo: string, ...args: string[]): string {
  const run = spawnSync(process.execPath, [WRANGLER, "d1", ...args, "--local", "--persist-to", persistTo], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
  });
  expect(run.status, `${args.join(" ")}: ${run.stderr}`).toBe(0);
  return run.stdout;
}

function query<T>(persistTo: string, sql: string): T[] {
  const out = wrangler(persistTo, "execute", "DB", "--json", "--command", sql);
  return (JSON.parse(out) as { results: T[] }[])[0]!.results;
}

const migrationNames = readdirSync(join(ROOT, "migrations")).filter((f) => f.endsWith(".sql")).sort();

test("a local D1 made by the first release's schema.sql keeps its rows through `wrangler d1 migrations apply`", () => {
  const persistTo = mkdtempSync(join(tmpdir(), "mcpulse-wrangler-"));
  dirs.push(persistTo);
  wrangler(persistTo, "execute", "DB", "--file", "test/fixtures/first-release/schema.sql", "--yes");
  wrangler(persistTo, "execute", "DB", "--command", "INSERT INTO projects (project_id, name, created_at_ms) VALUES ('p_first', 'first release', 1)");
  expect(wrangler(persistTo, "migrations", "apply", "DB")).toContain("0001_first_release.sql");
  expect(query<{ name: string }>(persistTo, "SELECT name FROM d1_migrations ORDER BY id").map((r) => r.name)).toEqual(migrationNames);
  expect(query<{ project_id: string }>(persistTo, "SELECT project_id FROM projects")).toEqual([{ project_id: "p_first" }]);
  // Applying again changes nothing.
  expect(wrangler(persistTo, "migrations", "apply", "DB")).toContain("No migrations to apply");
}, 120_000);
