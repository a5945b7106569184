// A real MCP client against a real server over InMemoryTransport, for McpServer and Server of the
// 1.x and 2.x SDKs: every outcome and is_empty case exactly once, answers unchanged, startups.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { McpServer as McpServerV2, Server as ServerV2 } from "@modelcontextprotocol/server";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { watch } from "../../src/sdk/index.ts";
import { setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { argsHash, descriptionHash, descriptionNorm, schemaHash } from "../../src/shared/index.ts";
import { invalidPayloads, startCaptureServer, type CaptureServer } from "./helpers/capture-server.ts";
import {
  CANARY_ARG,
  CANARY_DESCRIPTION,
  CANARY_RESULT,
  DISABLED_TOOL,
  FLAVOURS,
  OUTPUT_SCHEMA_TOOL,
  TOOLS,
  TYPED_TOOL,
  buildServer,
  callAndCapture,
  connectInMemory,
  isMcp,
  scenario,
  type ClientLike,
} from "./helpers/fixtures.ts";

let capture: CaptureServer;
let keyCounter = 0;
/** A fresh destination per test: payloads of one test never mix with another's. */
const freshKey = () => `mp_live_servers_${++keyCounter}_${Date.now()}`;
const byKey = (key: string) => capture.requests.filter((r) => r.headers.authorization === `Bearer ${key}`).flatMap((r) => r.batch);

async function payloadsFor(key: string, count: number, type?: string): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const found = byKey(key).filter((p) => type === undefined || p.type === type);
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  capture = await startCaptureServer();
  setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
});
afterAll(async () => {
  setTransportOverridesForTests({});
  // No body ever sent carries arguments, results or descriptions (rule 3).
  for (const request of capture.requests) {
    for (const canary of [CANARY_ARG, CANARY_RESULT, CANARY_DESCRIPTION]) expect(request.body).not.toContain(canary);
  }
  expect(invalidPayloads(capture.payloads())).toEqual([]);
  await capture.close();
});

