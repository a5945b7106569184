// An independent conformance review of the producer SDK against SPEC §1.2, §1.3 and §4: real MCP
// clients (@modelcontextprotocol/sdk 1.17 and 1.32, @modelcontextprotocol/client 2.4) call watched servers,
// every JSON-RPC message is recorded as it crossed the transport, a node:http recorder stands in
// for the ingest, and each payload is compared field by field with what the SPEC's words give
// for that wire traffic. Hashes are recomputed from the SPEC's algorithm with node:crypto
// (conformance/spec-algorithms.ts); only description_norm, a long algorithm with its own suite in
// test/shared, comes from src/shared (and its SPEC example is checked by value here).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { watch } from "../../src/sdk/index.ts";
import { allDestinations, setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { descriptionNorm } from "../../src/shared/description.ts";
import { payloadSchema } from "../../src/shared/index.ts";
import { startIngestRecorder, type IngestRecorder } from "./conformance/ingest-recorder.ts";
import { buildLowLevelServer, buildMcpServer, lowLevelServerCases, mcpServerCases, type Case } from "./conformance/servers.ts";
import { hex12, jcs, jsonLength, specArgsHash } from "./conformance/spec-algorithms.ts";
import { connectHttpTapped, connectTapped, type JsonRpc, type Wire } from "./conformance/wire.ts";

const SESSION_ID = /^s_[0-9a-f]{12}$/;
const ISO_UTC_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/;
const installedVersion = (name: string) =>
  (JSON.parse(readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), "utf8")) as { version: string }).version;
// The version of the package each server is built from, read here from its own package.json: the
// 1.17 server runs beside 1.32 (an npm alias), so it must report 1.17.x, not this repo's 1.32.
const MCP_SDK_VERSION = {
  1: installedVersion("@modelcontextprotocol/sdk"),
  "1.17": installedVersion("@modelcontextprotocol/sdk-1-17"),
  2: installedVersion("@modelcontextprotocol/server"),
} as const;

let ingest: IngestRecorder;
let keyCounter = 0;
const freshKey = (label: string) => `mp_live_conformance_${label}_${++keyCounter}`;

beforeAll(async () => {
  ingest = await startIngestRecorder();
  // Only the 5-second interval is shortened (an internal hook, applied to destinations created
  // while it is set); the 30-payload rule is checked with the real defaults below.
  setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
});
afterAll(async () => {
  setTransportOverridesForTests({});
  // Every request is POST {endpoint}/v1/ingest, JSON, bearer key, body {"batch": [...]} (§1.1),
  // and every payload passes the schema the worker validates with (§1.2).
  for (const request of ingest.requests) {
    expect({ method: request.method, path: request.path, contentType: request.contentType }).toEqual({
      method: "POST",
      path: "/v1/ingest",
      contentType: "application/json",
    });
    expect(request.authorization).toMatch(/^Bearer mp_live_conformance_/);
    const body = JSON.parse(request.body) as { batch: unknown[] };
    expect(Object.keys(body)).toEqual(["batch"]);
    for (const payload of body.batch) expect(payloadSchema.safeParse(payload).success).toBe(true);
  }
  await ingest.close();
});

/** The startup SPEC §4 describes for a tools/list answer seen on the wire. */
function expectedStartup(wireTools: Record<string, unknown>[], fields: Record<string, unknown>): Record<string, unknown> {
  return {
    v: 1,
    type: "startup",
    session_id: expect.stringMatching(SESSION_ID),
    tools: wireTools.map((tool) => {
      const description = typeof tool.description === "string" ? tool.description : "";
      return {
        name: tool.name,
        // UTF-16 length of the whole tool entry as tools/list returns it.
        schema_bytes: jsonLength(tool),
        schema_hash: hex12(jcs(tool.inputSchema ?? {})),
        // The exact text, "" when there is none.
        description_hash: hex12(description),
        description_norm: descriptionNorm(description),
        policy: null,
      };
    }),
    sdk: expect.any(String),
    agree_declared: [],
    ...fields,
  };
}

