// `npm run deploy` as a newcomer without a Cloudflare account runs it: the real script and the real
// wrangler, with no API token and a home directory wrangler has never logged in from. The dry run
// says what a deploy would do and builds the worker; the deploy itself stops before any remote step
// with one line on how to log in. Neither writes a file.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
import * as plan from "../../scripts/deploy-plan.mjs";

const { DEPLOY_CONFIG, DEPLOY_URL_FILE, DEPLOY_VARS, LOGIN_HINT } = plan as Record<string, string>;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const home = mkdtempSync(join(tmpdir(), "mcpulse-no-account-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

/** The deploy's own files, as they are now (a developer may have deployed from this checkout). */
const records = () => [DEPLOY_CONFIG, DEPLOY_VARS, DEPLOY_URL_FILE].map((f) => (existsSync(join(ROOT, f!)) ? readFileSync(join(ROOT, f!), "utf8") : null));

function deploy(args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), WRANGLER_SEND_METRICS: "false", CI: "true" };
  delete env.CLOUDFLARE_API_TOKEN;
  delete env.CLOUDFLARE_ACCOUNT_ID;
  return spawnSync(process.execPath, [join(ROOT, "scripts", "deploy.mjs"), ...args], { cwd: ROOT, env, encoding: "utf8", timeout: 120_000 });
}

describe("npm run deploy without an account", () => {
  it("--dry-run: the plan for every resource of wrangler.toml, and the worker builds", () => {
    const before = records();
    const run = deploy(["--dry-run"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("Dry run: nothing remote is read or changed.");
    for (const what of ['D1 DB: "mcpulse"', 'D1 DB_2: "mcpulse-2"', "KV OAUTH_KV", "queue mcpulse-ingest-dead: created with `wrangler queues create"]) expect(run.stdout).toContain(what);
    expect(run.stdout).toContain("The worker builds.");
    expect(records()).toEqual(before);
  });

  it("without credentials: one line on how to log in, before any remote step", () => {
    const before = records();
    const run = deploy([]);
    expect(run.status).toBe(1);
    expect(run.stdout.trim()).toBe(LOGIN_HINT);
    expect(records()).toEqual(before);
  });
});
