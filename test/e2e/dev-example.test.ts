// The newcomer's path: `npm run dev` says in one line what it did to the local D1 (wrangler's own
// output repeats the migration table after each migration) and records the URL it serves, and
// `npm run example` finds the worker there — or says exactly what to set.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
import * as devSupport from "../../scripts/dev-support.mjs";
import { startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

const { databaseBindings, devUrlFor, migrationSummary, readDevUrl } = devSupport as {
  databaseBindings: (toml?: string) => string[];
  devUrlFor: (args: string[]) => string;
  migrationSummary: (output: string) => string | null;
  readDevUrl: (env: Record<string, string | undefined>) => string | null;
};
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
const migrations = readdirSync(join(ROOT, "migrations")).filter((f) => f.endsWith(".sql")).sort();
const dirs: string[] = [];
let worker: RunningWorker;

beforeAll(async () => {
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mcpulse-dev-"));
  dirs.push(dir);
  return dir;
}

/** An example run with no MCPULSE_URL, finding the worker through the file `npm run dev` writes. */
function runExample(devUrlFile: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, MCPULSE_DEV_URL_FILE: devUrlFile, ADMIN_TOKEN: worker.adminToken };
  delete env.MCPULSE_URL;
  return spawnSync(process.execPath, ["--experimental-strip-types", "--no-warnings", join(ROOT, "examples", "run.ts")], { env, encoding: "utf8", timeout: 60_000 });
}

/** A TCP port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("npm run dev", () => {
  it("sums wrangler's migration output up in one line: what it applied, then that nothing is pending", () => {
    const persistTo = tempDir();
    const apply = () => {
      const run = spawnSync(process.execPath, [WRANGLER, "d1", "migrations", "apply", "DB", "--local", "--persist-to", persistTo], {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
      });
      expect(run.status).toBe(0);
      return run.stdout;
    };
    const first = apply();
    // What wrangler prints (the issue counted 441 lines for 12 migrations) against the one line shown instead.
    expect(first.split("\n").length).toBeGreaterThan(10 * migrations.length);
    expect(migrationSummary(first)).toBe(`Applied ${migrations.length} migrations to the local D1: ${migrations[0]} … ${migrations.at(-1)}.`);
    expect(migrationSummary(apply())).toBe("The local D1 is up to date: no pending migrations.");
    // Output it does not know is not guessed at: the caller then prints wrangler's own.
    expect(migrationSummary("something else")).toBeNull();
  }, 120_000);

  it("applies every migration to every database of wrangler.toml: two locally (SPEC §7)", () => {
    expect(databaseBindings()).toEqual(["DB", "DB_2"]);
    expect(databaseBindings('[[d1_databases]]\nbinding = "DB"\n[vars]\nX = "1"\n[[d1_databases]]\nbinding = "DB_EU"\n[[queues.producers]]\nbinding = "Q"\n')).toEqual(["DB", "DB_EU"]);
    const persistTo = tempDir();
    const script = readFileSync(join(ROOT, "scripts", "dev.mjs"), "utf8");
    expect(script).toContain("for (const binding of databaseBindings())");
    for (const binding of databaseBindings()) {
      const run = spawnSync(process.execPath, [WRANGLER, "d1", "migrations", "apply", binding, "--local", "--persist-to", persistTo], {
        cwd: ROOT,
        encoding: "utf8",
        env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
      });
      expect(run.status).toBe(0);
      expect(migrationSummary(run.stdout)).toBe(`Applied ${migrations.length} migrations to the local D1: ${migrations[0]} … ${migrations.at(-1)}.`);
    }
  }, 120_000);

  it("records the URL it serves for the options it was given", () => {
    expect(devUrlFor([])).toBe("http://127.0.0.1:8787");
    expect(devUrlFor(["--port", "8788"])).toBe("http://127.0.0.1:8788");
    expect(devUrlFor(["--port=9000", "--ip", "0.0.0.0"])).toBe("http://127.0.0.1:9000");
    expect(devUrlFor(["--ip=::1"])).toBe("http://[::1]:8787");
  });
});

describe("npm run example", () => {
  it("finds the worker on the port `npm run dev` recorded, without MCPULSE_URL", () => {
    const file = join(tempDir(), "dev-url");
    writeFileSync(file, worker.url + "\n");
    expect(readDevUrl({ MCPULSE_DEV_URL_FILE: file })).toBe(worker.url);
    const run = runExample(file);
    expect(run.stderr).not.toContain("not answering");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(`Dashboard: ${worker.url}/?key=mp_read_`);
  });

  it("says exactly what to set when nothing answers there", async () => {
    const file = join(tempDir(), "dev-url");
    writeFileSync(file, `http://127.0.0.1:${await closedPort()}\n`);
    const run = runExample(file);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("(the URL `npm run dev` recorded)");
    expect(run.stderr).toContain("npm run dev");
    expect(run.stderr).toContain("MCPULSE_URL=http://127.0.0.1:8788 npm run example");
  });
});
