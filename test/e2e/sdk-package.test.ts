// `npm pack` produces a package a server author can install: pack, install into a temp dir,
// import `mcpulse-edge/sdk`, type-check against its declarations, and run it on Node 20 and 22.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, test } from "vitest";
import { invalidPayloads, startCaptureServer, type CaptureServer } from "../sdk/helpers/capture-server.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const here = fileURLToPath(new URL("./sdk", import.meta.url));
let workdir: string;
let tarball: string;
let ingest: CaptureServer;

beforeAll(async () => {
  ingest = await startCaptureServer();
  workdir = mkdtempSync(join(tmpdir(), "mcpulse-pack-"));
  // prepack builds dist/sdk and dist/shared first.
  execFileSync("npm", ["pack", "--pack-destination", workdir, "--silent"], { cwd: repo, stdio: ["ignore", "pipe", "inherit"] });
  tarball = readdirSync(workdir).find((name) => name.endsWith(".tgz"))!;
  writeFileSync(join(workdir, "package.json"), JSON.stringify({ name: "consumer", version: "1.0.0", type: "module", private: true }));
  execFileSync(
    "npm",
    ["install", "--no-audit", "--no-fund", "--prefer-offline", "--silent", `./${tarball}`, join(repo, "node_modules/@modelcontextprotocol/sdk")],
    { cwd: workdir, stdio: ["ignore", "inherit", "inherit"] },
  );
  copyFileSync(join(here, "consumer.mjs"), join(workdir, "consumer.mjs"));
  copyFileSync(join(here, "consumer.ts"), join(workdir, "consumer.ts"));
}, 120_000);

afterAll(async () => {
  await ingest.close();
  rmSync(workdir, { recursive: true, force: true });
});

test("the tarball holds the built SDK and the hashing it needs, and nothing else of the repo", () => {
  const listing = execFileSync("tar", ["-tzf", join(workdir, tarball)], { encoding: "utf8" }).split("\n").filter(Boolean);
  expect(listing).toContain("package/dist/sdk/index.js");
  expect(listing).toContain("package/dist/sdk/index.d.ts");
  expect(listing).toContain("package/dist/shared/hash.js");
  expect(listing.some((path) => path.startsWith("package/src/"))).toBe(false);
  expect(listing.some((path) => path.includes("worker"))).toBe(false);
});

test("the installed package imports no MCP SDK and reads no environment variable", () => {
  const sources = execFileSync("grep", ["-rhoE", "from \"[^\"]+\"|process\\.env|import\\(", join(workdir, "node_modules/mcpulse-edge/dist")], { encoding: "utf8" });
  expect(sources).not.toContain("@modelcontextprotocol");
  expect(sources).not.toContain("process.env");
  expect(sources).not.toContain("zod");
});

test("its declarations type-check in a NodeNext TypeScript project", () => {
  const tsc = join(repo, "node_modules/typescript/bin/tsc");
  const result = spawnSync(
    process.execPath,
    [tsc, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "false", "--types", "node", "--typeRoots", join(repo, "node_modules/@types"), "consumer.ts"],
    { cwd: workdir, encoding: "utf8" },
  );
  expect(result.stdout + result.stderr).toBe("");
  expect(result.status).toBe(0);
});

// The system Node (20 on the reference machine): `node` from the PATH without the project's
// node_modules/.bin, which npm and npx put first (with Node 22 from devDependencies).
const systemPath = (process.env.PATH ?? "").split(":").filter((dir) => !dir.includes("node_modules")).join(":");

/**
 * Runs the consumer without blocking this process: the ingest it sends to lives here, and must be
 * able to answer the exit flush (under spawnSync the answer would never come, and the SDK would
 * rightly report the payloads as not confirmed on stderr).
 */
function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

test.each([
  ["the system Node", "node", systemPath],
  ["Node 22", process.execPath, process.env.PATH ?? ""],
])("imports and runs on %s; the exit flush delivers valid payloads", async (label, command, path) => {
  const before = ingest.payloads().length;
  const result = await run(command, ["consumer.mjs", ingest.url], { cwd: workdir, timeoutMs: 30_000, env: { ...process.env, PATH: path } });
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  const report = JSON.parse(result.stdout) as { node: string; flushAt: number };
  expect(report.flushAt).toBe(30);
  // Node ≥ 20 is the promise (SPEC §4); on the reference machine the system Node is 20.
  expect(Number(report.node.slice(1).split(".")[0])).toBeGreaterThanOrEqual(20);
  if (label === "Node 22") expect(report.node).toMatch(/^v22\./);
  console.log(`${label}: ${report.node}`);
  const payloads = (await ingest.waitForPayloads(before + 3)).slice(before);
  expect(payloads.map((p) => p.type).sort()).toEqual(["call", "call", "startup"]);
  expect(payloads.find((p) => p.type === "startup")).toMatchObject({ mcp_sdk_version: "1.32.2", sdk: "mcpulse-edge-ts/0.1.0" });
  expect(invalidPayloads(payloads)).toEqual([]);
});
