#!/usr/bin/env node
// `npm run project:create -- NAME [--port N | --url URL | --remote]`: creates a project on the
// running dev worker (`npm run dev`) through the admin route, with the ADMIN_TOKEN from .dev.vars,
// and prints its ingest and read keys (shown once: only their SHA-256 is stored). `--remote`: on the
// worker `npm run deploy` deployed last, with the admin token it set (.deploy.vars).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEPLOY_URL_FILE, DEPLOY_VARS, adminTokenOf } from "./deploy-plan.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const names = [];
let url = process.env.MCPULSE_URL ?? "http://127.0.0.1:8787";
let remote = false;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--port") url = `http://127.0.0.1:${args[++i]}`;
  else if (args[i] === "--url") url = args[++i];
  else if (args[i] === "--remote") remote = true;
  else names.push(args[i]);
}
const name = names.join(" ").trim();
if (!name) {
  console.error('usage: npm run project:create -- NAME [--port N | --url URL | --remote]');
  process.exit(2);
}

const fileText = (name) => (existsSync(join(root, name)) ? readFileSync(join(root, name), "utf8") : null);
if (remote) {
  url = fileText(DEPLOY_URL_FILE)?.trim() ?? "";
  if (!url) {
    console.error("No deployed worker recorded here: run `npm run deploy` first, or use --url https://….workers.dev with ADMIN_TOKEN set.");
    process.exit(1);
  }
}
const tokenFile = remote ? DEPLOY_VARS : ".dev.vars";
const token = process.env.ADMIN_TOKEN ?? adminTokenOf(fileText(tokenFile));
if (!token) {
  console.error(remote
    ? `No ADMIN_TOKEN: ${DEPLOY_VARS} holds the one \`npm run deploy\` set; for a token set another way, set ADMIN_TOKEN.`
    : "No ADMIN_TOKEN: run `npm run dev` once (it writes .dev.vars), or set ADMIN_TOKEN.");
  process.exit(1);
}

let res;
try {
  res = await fetch(`${url.replace(/\/$/, "")}/v1/admin/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ name }),
  });
} catch {
  console.error(remote ? `Cannot reach the worker at ${url}.` : `Cannot reach the worker at ${url}: start it with \`npm run dev\` first.`);
  process.exit(1);
}
if (res.status !== 201) {
  console.error(`The worker answered ${res.status}: ${await res.text()}`);
  process.exit(1);
}
const project = await res.json();
console.log(`Project "${project.name}" created: ${project.project_id}

  ingest key (MCP server → POST /v1/ingest):  ${project.ingest_key}
  read key   (dashboard and /v1/metrics/*):   ${project.read_key}

The keys are shown once; only their SHA-256 is stored. Use them like this:
  watch(server, { key: "${project.ingest_key}", endpoint: "${url}" });
  curl -H "Authorization: Bearer ${project.read_key}" ${url}/v1/metrics/tools
  open ${url}/?key=${project.read_key}`);