/** The call SPEC §4 describes for one tools/call request and the response the server sent. */
function expectedCall(
  wire: Wire,
  request: JsonRpc,
  expected: Case,
  clientName: string,
  sessionId: unknown = expect.stringMatching(SESSION_ID),
  facts: Record<string, unknown> = {},
): Record<string, unknown> {
  const response = wire.responseTo(request);
  return {
    v: 1,
    type: "call",
    session_id: sessionId,
    client_name: clientName,
    tool_name: expected.tool,
    started_at: expect.stringMatching(ISO_UTC_MS),
    duration_ms: expect.any(Number),
    outcome: expected.outcome,
    // The result's JSON as sent; 0 when the client received an error instead.
    response_bytes: response.result !== undefined ? jsonLength(response.result) : 0,
    is_empty: expected.is_empty,
    // Over the arguments exactly as the request carried them; absent → {}.
    args_hash: specArgsHash(request.params?.arguments),
    // The descriptive facts (SPEC §1.2): what the test's client and server named themselves as.
    client_version: null,
    server_version: null,
    protocol_version: null,
    session_kind: "none",
    transport: "unknown",
    ...facts,
  };
}

const flavours = [
  { label: "1.17 McpServer", major: "1.17", build: () => buildMcpServer("1.17"), cases: mcpServerCases },
  { label: "1.32 McpServer", major: 1, build: () => buildMcpServer(1), cases: mcpServerCases },
  { label: "2.4 McpServer", major: 2, build: () => buildMcpServer(2), cases: mcpServerCases },
  { label: "1.17 Server", major: "1.17", build: () => buildLowLevelServer("1.17"), cases: lowLevelServerCases },
  { label: "1.32 Server", major: 1, build: () => buildLowLevelServer(1), cases: lowLevelServerCases },
  { label: "2.4 Server", major: 2, build: () => buildLowLevelServer(2), cases: lowLevelServerCases },
] as const;

describe.each(flavours)("$label over InMemoryTransport", ({ label, major, build, cases }) => {
  test("startup and one call payload per tools/call, field by field against the wire", async () => {
    const key = freshKey(`mem${major}`);
    const before = Date.now();
    const server = build();
    expect(watch(server, { key, endpoint: ingest.url })).toBe(server);
    const client = await connectTapped(major, server, "conformance-client");
    await client.listTools();
    for (const step of cases()) await client.call(step.tool, step.args);
    const after = Date.now();
    await client.close();
    const { wire } = client;

    const [startup, ...extraStartups] = await ingest.waitFor(key, 1, "startup");
    expect(extraStartups).toEqual([]); // one initialize, one startup
    const listed = wire.responseTo(wire.requests("tools/list")[0]!).result!.tools as Record<string, unknown>[];
    const initialized = wire.responseTo(wire.requests("initialize")[0]!).result!;
    expect(startup).toEqual(
      expectedStartup(listed, {
        client_name: "conformance-client",
        mcp_sdk_version: MCP_SDK_VERSION[major],
        transport: "unknown", // InMemoryTransport is none of stdio, streamable HTTP, SSE
        protocol_version: initialized.protocolVersion,
      }),
    );
    const sdk = startup!.sdk as string;
    expect(sdk.length).toBeGreaterThan(0);
    expect(sdk.length).toBeLessThanOrEqual(64);

    const steps = cases();
    const calls = await ingest.waitFor(key, steps.length, "call");
    expect(calls).toHaveLength(steps.length);
    const requests = wire.requests("tools/call");
    steps.forEach((step, index) => {
      const request = requests[index]!;
      // The client put exactly the test's arguments on the wire (or none).
      expect(request.params?.arguments).toEqual(step.args);
      const facts = {
        client_version: "1.0.0", // connectTapped's clientInfo
        server_version: String(label).endsWith("McpServer") ? "3.1.4" : "0.0.1", // the conformance servers' serverInfo
        protocol_version: initialized.protocolVersion,
        session_kind: "connection", // one in-memory connection, no transport session
        transport: "unknown",
      };
      expect({ index, ...calls[index] }).toEqual({ index, ...expectedCall(wire, request, step, "conformance-client", undefined, facts) });
      const startedAt = Date.parse(calls[index]!.started_at as string);
      expect(startedAt).toBeGreaterThanOrEqual(before);
      expect(startedAt).toBeLessThanOrEqual(after);
      expect(Number.isInteger(calls[index]!.duration_ms)).toBe(true);
      expect(calls[index]!.duration_ms).toBeGreaterThanOrEqual(0);
    });
    // One session per process and destination: the startup and every call share it.
    expect(new Set([startup, ...calls].map((payload) => payload!.session_id)).size).toBe(1);
  });
});

