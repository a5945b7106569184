#!/usr/bin/env node
// `npm run deploy [-- wrangler deploy options]`: the pending migrations to the remote D1 first, then
// the worker — so the code never runs against a schema older than it expects. Stops at the first
// failure. A database made by the first release's schema.sql is recognised by 0001 (docs/migrations.md).
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");

function run(args) {
  console.log(`$ wrangler ${args.join(" ")}`);
  const result = spawnSync(process.execPath, [wrangler, ...args], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

run(["d1", "migrations", "apply", "DB", "--remote"]);
run(["deploy", ...process.argv.slice(2)]);
