// `mcp_sdk_version` (SPEC §4): the version of the MCP SDK the watched server object comes from —
// 1.17 beside this repository's 1.32 reports 1.17 — or null when it cannot be known, never a guess.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { watch } from "../../src/sdk/index.ts";
import { mcpSdkVersionOfStack } from "../../src/sdk/mcp-sdk-version.ts";
import { setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { startIngestRecorder, type IngestRecorder } from "./conformance/ingest-recorder.ts";
import { buildLowLevelServer, buildMcpServer, type Generation } from "./conformance/servers.ts";
import { connectTapped } from "./conformance/wire.ts";

const versionOf = (name: string) =>
  (JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), "utf8")) as { version: string }).version;

let ingest: IngestRecorder;
let counter = 0;
const scratch = mkdtempSync(join(tmpdir(), "mcpulse-version-"));
beforeAll(async () => {
  ingest = await startIngestRecorder();
  setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
});
afterAll(async () => {
  setTransportOverridesForTests({});
  await ingest.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe.each([
  ["1.17", "@modelcontextprotocol/sdk-1-17"],
  [1, "@modelcontextprotocol/sdk"],
  [2, "@modelcontextprotocol/server"],
] as [Generation, string][])("a server built with MCP SDK %s", (generation, installedAs) => {
  test.each([
    ["McpServer", buildMcpServer],
    ["Server", buildLowLevelServer],
  ] as const)("%s reports the version of the package it comes from", async (_kind, build) => {
    const key = `mp_live_version_${++counter}`;
    const client = await connectTapped(generation, watch(build(generation), { key, endpoint: ingest.url }), "version-client");
    await client.close();
    const [startup] = await ingest.waitFor(key, 1, "startup");
    expect(startup!.mcp_sdk_version).toBe(versionOf(installedAs));
  });
});

test("1.17 and 1.32 are really different versions here (otherwise the test above proves nothing)", () => {
  expect(versionOf("@modelcontextprotocol/sdk-1-17")).toMatch(/^1\.17\./);
  expect(versionOf("@modelcontextprotocol/sdk")).not.toMatch(/^1\.17\./);
});

test("a server-shaped object that is not the MCP SDK's: null, never the installed MCP SDK's version", async () => {
  // Recognised by its structure (a Map of handlers and setRequestHandler), but its code is this
  // test file's: nothing tells which MCP SDK it is.
  class HomeMadeServer {
    _requestHandlers = new Map<string, (request: unknown, extra: unknown) => unknown>();
    setRequestHandler(method: string, handler: (request: unknown, extra: unknown) => unknown) {
      this._requestHandlers.set(method, handler);
    }
  }
  const server = new HomeMadeServer();
  const key = `mp_live_version_${++counter}`;
  watch(server, { key, endpoint: ingest.url });
  server.setRequestHandler("initialize", () => ({ protocolVersion: "2025-06-18", capabilities: {}, serverInfo: { name: "h", version: "1" } }));
  server.setRequestHandler("tools/list", () => ({ tools: [{ name: "t", inputSchema: { type: "object" } }] }));
  await server._requestHandlers.get("initialize")!({ method: "initialize", params: { clientInfo: { name: "c" }, protocolVersion: "2025-06-18" } }, {});
  const [startup] = await ingest.waitFor(key, 1, "startup");
  expect(startup!.mcp_sdk_version).toBeNull();
  expect(startup!.tools).toHaveLength(1);
});

describe("reading the version from a call stack", () => {
  function fakePackage(dir: string, manifest: Record<string, unknown>, nested?: string): string {
    const root = join(scratch, dir);
    mkdirSync(join(root, "dist", "esm", "shared"), { recursive: true });
    writeFileSync(join(root, "package.json"), JSON.stringify(manifest));
    // Like the MCP SDK: dist/esm/package.json is {"type": "module"}, without a name.
    writeFileSync(join(root, "dist", "esm", "package.json"), JSON.stringify({ type: "module" }));
    const file = join(root, "dist", "esm", "shared", nested ?? "protocol.js");
    writeFileSync(file, "");
    return file;
  }
  const frame = (file: string, fn = "Server.setRequestHandler") => `    at ${fn} (${file}:12:34)`;

  test("the first caller's package, walking past a nameless package.json", () => {
    const file = fakePackage("sdk-a", { name: "@modelcontextprotocol/sdk", version: "1.17.9" });
    expect(mcpSdkVersionOfStack(`Error\n${frame(file)}\n    at main (/somewhere/else.js:1:1)`)).toBe("1.17.9");
    expect(mcpSdkVersionOfStack(`Error\n${frame(pathToFileURL(file).href)}`)).toBe("1.17.9");
    expect(mcpSdkVersionOfStack(`Error\n    at ${file}:1:2`)).toBe("1.17.9");
  });

  test("2.x: @modelcontextprotocol/server; core is looked through to the server beyond it", () => {
    const server = fakePackage("server-b", { name: "@modelcontextprotocol/server", version: "2.9.1" });
    const core = fakePackage("core-b", { name: "@modelcontextprotocol/core", version: "2.9.0" });
    expect(mcpSdkVersionOfStack(`Error\n${frame(core)}\n${frame(server)}`)).toBe("2.9.1");
    expect(mcpSdkVersionOfStack(`Error\n${frame(core)}`)).toBeNull();
  });

  test("Node internals are skipped; any other package first, or none at all, is null", () => {
    const sdk = fakePackage("sdk-c", { name: "@modelcontextprotocol/sdk", version: "1.20.0" });
    const app = fakePackage("app-c", { name: "my-bundled-app", version: "4.0.0" });
    expect(mcpSdkVersionOfStack(`Error\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n${frame(sdk)}`)).toBe("1.20.0");
    expect(mcpSdkVersionOfStack(`Error\n${frame(app)}\n${frame(sdk)}`)).toBeNull();
    expect(mcpSdkVersionOfStack(`Error\n    at Object.<anonymous> (${join(scratch, "nowhere", "x.js")}:1:1)`)).toBeNull();
    expect(mcpSdkVersionOfStack("Error")).toBeNull();
    expect(mcpSdkVersionOfStack(undefined)).toBeNull();
  });

  test("a version over 64 characters or not a string is null", () => {
    const long = fakePackage("sdk-d", { name: "@modelcontextprotocol/sdk", version: "1.".padEnd(65, "9") });
    const numeric = fakePackage("sdk-e", { name: "@modelcontextprotocol/sdk", version: 1.5 });
    expect(mcpSdkVersionOfStack(`Error\n${frame(long)}`)).toBeNull();
    expect(mcpSdkVersionOfStack(`Error\n${frame(numeric)}`)).toBeNull();
  });
});