test("SPEC §1.3 fixtures hold for the values the SDK sends", async () => {
  const key = freshKey("fixtures");
  const client = await connectTapped(1, watch(buildMcpServer(1), { key, endpoint: ingest.url }), "fixture-client");
  await client.call("prose", undefined);
  await client.call("prose", { query: "quarterly revenue", limit: 25, filters: { region: "EMEA", active: true } });
  await client.call("prose", null);
  await client.close();
  const [startup] = await ingest.waitFor(key, 1, "startup");
  const prose = (startup!.tools as Record<string, unknown>[]).find((tool) => tool.name === "prose")!;
  expect(prose.description_norm).toBe("e4b08657b65c"); // "Search for threads in the user's mailbox"
  const noDescription = (startup!.tools as Record<string, unknown>[]).find((tool) => tool.name === "no_parts")!;
  expect(noDescription.description_hash).toBe("e3b0c44298fc"); // SHA-256 of ""
  const calls = await ingest.waitFor(key, 2, "call");
  expect(calls[0]!.args_hash).toBe("44136fa355b3"); // absent arguments hash as {}
  expect(calls[1]!.args_hash).toBe("52a4fe5fc814"); // the "realistic call" fixture
  // `null` arguments are a value, not absent — if the client lets them through at all.
  const nullRequest = client.wire.requests("tools/call")[2];
  if (nullRequest && nullRequest.params?.arguments === null) expect(calls[2]?.args_hash).toBe(hex12("null"));
});

describe("client_name", () => {
  test("a client that gives no name is \"unknown\"", async () => {
    const key = freshKey("noname");
    const client = await connectTapped(1, watch(buildMcpServer(1), { key, endpoint: ingest.url }), "");
    await client.call("prose", {});
    await client.close();
    const [call] = await ingest.waitFor(key, 1, "call");
    const [startup] = await ingest.waitFor(key, 1, "startup");
    expect(call!.client_name).toBe("unknown");
    expect(startup!.client_name).toBe("unknown");
  });

  test.each([
    ["just under", 127],
    ["at", 128],
    ["just over", 129],
  ])("a name %s 128 characters is cut to 128 (%i)", async (_label, length) => {
    const key = freshKey(`name${length}`);
    const name = "n".repeat(length - 1) + "é";
    const client = await connectTapped(2, watch(buildMcpServer(2), { key, endpoint: ingest.url }), name);
    await client.call("prose", {});
    await client.close();
    const [call] = await ingest.waitFor(key, 1, "call");
    expect(call!.client_name).toBe(name.slice(0, 128));
  });

  test("the cut counts code points (SPEC §1.2): 130 emoji keep 128 whole emoji, never half a pair", async () => {
    const key = freshKey("emoji");
    const name = "😀".repeat(130);
    const client = await connectTapped(2, watch(buildMcpServer(2), { key, endpoint: ingest.url }), name);
    await client.call("prose", {});
    await client.close();
    const [call] = await ingest.waitFor(key, 1, "call");
    expect(call!.client_name).toBe("😀".repeat(128));
    expect(payloadSchema.safeParse(call).success).toBe(true);
  });
});

