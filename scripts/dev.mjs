#!/usr/bin/env node
// `npm run dev [-- wrangler dev options]`: the worker on 127.0.0.1:8787 with a ready local D1, and a
// first screen that fits one screen (a short banner, then wrangler's own output once).
// 1. applies the pending migrations (migrations/) to every local D1 (DB and DB_2) with `wrangler d1 migrations apply`,
//    summed up in the banner (wrangler's own output only on an error);
//    a local D1 made by the first release's schema.sql is recognised by 0001 and keeps its data;
// 2. creates .dev.vars with a random ADMIN_TOKEN unless one is already set there;
// 3. records the URL it serves (for `npm run example` and `npm run rollup`);
// 4. starts the local stand-in for Analytics Engine (an embedded ClickHouse, scripts/analytics-local.ts)
//    on 127.0.0.1, kept in .wrangler/state/analytics-engine, so Explore answers out of the box;
// 5. prints the banner: URL, databases, admin token file, next command;
// 6. runs `wrangler dev` with the scheduled handler reachable (--test-scheduled), its output through
//    scripts/dev-output.mjs (the bindings table once, repeated errors summed up). Extra arguments
//    pass through: `npm run dev -- --port 8788`.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync, appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { clearDevUrl, databaseBindings, devUrlFor, migrationSummary, writeDevUrl } from "./dev-support.mjs";
import { createDevOutputFilter } from "./dev-output.mjs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
const extraArgs = process.argv.slice(2);

function hasOption(name) {
  return extraArgs.some((arg) => arg === name || arg.startsWith(`${name}=`));
}

function optionValue(name, fallback) {
  const i = extraArgs.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (i < 0) return fallback;
  return extraArgs[i].includes("=") ? extraArgs[i].split("=")[1] : extraArgs[i + 1] ?? fallback;
}

// 1. Schema. Extra options that choose the local D1 (--persist-to) apply to the migrations too.
// wrangler prints the whole migration table again after each migration; its output is kept for an
// error and summed up in one line otherwise.
const persist = hasOption("--persist-to") ? ["--persist-to", optionValue("--persist-to", "")] : [];
const schema = [];
// Every database of wrangler.toml (DB and DB_2: local development runs two, SPEC §7) gets every migration.
for (const binding of databaseBindings()) {
  const applied = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", binding, "--local", ...persist], {
    cwd: root,
    encoding: "utf8",
    // Never prompt: the local database is the developer's own.
    env: { ...process.env, CI: "true" },
  });
  const summary = applied.status === 0 ? migrationSummary(applied.stdout ?? "") : null;
  if (summary === null) {
    process.stdout.write(applied.stdout ?? "");
    process.stderr.write(applied.stderr ?? "");
  }
  if (applied.status !== 0) {
    console.error(`Could not apply the migrations to the local D1 ${binding} (see the error above).`);
    process.exit(applied.status ?? 1);
  }
  if (summary !== null) schema.push({ binding, summary });
}

// 2. Admin token.
const devVarsPath = join(root, ".dev.vars");
const devVars = existsSync(devVarsPath) ? readFileSync(devVarsPath, "utf8") : "";
const newToken = !/^ADMIN_TOKEN\s*=/m.test(devVars);
if (newToken) {
  const token = randomBytes(24).toString("base64url");
  const line = `ADMIN_TOKEN="${token}"\n`;
  if (devVars === "") writeFileSync(devVarsPath, line, { mode: 0o600 });
  else appendFileSync(devVarsPath, (devVars.endsWith("\n") ? "" : "\n") + line);
}

// 3. The URL, recorded for `npm run example` and `npm run rollup` (scripts/dev-support.mjs).
const port = optionValue("--port", "8787");
const url = devUrlFor(extraArgs);
writeDevUrl(url);

// 4. The local Analytics Engine. Without it (chdb missing on this platform) the worker still runs;
// Explore then answers 503 as it does where AE is not configured.
let analytics = null;
try {
  const { LocalAnalyticsEngine, startLocalAnalyticsServer } = await import("./analytics-local.ts");
  const engine = new LocalAnalyticsEngine(join(root, ".wrangler", "state", "analytics-engine"));
  analytics = { engine, ...(await startLocalAnalyticsServer(engine)) };
} catch (error) {
  analytics = { failed: error instanceof Error ? error.message : String(error) };
}

// 5. The banner.
const portOption = port === "8787" ? "" : ` --port ${port}`;
const sameSummary = schema.every((s) => s.summary === schema[0]?.summary);
const schemaLines = sameSummary && schema.length > 0
  ? [`${schema.map((s) => s.binding).join(", ")}: ${schema[0].summary}`]
  : schema.map((s) => `${s.binding}: ${s.summary}`);
console.log(`
MCPulse Edge (local): ${url}
  databases    ${schemaLines.join("\n               ")}
  admin token  .dev.vars${newToken ? " (a new random ADMIN_TOKEN)" : ""}
  explore      ${analytics.failed ? `off: the local Analytics Engine did not start (${analytics.failed}); Explore answers 503` : `local Analytics Engine (embedded ClickHouse) on ${analytics.url}`}
  next         npm run project:create -- "my server"${portOption}   (or the whole path: npm run example)
               npm run rollup${port === "8787" ? "" : ` -- --port ${port}`}   folds new calls into the metrics now (the cron: every 5 minutes)`);
if (analytics.failed) analytics = null;

// 6. Serve. The defaults come first so that options passed through are the ones that count.
// LOCAL_DEV: alert destinations may be http://127.0.0.1, localhost or [::1] (docs/alerts.md); never set on deploy.
const args = [wrangler, "dev", "--test-scheduled", "--var", "LOCAL_DEV:true"];
if (analytics) args.push("--var", `ANALYTICS_LOCAL_URL:${analytics.url}`);
if (!hasOption("--ip")) args.push("--ip", "127.0.0.1");
if (!hasOption("--port")) args.push("--port", "8787");
args.push(...extraArgs);
// Local development needs no network: skip Miniflare's download of a real `Request.cf` object (it
// warns on every start where Cloudflare is unreachable) and use its placeholder directly.
// The worker has no service binding to other local workers, so it keeps its own registry of them:
// with the machine's, every other `wrangler dev` starting or stopping reloads this one.
const env = {
  ...process.env,
  CLOUDFLARE_CF_FETCH_ENABLED: process.env.CLOUDFLARE_CF_FETCH_ENABLED ?? "false",
  WRANGLER_REGISTRY_PATH: process.env.WRANGLER_REGISTRY_PATH ?? join(root, ".wrangler", "dev-registry"),
  // wrangler writes to a pipe now; keep its colours where we write to a terminal.
  ...(process.stdout.isTTY && !process.env.NO_COLOR ? { FORCE_COLOR: process.env.FORCE_COLOR ?? "1" } : {}),
};
const child = spawn(process.execPath, args, { cwd: root, stdio: ["inherit", "pipe", "pipe"], env });
const output = createDevOutputFilter({ write: (line, stream) => (stream === "stderr" ? process.stderr : process.stdout).write(line + "\n") });
createInterface({ input: child.stdout }).on("line", (line) => output.push(line, "stdout"));
createInterface({ input: child.stderr }).on("line", (line) => output.push(line, "stderr"));
const summaries = setInterval(() => output.tick(), 1000);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("close", async (code, signal) => {
  clearInterval(summaries);
  output.flush();
  clearDevUrl(url);
  if (analytics) {
    await analytics.close();
    analytics.engine.close();
  }
  process.exit(code ?? (signal ? 1 : 0));
});
