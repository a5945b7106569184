// The three rules (SPEC §4): never throw, never block, never send customer data — with the
// endpoint down, answering 500, hanging, or fetch throwing.
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from "vitest";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { watch } from "../../src/sdk/index.ts";
import { setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { postWithFetch } from "../../src/sdk/transport.ts";
import { invalidPayloads, startCaptureServer, type CaptureServer } from "./helpers/capture-server.ts";
import { CANARY_ARG, CANARY_DESCRIPTION, CANARY_RESULT, FLAVOURS, buildServer, callAndCapture, connectInMemory } from "./helpers/fixtures.ts";

const problems: unknown[] = [];
const onProblem = (reason: unknown) => problems.push(reason);
beforeAll(() => {
  process.on("unhandledRejection", onProblem);
  process.on("uncaughtException", onProblem);
});
afterAll(() => {
  process.off("unhandledRejection", onProblem);
  process.off("uncaughtException", onProblem);
});
const servers: CaptureServer[] = [];
afterEach(async () => {
  setTransportOverridesForTests({});
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  await Promise.all(servers.splice(0).map((server) => server.close()));
  // Let any stray rejection surface before checking.
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(problems).toEqual([]);
});

let counter = 0;
const CALLS = 120; // over 30: sends start while calls are still being made

async function callsAgainst(endpoint: string, flavour: (typeof FLAVOURS)[number]) {
  const unwatched = await connectInMemory(flavour, buildServer(flavour));
  const watched = await connectInMemory(flavour, watch(buildServer(flavour), { key: `mp_live_rules_${++counter}`, endpoint }));
  const names = ["answer", "empty_array", "returns_error", "throws", "no_such_tool"];
  for (let i = 0; i < CALLS; i++) {
    const name = names[i % names.length]!;
    const args = { i, note: CANARY_ARG };
    expect(await callAndCapture(watched, name, args)).toEqual(await callAndCapture(unwatched, name, args));
    // InMemoryTransport runs on microtasks: let the event loop turn now and then, so sends really
    // go out (and fail, or hang) while calls are still being made.
    if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
  }
  await watched.close();
  await unwatched.close();
}

describe.each(FLAVOURS)("%s: a failing endpoint changes nothing for the tools", (flavour) => {
  test("endpoint down (connection refused)", async () => {
    const gone = await startCaptureServer();
    const url = gone.url;
    await gone.close();
    await callsAgainst(url, flavour);
  });

  test("endpoint answering 500", async () => {
    const ingest = await startCaptureServer("fail500");
    servers.push(ingest);
    await callsAgainst(ingest.url, flavour);
    await ingest.waitForRequests(1);
  });

  test("endpoint hanging: every call is answered while the send is still open", async () => {
    const ingest = await startCaptureServer("hang");
    servers.push(ingest);
    await callsAgainst(ingest.url, flavour);
    // Nothing on the tool-call path waited on the network: the one send never finished.
    expect(ingest.requests).toHaveLength(1);
    expect(ingest.open).toBe(1);
  });

  test("fetch throwing (the fetch transport, as in workerd)", async () => {
    vi.stubGlobal("fetch", () => {
      throw new TypeError("fetch failed");
    });
    setTransportOverridesForTests({ post: postWithFetch });
    await callsAgainst("http://127.0.0.1:9", flavour);
  });

  test("fetch rejecting", async () => {
    vi.stubGlobal("fetch", () => Promise.reject(new TypeError("network down")));
    setTransportOverridesForTests({ post: postWithFetch });
    await callsAgainst("http://127.0.0.1:9", flavour);
  });
});

test("the fetch transport delivers to a real server too", async () => {
  const ingest = await startCaptureServer();
  servers.push(ingest);
  setTransportOverridesForTests({ post: postWithFetch, tuning: { flushIntervalMs: 20 } });
  const client = await connectInMemory("v2-mcp", watch(buildServer("v2-mcp"), { key: "mp_live_rules_fetch", endpoint: ingest.url }));
  await client.callTool("answer", { note: CANARY_ARG });
  await ingest.waitForPayloads(2);
  expect(ingest.requests[0]!.headers.authorization).toBe("Bearer mp_live_rules_fetch");
  expect(ingest.requests.map((r) => r.body).join("")).not.toContain(CANARY_ARG);
  await client.close();
});

describe("never throw", () => {
  test("watch() survives hostile objects", () => {
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error("trap");
        },
        has() {
          throw new Error("trap");
        },
      },
    );
    expect(watch(hostile, { key: "mp_live_x", endpoint: "http://127.0.0.1:9" })).toBe(hostile);
    const throwingOptions = new Proxy({}, { get: () => { throw new Error("options trap"); } });
    const server = buildServer("v1-mcp");
    expect(watch(server, throwingOptions as never)).toBe(server);
  });

  test("a tools/list that throws costs the startup, not the calls", async () => {
    const ingest = await startCaptureServer();
    servers.push(ingest);
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
    const server = buildServer("v1-server") as { _requestHandlers: Map<string, unknown> };
    watch(server, { key: "mp_live_rules_listfails", endpoint: ingest.url });
    server._requestHandlers.set("tools/list", () => {
      throw new Error("list exploded");
    });
    const client = await connectInMemory("v1-server", server);
    await client.callTool("answer", {});
    const payloads = await ingest.waitForPayloads(1);
    expect(payloads.map((p) => p.type)).toEqual(["call"]);
    await client.close();
  });
});