describe("client_name on each transport and protocol revision (docs/sdk.md)", () => {
  test("one connection (InMemory, stdio), 2025 revisions, 1.17 / 1.32 / 2.4: the connection's initialize", async () => {
    for (const generation of ["1.17", 1, 2] as const) {
      const key = freshKey(`conn${generation}`);
      const client = await connectTapped(generation, watch(buildMcpServer(generation), { key, endpoint: ingest.url }), `conn-${generation}`);
      await client.call("prose", {});
      await client.close();
      expect(client.wire.requests("initialize")).toHaveLength(1);
      const [call] = await ingest.waitFor(key, 1, "call");
      expect(call!.client_name).toBe(`conn-${generation}`);
    }
  });

  const post = (handler: { fetch(request: Request): Promise<Response> }, body: unknown, protocolVersion: string) =>
    handler.fetch(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": protocolVersion },
        body: JSON.stringify(body),
      }),
    );

  test("stateless streamable HTTP, a 2025-revision request that carries client information in _meta: named by it", async () => {
    const key = freshKey("stateless-meta");
    const handler = createMcpHandler(() => watch(buildMcpServer(2), { key, endpoint: ingest.url }) as never);
    const clientInfo = { "io.modelcontextprotocol/clientInfo": { name: "self-naming", version: "1" } };
    const response = await post(handler, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "prose", arguments: {}, _meta: clientInfo } }, "2025-11-25");
    expect(response.status).toBe(200);
    await response.text();
    const [call] = await ingest.waitFor(key, 1, "call");
    expect(call!.client_name).toBe("self-naming");
  });

  test("stateless streamable HTTP, a 2025-revision request without client information: \"unknown\" (nothing in it names a client)", async () => {
    const key = freshKey("stateless-bare");
    const handler = createMcpHandler(() => watch(buildMcpServer(2), { key, endpoint: ingest.url }) as never);
    // Another client's initialize just before, on another fresh server: never borrowed.
    const init = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "someone-else", version: "1" } };
    await (await post(handler, { jsonrpc: "2.0", id: 0, method: "initialize", params: init }, "2025-11-25")).text();
    const response = await post(handler, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "prose", arguments: {} } }, "2025-11-25");
    await response.text();
    const [call] = await ingest.waitFor(key, 1, "call");
    expect(call!.client_name).toBe("unknown");
    // The initialize's own startup names its client; one HTTP request cannot carry an initialize
    // beside a tools/call (the MCP SDKs answer such a batch 400), so no call can take its name.
    const [startup] = await ingest.waitFor(key, 1, "startup");
    expect(startup!.client_name).toBe("someone-else");
    const batch = await post(
      handler,
      [
        { jsonrpc: "2.0", id: 2, method: "initialize", params: init },
        { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "prose", arguments: {} } },
      ],
      "2025-03-26",
    );
    expect(batch.status).toBe(400);
  });
});

describe("2.4 streamable HTTP, a fresh watched server per request (createMcpHandler)", () => {
  const handlerFor = (key: string) => createMcpHandler(() => watch(buildMcpServer(2), { key, endpoint: ingest.url }) as never);

  test("revision 2026-07-28 (no initialize): startup at the first named request; sizes as sent on the wire", async () => {
    const key = freshKey("modern");
    const handler = handlerFor(key);
    const name = "m".repeat(140);
    const client = await connectHttpTapped((request) => handler.fetch(request), name, {
      versionNegotiation: { mode: { pin: "2026-07-28" } },
    });
    expect(client.wire.requests("initialize")).toEqual([]);
    await client.listTools();
    const steps = mcpServerCases().filter((step) => ["prose", "empty_list", "refuses", "with_meta", "structured_count_zero", "no_such_tool", "lookup"].includes(step.tool));
    for (const step of steps) await client.call(step.tool, step.args);
    await client.close();
    const { wire } = client;

    const calls = await ingest.waitFor(key, steps.length, "call");
    const requests = wire.requests("tools/call");
    steps.forEach((step, index) => {
      // The wire result carries what the 2.x encoder adds on this revision (resultType, _meta).
      const response = wire.responseTo(requests[index]!);
      if (response.result) expect(response.result.resultType).toBe("complete");
      // No conversation id in _meta and no transport session: no session is known (SPEC §4 case 5).
      expect({ index, ...calls[index] }).toEqual({
        index,
        ...expectedCall(wire, requests[index]!, step, name.slice(0, 128), "", {
          client_version: "1.0.0", // sent with every request on this revision
          server_version: "3.1.4",
          protocol_version: "2026-07-28",
          session_kind: "none",
          transport: "http",
        }),
      });
    });
    const startups = ingest.payloadsOf(key).filter((payload) => payload.type === "startup");
    expect(startups).toHaveLength(1); // once per client, process and destination, under the process's id
    const listed = wire.responseTo(wire.requests("tools/list")[0]!).result!.tools as Record<string, unknown>[];
    expect(startups[0]).toEqual(
      expectedStartup(listed, {
        client_name: name.slice(0, 128),
        mcp_sdk_version: MCP_SDK_VERSION[2],
        transport: "http",
        protocol_version: "2026-07-28",
      }),
    );
  });

  test("a 2025-era client: the startup after its initialize carries the negotiated version", async () => {
    const key = freshKey("legacy");
    const handler = handlerFor(key);
    const client = await connectHttpTapped((request) => handler.fetch(request), "legacy-client");
    await client.listTools();
    await client.call("prose", { a: 1 });
    await client.close();
    const { wire } = client;
    const [startup] = await ingest.waitFor(key, 1, "startup");
    const listed = wire.responseTo(wire.requests("tools/list")[0]!).result!.tools as Record<string, unknown>[];
    expect(startup).toEqual(
      expectedStartup(listed, {
        client_name: "legacy-client",
        mcp_sdk_version: MCP_SDK_VERSION[2],
        transport: "http",
        protocol_version: wire.responseTo(wire.requests("initialize")[0]!).result!.protocolVersion,
      }),
    );
    // Stateless: the call's request names no client and belongs to no session.
    const [call] = await ingest.waitFor(key, 1, "call");
    expect(call).toEqual(
      expectedCall(wire, wire.requests("tools/call")[0]!, { tool: "prose", outcome: "ok", is_empty: false }, "unknown", "", {
        // A fresh server object per request: this one saw no initialize, so neither the client's
        // version nor a negotiated revision is known to it.
        server_version: "3.1.4",
        session_kind: "none",
        transport: "http",
      }),
    );
  });
});

