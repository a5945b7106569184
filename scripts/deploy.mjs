#!/usr/bin/env node
// `npm run deploy [-- wrangler deploy options]`: the pending migrations to every remote D1 first, then
// the worker — so the code never runs against a schema older than it expects. Stops at the first
// failure. A database made by the first release's schema.sql is recognised by 0001 (docs/migrations.md).
// The ingest queues of wrangler.toml (docs/ingest.md) are created first when the account lacks them:
// a deploy that binds a queue that does not exist fails.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { databaseBindings } from "./dev-support.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");

function run(args) {
  console.log(`$ wrangler ${args.join(" ")}`);
  const result = spawnSync(process.execPath, [wrangler, ...args], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** Creates a queue unless it exists already (wrangler then answers with an error we can ignore). */
function ensureQueue(name) {
  const listed = spawnSync(process.execPath, [wrangler, "queues", "list"], { cwd: root, encoding: "utf8" });
  // A whole name between separators: "mcpulse-ingest" must not match "mcpulse-ingest-dead".
  if (listed.status === 0 && new RegExp(`(^|[\\s│|])${name}([\\s│|]|$)`, "m").test(listed.stdout)) return;
  run(["queues", "create", name]);
}

for (const queue of ["mcpulse-ingest", "mcpulse-ingest-dead", "mcpulse-rollup"]) ensureQueue(queue);
// Every database of wrangler.toml gets every migration (SPEC §7), before the code that expects them.
for (const binding of databaseBindings()) run(["d1", "migrations", "apply", binding, "--remote"]);
run(["deploy", ...process.argv.slice(2)]);