describe("never send customer data", () => {
  test("canaries in arguments, results and descriptions never appear in any body, debug on or off", async () => {
    const ingest = await startCaptureServer();
    servers.push(ingest);
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const stdout = vi.spyOn(process.stdout, "write");
    for (const flavour of FLAVOURS) {
      const server = watch(buildServer(flavour), { key: `mp_live_canary_${flavour}`, endpoint: ingest.url, debug: true });
      const client = await connectInMemory(flavour, server, `client ${CANARY_ARG.slice(0, 0)}`);
      for (const name of ["answer", "returns_error", "throws", "search"]) {
        await callAndCapture(client, name, { query: CANARY_ARG, nested: { deep: [CANARY_ARG] } });
      }
      await client.close();
    }
    await ingest.waitForPayloads(4 * 5);
    expect(invalidPayloads(ingest.payloads())).toEqual([]);
    const bodies = ingest.requests.map((r) => r.body).join("\n");
    const logged = stderr.mock.calls.map((call) => String(call[0])).join("");
    for (const canary of [CANARY_ARG, CANARY_RESULT, CANARY_DESCRIPTION]) {
      expect(bodies).not.toContain(canary);
      expect(logged).not.toContain(canary);
    }
    // debug: every payload sent is on stderr; nothing of ours on stdout (the stdio transport).
    expect(logged).toContain('"type":"call"');
    expect(logged).toContain('"type":"startup"');
    expect(stdout.mock.calls.map((call) => String(call[0])).join("")).not.toContain("mcpulse");
  });

  test("debug on: anything watch() leaves alone gets one line on stderr", () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const stdout = vi.spyOn(process.stdout, "write");
    const notAServer = { tools: [] };
    expect(watch(notAServer, { key: "mp_live_x", endpoint: "http://127.0.0.1:9", debug: true })).toBe(notAServer);
    const server = buildServer("v1-mcp");
    expect(watch(server, { key: "  ", endpoint: "http://127.0.0.1:9", debug: true })).toBe(server);
    expect(watch(server, { key: "mp_live_x", endpoint: "http://127.0.0.1:9", enabled: false, debug: true })).toBe(server);
    expect(watch(server, { key: "mp_live_x", endpoint: undefined, debug: true })).toBe(server);
    expect(watch(server, { key: "mp_live_x", endpoint: "ftp://127.0.0.1", debug: true })).toBe(server);
    const lines = stderr.mock.calls.map((call) => String(call[0]));
    expect(lines).toEqual([
      "[mcpulse] not an McpServer or Server of the MCP SDK; returned untouched\n",
      "[mcpulse] no usable key; the SDK is disabled; server returned untouched\n",
      "[mcpulse] disabled by enabled: false; server returned untouched\n",
      "[mcpulse] no endpoint (the URL of your own worker); the SDK is disabled; server returned untouched\n",
      "[mcpulse] endpoint is not an http(s) URL; the SDK is disabled; server returned untouched\n",
    ]);
    expect(stdout.mock.calls.map((call) => String(call[0])).join("")).not.toContain("mcpulse");
  });

  test("debug off: not a single line on stderr or stdout", async () => {
    const ingest = await startCaptureServer();
    servers.push(ingest);
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
    const stderr = vi.spyOn(process.stderr, "write");
    const stdout = vi.spyOn(process.stdout, "write");
    const server = new McpServer({ name: "quiet", version: "1" });
    server.registerTool("t", { description: "t" }, () => ({ content: [] }));
    watch(server, { key: "mp_live_quiet", endpoint: ingest.url });
    watch(server, { key: "mp_live_quiet", endpoint: ingest.url });
    watch({}, { key: "mp_live_quiet", endpoint: ingest.url });
    watch(new McpServer({ name: "q2", version: "1" }), { key: "", endpoint: ingest.url });
    watch(new McpServer({ name: "q3", version: "1" }), { key: "mp_live_quiet", endpoint: undefined });
    const client = await connectInMemory("v1-mcp", server);
    await client.callTool("t", {});
    await ingest.waitForPayloads(2);
    await client.close();
    const ours = (spy: typeof stderr) => spy.mock.calls.map((call) => String(call[0])).filter((text) => text.includes("mcpulse"));
    expect(ours(stderr)).toEqual([]);
    expect(ours(stdout)).toEqual([]);
  });
});