describe("options", () => {
  /** A watched server is instrumented iff its tools/call handler was replaced. */
  const instrumented = (server: unknown, handlerBefore: unknown) =>
    (server as { _requestHandlers: Map<string, unknown> })._requestHandlers.get("tools/call") !== handlerBefore;

  test.each([
    ["a blank key", { key: "" }],
    ["a whitespace-only key", { key: " \t\n " }],
    ["no key", {}],
    ["a key that is not a string", { key: 42 }],
    ["enabled: false", { key: "mp_live_conformance_off", enabled: false }],
    ["an endpoint that is not an http(s) URL", { key: "mp_live_conformance_bad_endpoint", endpoint: "ftp://127.0.0.1" }],
    ["no endpoint (there is no default host)", { key: "mp_live_conformance_no_endpoint", endpoint: undefined }],
    ["an endpoint without a scheme", { key: "mp_live_conformance_bare_endpoint", endpoint: "127.0.0.1:8787" }],
    ["options that are not an object", "mp_live_conformance_string"],
    ["null options", null],
  ])("%s: the server is returned untouched and nothing is sent", async (_label, options) => {
    const server = buildLowLevelServer(1);
    const handlerBefore = (server as { _requestHandlers: Map<string, unknown> })._requestHandlers.get("tools/call");
    const requestsBefore = ingest.requests.length;
    const stderr = vi.spyOn(process.stderr, "write");
    try {
      const withEndpoint = options !== null && typeof options === "object" && !("endpoint" in options) ? { ...options, endpoint: ingest.url } : options;
      expect(watch(server, withEndpoint as never)).toBe(server);
      expect(instrumented(server, handlerBefore)).toBe(false);
      // Silently: debug is off, so not a line.
      expect(stderr).not.toHaveBeenCalled();
    } finally {
      stderr.mockRestore();
    }
    const client = await connectTapped(1, server, "nobody");
    await client.call("prose", {});
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ingest.requests.length).toBe(requestsBefore);
  });

  test("invalid options with debug on: one debug line, on stderr", () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    const stdout = vi.spyOn(process.stdout, "write");
    try {
      watch(buildLowLevelServer(1), { key: "   ", endpoint: ingest.url, debug: true });
      expect(stderr).toHaveBeenCalledTimes(1);
      expect(stdout).not.toHaveBeenCalled();
    } finally {
      stderr.mockRestore();
      stdout.mockRestore();
    }
  });

  test("no endpoint with debug on: disabled with one debug line naming the endpoint, nothing sent anywhere", async () => {
    const stderrLines: string[] = [];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk: unknown) => {
      stderrLines.push(String(chunk));
      return true;
    });
    const server = buildMcpServer(1) as { server: { _requestHandlers: Map<string, unknown> } };
    const handlerBefore = server.server._requestHandlers.get("tools/call");
    try {
      expect(watch(server, { key: "mp_live_conformance_no_endpoint_debug", endpoint: undefined, debug: true })).toBe(server);
    } finally {
      stderr.mockRestore();
    }
    expect(stderrLines).toHaveLength(1);
    expect(stderrLines[0]).toMatch(/endpoint/);
    expect(instrumented(server.server, handlerBefore)).toBe(false);
  });

  test("a trailing slash is ignored, also in the destination's identity", async () => {
    const key = freshKey("slash");
    const first = await connectTapped(1, watch(buildLowLevelServer(1), { key, endpoint: ingest.url }), "first");
    const second = await connectTapped(2, watch(buildLowLevelServer(2), { key, endpoint: `${ingest.url}/` }), "second");
    await first.call("prose", {});
    await second.call("prose", {});
    await Promise.all([first.close(), second.close()]);
    const payloads = await ingest.waitFor(key, 4);
    expect(payloads).toHaveLength(4);
    // One destination (one buffer) for both spellings; two connections, two conversations.
    expect(allDestinations().filter((destination) => destination.key === key)).toHaveLength(1);
    expect(new Set(payloads.map((payload) => payload.session_id)).size).toBe(2);
    const paths = ingest.requests.filter((request) => request.authorization === `Bearer ${key}`).map((request) => request.path);
    expect(new Set(paths)).toEqual(new Set(["/v1/ingest"]));
    // Another key is another destination, with its own session.
    const otherKey = freshKey("slash_other");
    const third = await connectTapped(1, watch(buildLowLevelServer(1), { key: otherKey, endpoint: ingest.url }), "third");
    await third.call("prose", {});
    await third.close();
    const [other] = await ingest.waitFor(otherKey, 1, "call");
    expect(other!.session_id).toMatch(SESSION_ID);
    expect(other!.session_id).not.toBe(payloads[0]!.session_id);
  });

  test("policy: as declared per tool (either flag, both, none set), null for tools without one", async () => {
    const key = freshKey("policy");
    const server = watch(buildMcpServer(2), {
      key,
      endpoint: ingest.url,
      policy: {
        prose: { requires_authorization: true },
        zero: { requires_verified_identity: true },
        blank: { requires_authorization: true, requires_verified_identity: true },
        refuses: {},
      },
      agree: { order_total: { prose: "data.total", zero: "summary.sum" } },
    });
    const client = await connectTapped(2, server, "policy-client");
    await client.close();
    const [startup] = await ingest.waitFor(key, 1, "startup");
    const policies = Object.fromEntries((startup!.tools as { name: string; policy: unknown }[]).map((tool) => [tool.name, tool.policy]));
    expect(policies.prose).toEqual({ requires_authorization: true, requires_verified_identity: false });
    expect(policies.zero).toEqual({ requires_authorization: false, requires_verified_identity: true });
    expect(policies.blank).toEqual({ requires_authorization: true, requires_verified_identity: true });
    expect(policies.refuses).toEqual({ requires_authorization: false, requires_verified_identity: false });
    expect(policies.explodes).toBeNull();
    // Field and tool names only: the paths describe the results and never leave the process.
    expect(startup!.agree_declared).toEqual([{ field: "order_total", tools: ["prose", "zero"] }]);
    const bodies = ingest.requests.filter((request) => request.authorization === `Bearer ${key}`).map((request) => request.body);
    for (const body of bodies) {
      expect(body).not.toContain("data.total");
      expect(body).not.toContain("summary.sum");
      expect(body).not.toContain("user's mailbox"); // descriptions never leave
    }
  });
});

