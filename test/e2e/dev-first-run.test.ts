// The first `npm run dev` as a newcomer sees it: the real script (migrations, .dev.vars, the local
// Analytics Engine, wrangler dev) on a fresh local D1. Its first screen fits one screen, with
// wrangler's bindings table once; then `npm run rollup` triggers the cron and waits until the calls
// are folded in, so a read straight after it counts them.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** One screen of a terminal. */
const SCREEN_LINES = 40;

let dir: string;
let port: number;
let dev: ChildProcess;
let output = "";

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const p = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return p;
}

const url = () => `http://127.0.0.1:${port}`;
const adminToken = () => /^ADMIN_TOKEN\s*=\s*"?([^"\n]*)"?/m.exec(readFileSync(join(ROOT, ".dev.vars"), "utf8"))![1]!;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mcpulse-dev-first-"));
  port = await freePort();
  // As `npm run dev -- --port N --persist-to DIR` runs it (npm prints its own 3 lines before).
  dev = spawn(process.execPath, [join(ROOT, "scripts", "dev.mjs"), "--port", String(port), "--persist-to", join(dir, "state")], {
    cwd: ROOT,
    env: { ...process.env, MCPULSE_DEV_URL_FILE: join(dir, "dev-url"), WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  dev.stdout!.on("data", (chunk) => (output += chunk));
  dev.stderr!.on("data", (chunk) => (output += chunk));
  const deadline = Date.now() + 110_000;
  while (!output.includes("Ready on") && Date.now() < deadline && dev.exitCode === null) await new Promise((r) => setTimeout(r, 200));
  if (!output.includes("Ready on")) throw new Error(`npm run dev did not start:\n${output}`);
}, 120_000);

afterAll(async () => {
  if (dev && dev.exitCode === null) {
    const exited = new Promise((resolve) => dev.once("close", resolve));
    process.kill(-dev.pid!, "SIGTERM");
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("the first npm run dev", () => {
  it("fits one screen up to Ready: a banner with the URL, databases, admin token file and next command, the bindings table once", async () => {
    // Requests and a second worker on the machine make wrangler reload and print its table again.
    await fetch(`${url()}/v1/health`).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 3_000));
    const lines = output.split("\n");
    const ready = lines.findIndex((l) => l.includes("Ready on"));
    // npm's own header (a blank line, two lines, a blank line) comes before the script's output.
    expect(ready + 1 + 4).toBeLessThanOrEqual(SCREEN_LINES);
    expect(output).toContain(`MCPulse Edge (local): ${url()}`);
    expect(output).toMatch(/databases {4}DB, DB_2: Applied \d+ migrations to the local D1/);
    expect(output).toContain("admin token  .dev.vars");
    expect(output).toContain(`next         npm run project:create -- "my server" --port ${port}`);
    expect(output.split("Your Worker has access to the following bindings:").length - 1).toBe(1);
    expect(output).not.toContain("Connection status updated");
  });

  it("npm run rollup waits until the calls are folded in: a read straight after counts them", async () => {
    const created = await fetch(`${url()}/v1/admin/projects`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminToken()}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "first run" }),
    });
    expect(created.status).toBe(201);
    const project = (await created.json()) as { ingest_key: string; read_key: string };
    const now = Date.now();
    const batch = Array.from({ length: 12 }, (_, i) => ({
      v: 1, type: "call", session_id: `s_${i % 3}`, client_name: "cursor", tool_name: ["search", "fetch"][i % 2],
      started_at: new Date(now - 10 * 60_000 + i * 1_000).toISOString(), duration_ms: 20 + i, outcome: "ok",
      response_bytes: 50 * i, is_empty: false, args_hash: `${i % 3}aaaaaaaaaaa`,
    }));
    const ingest = await fetch(`${url()}/v1/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" },
      body: JSON.stringify({ batch }),
    });
    expect(ingest.status).toBe(202);
    const rollup = spawnSync(process.execPath, [join(ROOT, "scripts", "rollup.mjs"), "--port", String(port)], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
    expect(rollup.stderr).toBe("");
    expect(rollup.status).toBe(0);
    expect(rollup.stdout).toMatch(/^Rollup done in [\d.]+ s \(\d+ cron runs?\): folded in 12 calls of 1 project; DB, DB_2 complete up to /);
    const tools = (await (await fetch(`${url()}/v1/metrics/tools`, { headers: { authorization: `Bearer ${project.read_key}` } })).json()) as { tools: { calls: number }[] };
    expect(tools.tools.reduce((n, t) => n + t.calls, 0)).toBe(12);
  }, 150_000);
});