describe.each(FLAVOURS)("%s over InMemoryTransport", (flavour) => {
  test("every outcome and is_empty case, exactly one call payload each, answers unchanged", async () => {
    const key = freshKey();
    const unwatched = await connectInMemory(flavour, buildServer(flavour));
    const watchedServer = buildServer(flavour);
    expect(watch(watchedServer, { key, endpoint: capture.url })).toBe(watchedServer);
    const watched = await connectInMemory(flavour, watchedServer);
    const calls = scenario(flavour);
    const answers: unknown[] = [];
    for (const call of calls) {
      const expected = await callAndCapture(unwatched, call.name, call.args);
      const actual = await callAndCapture(watched, call.name, call.args);
      expect(actual).toEqual(expected);
      answers.push(actual);
    }
    const payloads = await payloadsFor(key, calls.length, "call");
    expect(payloads).toHaveLength(calls.length);
    const sessionIds = new Set(byKey(key).map((p) => p.session_id));
    expect(sessionIds.size).toBe(1);
    calls.forEach((call, index) => {
      const payload = payloads[index]!;
      expect({ tool: payload.tool_name, outcome: payload.outcome, is_empty: payload.is_empty }).toEqual({
        tool: call.name,
        outcome: call.outcome,
        is_empty: call.is_empty,
      });
      expect(payload.client_name).toBe("fixture-client");
      expect(payload.args_hash).toBe(argsHash(call.args));
      // The length of the JSON the client received; 0 when it received an error instead.
      const answer = answers[index] as { result?: unknown };
      expect(payload.response_bytes).toBe(answer.result === undefined ? 0 : JSON.stringify(answer.result).length);
      expect(Number.isInteger(payload.duration_ms)).toBe(true);
      expect(Date.parse(payload.started_at as string)).toBeGreaterThan(Date.now() - 60_000);
    });
    await unwatched.close();
    await watched.close();
  });

  test("the startup after initialize lists the server's own tools/list with hashes, never text", async () => {
    const key = freshKey();
    const server = watch(buildServer(flavour), {
      key,
      endpoint: capture.url,
      policy: { answer: { requires_authorization: true } },
      agree: { total: { answer: "secret.path.in.result", zero: "another.secret" } },
    });
    const client = await connectInMemory(flavour, server, "startup-client");
    const listed = (await client.listTools()) as { tools: { name: string; description?: string; inputSchema: unknown }[] };
    const [startup] = await payloadsFor(key, 1, "startup");
    expect(startup).toBeDefined();
    expect(startup).toMatchObject({
      v: 1,
      type: "startup",
      client_name: "startup-client",
      sdk: "mcpulse-edge-ts/0.1.0",
      mcp_sdk_version: flavour.startsWith("v1") ? "1.32.2" : "2.4.0",
      transport: "unknown",
      agree_declared: [{ field: "total", tools: ["answer", "zero"] }],
    });
    expect(startup!.protocol_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(JSON.stringify(startup)).not.toContain("secret.path");
    const tools = startup!.tools as Record<string, unknown>[];
    expect(tools.map((tool) => tool.name)).toEqual(listed.tools.map((tool) => tool.name));
    for (const [index, tool] of listed.tools.entries()) {
      expect(tools[index]).toEqual({
        name: tool.name,
        schema_bytes: JSON.stringify(tool).length,
        schema_hash: schemaHash(tool.inputSchema),
        description_hash: descriptionHash(tool.description ?? ""),
        description_norm: descriptionNorm(tool.description ?? ""),
        policy: tool.name === "answer" ? { requires_authorization: true, requires_verified_identity: false } : null,
      });
    }
    await client.close();
  });

  test("a cancelled call is recorded once and the client sees its own cancellation", async () => {
    const key = freshKey();
    const client = await connectInMemory(flavour, watch(buildServer(flavour), { key, endpoint: capture.url }));
    const controller = new AbortController();
    const pending = callAndCapture(client, "wait_for_cancel", {}, { signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort("user gave up");
    const answer = (await pending) as { error?: unknown };
    expect(answer.error).toBeDefined();
    await client.callTool("zero", {}); // a later call, so a second payload for the first would show
    const calls = await payloadsFor(key, 2, "call");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(byKey(key).filter((p) => p.type === "call").map((p) => [p.tool_name, p.outcome])).toEqual([
      ["wait_for_cancel", "crashed"],
      ["zero", "ok"],
    ]);
    expect(calls[0]!.response_bytes).toBe(0);
    await client.close();
  });

  test("args_hash is over the arguments as the request carried them, before validation", async () => {
    const key = freshKey();
    const client = await connectInMemory(flavour, watch(buildServer(flavour), { key, endpoint: capture.url }));
    const carried = { query: "orders", unexpected: { nested: [1, "two"] }, limit: 25 };
    await client.callTool(TYPED_TOOL, carried);
    await client.callTool("zero", undefined);
    const calls = await payloadsFor(key, 2, "call");
    expect(calls[0]!.args_hash).toBe(argsHash(carried));
    expect(calls[0]!.args_hash).not.toBe(argsHash({ query: "orders", limit: 25 }));
    expect(calls[1]!.args_hash).toBe("44136fa355b3"); // absent arguments hash as {}
    await client.close();
  });

  // McpServer hands its callback a validated copy; a low-level handler gets the request itself.
  test.skipIf(isMcp(flavour))("args_hash is of the arguments as they came in, even when the handler changes them", async () => {
    const key = freshKey();
    const server = buildServer(flavour) as { _requestHandlers: Map<string, (request: { params: { arguments?: Record<string, unknown> } }, extra: unknown) => unknown> };
    const original = server._requestHandlers.get("tools/call")!;
    server._requestHandlers.set("tools/call", (request, extra) => {
      const args = request.params.arguments!;
      args.query = "changed by the handler";
      args.added = [1, 2];
      return original(request, extra);
    });
    const client = await connectInMemory(flavour, watch(server, { key, endpoint: capture.url }));
    const carried = { query: "orders", limit: 25 };
    await client.callTool(TYPED_TOOL, { ...carried });
    const calls = await payloadsFor(key, 1, "call");
    expect(calls[0]!.args_hash).toBe(argsHash(carried));
    await client.close();
  });

  test("a second watch() of the same object does nothing", async () => {
    const key = freshKey();
    const server = buildServer(flavour);
    watch(server, { key, endpoint: capture.url });
    watch(server, { key, endpoint: capture.url });
    watch(server, { key: freshKey(), endpoint: capture.url });
    if (isMcp(flavour)) watch((server as { server: unknown }).server, { key, endpoint: capture.url });
    const client = await connectInMemory(flavour, server);
    await client.callTool("answer", {});
    await client.callTool("throws", {}).catch(() => undefined);
    await payloadsFor(key, 2, "call");
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(byKey(key).filter((p) => p.type === "call").map((p) => p.outcome)).toEqual(["ok", "crashed"]);
    expect(byKey(key).filter((p) => p.type === "startup")).toHaveLength(1);
    await client.close();
  });
});

describe.each(["v1", "v2"] as const)("McpServer %s: tools changed after watch()", (major) => {
  test("registered after, updated, renamed, disabled and removed tools are all covered", async () => {
    const key = freshKey();
    const server =
      major === "v1" ? new McpServerV1({ name: "late", version: "1.0.0" }, { capabilities: { tools: {} } }) : new McpServerV2({ name: "late", version: "1.0.0" }, { capabilities: { tools: {} } });
    watch(server, { key, endpoint: capture.url });
    const register = server.registerTool.bind(server) as (
      name: string,
      config: object,
      cb: (...args: unknown[]) => unknown,
    ) => { update(u: object): void; disable(): void; remove(): void };
    const client: ClientLike = await connectInMemory(major === "v1" ? "v1-mcp" : "v2-mcp", server);
    const late = register("late", { description: "Registered after watch()" }, () => ({ content: [{ type: "text", text: "hi" }] }));
    const typed = register("typed", { description: "Typed", inputSchema: { n: z.number() } }, () => ({ content: [{ type: "text", text: "n" }] }));
    await client.callTool("late", {});
    late.update({ callback: () => { throw new Error("now broken"); } });
    await client.callTool("late", {});
    late.update({ callback: () => ({ content: [{ type: "text", text: "bad" }], isError: true }) });
    await client.callTool("late", {});
    late.update({ name: "renamed" });
    await client.callTool("renamed", {});
    await callAndCapture(client, "late", {});
    typed.update({ callback: () => { throw new Error("typed broke"); } });
    await client.callTool("typed", { n: 1 });
    await client.callTool("typed", { n: "x" }).catch(() => undefined);
    // 1.x takes a raw shape here, 2.x a Standard Schema.
    typed.update({ paramsSchema: major === "v1" ? { s: z.string() } : z.object({ s: z.string() }), callback: () => ({ content: [] }) });
    await client.callTool("typed", { s: "x" });
    late.disable();
    await callAndCapture(client, "renamed", {});
    late.remove();
    await callAndCapture(client, "renamed", {});
    const expected = [
      ["late", "ok"],
      ["late", "crashed"],
      ["late", "tool_error"],
      ["renamed", "tool_error"],
      ["late", "bad_args"],
      ["typed", "crashed"],
      ["typed", "bad_args"],
      ["typed", "ok"],
      ["renamed", "bad_args"],
      ["renamed", "bad_args"],
    ];
    const calls = await payloadsFor(key, expected.length, "call");
    expect(calls.map((p) => [p.tool_name, p.outcome])).toEqual(expected);
    expect(calls[7]!.is_empty).toBe(true);
    await client.close();
  });
});

describe("anything else", () => {
  test("is returned untouched", () => {
    for (const value of [undefined, null, 42, "server", { connect() {} }, { _requestHandlers: new Map() }, new Map()]) {
      const before = value && typeof value === "object" ? JSON.stringify(Object.keys(value)) : undefined;
      expect(watch(value, { key: "mp_live_x", endpoint: capture.url })).toBe(value);
      if (before !== undefined) expect(JSON.stringify(Object.keys(value as object))).toBe(before);
    }
  });

  test("invalid options leave a real server untouched", () => {
    for (const options of [undefined, null, {}, { key: " " }, { key: "k", enabled: false }, { key: "k", endpoint: 3 }, "mp_live_x"]) {
      const server = buildServer("v1-mcp") as { server: { _requestHandlers: Map<string, unknown> } };
      const handlers = server.server._requestHandlers;
      const callHandler = handlers.get("tools/call");
      expect(watch(server, options as never)).toBe(server);
      expect(Object.hasOwn(handlers, "set")).toBe(false);
      expect(handlers.get("tools/call")).toBe(callHandler);
    }
  });
});

test("agreement: verdicts only, values compared in-process within the window", async () => {
  const key = freshKey();
  const server = new McpServerV1({ name: "agree", version: "1.0.0" });
  const values: Record<string, unknown> = { global: 25.22, pillars: "25.220", snapshot: 30 };
  for (const name of Object.keys(values)) {
    server.registerTool(name, { description: name }, () => ({
      content: [{ type: "text", text: JSON.stringify({ data: { liquidity: values[name] } }) }],
    }));
  }
  watch(server, { key, endpoint: capture.url, agree: { global_liquidity: { global: "data.liquidity", pillars: "data.liquidity", snapshot: "data.liquidity" } }, agreeWindowMs: 60_000 });
  const client = await connectInMemory("v1-mcp", server);
  await client.callTool("global", {});
  await client.callTool("pillars", {});
  await client.callTool("snapshot", {});
  const verdicts = await payloadsFor(key, 3, "agreement");
  expect(verdicts.map((v) => [v.field, v.tool_a, v.tool_b, v.agreed, v.window_ms])).toEqual([
    ["global_liquidity", "global", "pillars", true, 60_000],
    ["global_liquidity", "global", "snapshot", false, 60_000],
    ["global_liquidity", "pillars", "snapshot", false, 60_000],
  ]);
  for (const verdict of verdicts) {
    expect(Object.keys(verdict).sort()).toEqual(["agreed", "checked_at", "field", "session_id", "tool_a", "tool_b", "type", "v", "window_ms"]);
  }
  const bodies = capture.requests.filter((r) => r.headers.authorization === `Bearer ${key}`).map((r) => r.body).join("");
  expect(bodies).not.toContain("25.22");
  expect(bodies).not.toContain("data.liquidity");
  await client.close();
});

test("a tool with no callback function to wrap (a task tool's handler object) is judged by its answer", async () => {
  const key = freshKey();
  const server = new McpServerV1({ name: "tasks", version: "1.0.0" });
  server.registerTool("task_tool", { description: "A task tool" }, () => ({ content: [] }));
  // What registerToolTask leaves behind: a handler object, not a function.
  (server as unknown as { _registeredTools: Record<string, { handler: unknown }> })._registeredTools.task_tool!.handler = {
    createTask: () => ({ task: { taskId: "t" } }),
  };
  watch(server, { key, endpoint: capture.url });
  const client = await connectInMemory("v1-mcp", server);
  const answer = (await callAndCapture(client, "task_tool", {})) as { result?: { isError?: boolean } };
  expect(answer.result?.isError).toBe(true); // 1.32: no task store for a plain call
  const [call] = await payloadsFor(key, 1, "call");
  // Not bad_args: nothing says the arguments were wrong; the answer is an error result.
  expect(call!.outcome).toBe("tool_error");
  await client.close();
});

describe.each(FLAVOURS)("%s watched after the client connected", (flavour) => {
  test("the missed initialize's startup is sent at watch(), and calls carry the known client", async () => {
    const key = freshKey();
    const server = buildServer(flavour);
    const client = await connectInMemory(flavour, server, "early-client");
    watch(server, { key, endpoint: capture.url });
    await client.callTool("answer", {});
    const [call] = await payloadsFor(key, 1, "call");
    const [startup] = await payloadsFor(key, 1, "startup");
    expect(call).toMatchObject({ tool_name: "answer", outcome: "ok", client_name: "early-client" });
    expect(startup).toMatchObject({ client_name: "early-client", transport: "unknown" });
    // 2.x keeps the negotiated version on the server; 1.x keeps it nowhere, so it is unknown.
    if (flavour.startsWith("v2")) expect(startup!.protocol_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    else expect(startup!.protocol_version).toBeNull();
    await client.close();
  });
});

describe("handlers installed after watch()", () => {
  test.each(["v1", "v2"] as const)("McpServer %s: the first registerTool installs tools/call through the hooked Map", async (major) => {
    const key = freshKey();
    const server = major === "v1" ? new McpServerV1({ name: "late", version: "1" }) : new McpServerV2({ name: "late", version: "1" });
    watch(server, { key, endpoint: capture.url });
    const handlers = (server as unknown as { server: { _requestHandlers: Map<string, unknown> } }).server._requestHandlers;
    expect(handlers.has("tools/call")).toBe(false);
    const register = server.registerTool.bind(server) as (name: string, config: object, cb: () => unknown) => void;
    register("first", { description: "first" }, () => {
      throw new Error("x");
    });
    const client = await connectInMemory(major === "v1" ? "v1-mcp" : "v2-mcp", server);
    await client.callTool("first", {});
    const [call] = await payloadsFor(key, 1, "call");
    expect(call).toMatchObject({ tool_name: "first", outcome: "crashed" });
    await client.close();
  });

  test.each(["v1-server", "v2-server"] as const)("%s: setRequestHandler after watch() is wrapped too", async (flavour) => {
    const key = freshKey();
    const built = buildServer(flavour);
    watch(built, { key, endpoint: capture.url });
    // Replace the tools/call handler through the public API once watch() has run.
    const replacement = async () => ({ content: [{ type: "text" as const, text: "replaced" }], isError: true });
    if (flavour === "v1-server") (built as ServerV1).setRequestHandler(CallToolRequestSchema, replacement);
    else (built as ServerV2).setRequestHandler("tools/call", replacement);
    const client = await connectInMemory(flavour, built);
    expect(await callAndCapture(client, "answer", {})).toMatchObject({ result: { content: [{ text: "replaced" }], isError: true } });
    const [call] = await payloadsFor(key, 1, "call");
    expect(call).toMatchObject({ tool_name: "answer", outcome: "tool_error" });
    await client.close();
  });
});