test("buffering with the real defaults: 29 payloads wait, the 30th sends all 30 in one request", async () => {
  setTransportOverridesForTests({});
  try {
    const key = freshKey("thirty");
    const client = await connectTapped(1, watch(buildLowLevelServer(1), { key, endpoint: ingest.url }), "batcher");
    // 1 startup + 28 calls = 29 payloads: nothing goes out (the 5-second interval is far off).
    for (let i = 0; i < 28; i++) await client.call("prose", { i });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(ingest.requests.filter((request) => request.authorization === `Bearer ${key}`)).toHaveLength(0);
    await client.call("prose", { i: 28 });
    const sent = await ingest.waitFor(key, 30);
    expect(sent).toHaveLength(30);
    const requests = ingest.requests.filter((request) => request.authorization === `Bearer ${key}`);
    expect(requests).toHaveLength(1);
    await client.close();
  } finally {
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
  }
});

test("debug on: every payload sent is logged on stderr, nothing on stdout; no environment variable is read", async () => {
  const key = freshKey("debug");
  const stderrLines: string[] = [];
  const stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk: unknown) => {
    stderrLines.push(String(chunk));
    return true;
  });
  const stdout = vi.spyOn(process.stdout, "write");
  const consoleLog = vi.spyOn(console, "log");
  const envReads: string[] = [];
  const realEnv = process.env;
  process.env = new Proxy(realEnv, {
    get(target, property, receiver) {
      if (typeof property === "string") envReads.push(property);
      return Reflect.get(target, property, receiver);
    },
  });
  try {
    const server = buildLowLevelServer(1);
    watch(server, { key, endpoint: ingest.url, debug: true });
    const client = await connectTapped(1, server, "debugger");
    await client.call("prose", { secret: "not-for-the-log" });
    await client.close();
    await ingest.waitFor(key, 2);
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    process.env = realEnv;
    stderr.mockRestore();
    stdout.mockRestore();
    consoleLog.mockRestore();
  }
  expect(envReads).toEqual([]);
  expect(stdout).not.toHaveBeenCalled();
  expect(consoleLog).not.toHaveBeenCalled();
  const logged = stderrLines.join("");
  for (const payload of ingest.payloadsOf(key)) expect(logged).toContain(JSON.stringify(payload));
  expect(logged).not.toContain(key); // the key is never logged
  expect(logged).not.toContain("not-for-the-log");
});

