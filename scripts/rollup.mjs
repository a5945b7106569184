#!/usr/bin/env node
// `npm run rollup [-- --port N | --url URL]`: runs the rollup cron on the running `npm run dev`
// worker now and waits until it is done, then says what it folded in (scripts/rollup-local.mjs).
// The worker is the one `npm run dev` recorded, else MCPULSE_URL, else 127.0.0.1:8787; the admin
// token is ADMIN_TOKEN, else the one of .dev.vars.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { adminTokenOf } from "./deploy-plan.mjs";
import { ROOT, readDevUrl } from "./dev-support.mjs";
import { runLocalRollup } from "./rollup-local.mjs";

const args = process.argv.slice(2);
let url = process.env.MCPULSE_URL ?? readDevUrl() ?? "http://127.0.0.1:8787";
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--port") url = `http://127.0.0.1:${args[++i]}`;
  else if (args[i] === "--url") url = args[++i];
  else {
    console.error("usage: npm run rollup [-- --port N | --url URL]");
    process.exit(2);
  }
}
const devVars = join(ROOT, ".dev.vars");
const adminToken = process.env.ADMIN_TOKEN ?? adminTokenOf(existsSync(devVars) ? readFileSync(devVars, "utf8") : null);
if (!adminToken) {
  console.error("No ADMIN_TOKEN: run `npm run dev` once (it writes .dev.vars), or set ADMIN_TOKEN.");
  process.exit(1);
}
const result = await runLocalRollup({ url, adminToken });
(result.ok ? console.log : console.error)(result.message);
process.exitCode = result.ok ? 0 : 1;