test("stdio (1.32 StdioServerTransport on in-process streams): transport \"stdio\", raw argument bytes hashed as sent", async () => {
  const { PassThrough } = await import("node:stream");
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const key = freshKey("stdio");
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const lines: JsonRpc[] = [];
  let pending = "";
  fromServer.on("data", (chunk: Buffer) => {
    pending += chunk.toString("utf8");
    for (let end = pending.indexOf("\n"); end >= 0; end = pending.indexOf("\n")) {
      lines.push(JSON.parse(pending.slice(0, end)) as JsonRpc);
      pending = pending.slice(end + 1);
    }
  });
  const server = watch(buildMcpServer(1), { key, endpoint: ingest.url }) as { connect(t: unknown): Promise<void>; close(): Promise<void> };
  await server.connect(new StdioServerTransport(toServer, fromServer));
  const answered = async (id: number) => {
    const deadline = Date.now() + 3_000;
    while (!lines.some((line) => line.id === id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    return lines.find((line) => line.id === id)!;
  };
  toServer.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "stdio-client", version: "1" } } })}\n`);
  const initialized = await answered(1);
  toServer.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  // Hand-written JSON: key order, an escaped character and a float, exactly as a model might send them.
  const rawArguments = '{"zeta":"stripped","query":"caf\\u00e9 \\ud83d\\ude00","limit":1.0}';
  toServer.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup","arguments":${rawArguments}}}\n`);
  const response = await answered(2);
  await server.close();
  const [startup] = await ingest.waitFor(key, 1, "startup");
  expect(startup).toMatchObject({ transport: "stdio", client_name: "stdio-client", protocol_version: initialized.result!.protocolVersion });
  const [call] = await ingest.waitFor(key, 1, "call");
  expect(call).toMatchObject({
    tool_name: "lookup",
    outcome: "ok",
    client_name: "stdio-client",
    response_bytes: jsonLength(response.result),
    // JCS: keys sorted, é written as itself, 1.0 as 1.
    args_hash: hex12('{"limit":1,"query":"café 😀","zeta":"stripped"}'),
  });
});
