// Several conversations of one client on one HTTP server process, end to end (SPEC §2.2, §4
// "Sessions are conversations"): real MCP servers with watch() over real HTTP, real clients, the
// worker in Miniflare, its rollup, and GET /v1/metrics/tools compared with the truth of what the
// conversations did. Six conversations of `claude-ai` each repeat their own search three times
// (repeats are never retries) and look one order up; one conversation's lookup fails and is retried
// with other arguments. Every row of the table in docs/sdk.md's "Why" paragraph:
//   MCP 2025 stateful streamable HTTP (1.x, Mcp-Session-Id)  → exact
//   MCP 2026-07-28 (2.x createMcpHandler) with openai/session → exact
//   2025 stateless HTTP, no id at all                          → no retries invented
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport as HttpServerV1 } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpClientV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpServer as McpServerV2, createMcpHandler } from "@modelcontextprotocol/server";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpClientV2 } from "@modelcontextprotocol/client";
import { z } from "zod";
import { watch } from "../../src/sdk/index.ts";
import { allDestinations, setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { HttpServers } from "../sdk/helpers/http-listen.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;
const http = new HttpServers();

beforeAll(async () => {
  worker = await startWorker();
  setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
});
afterEach(() => http.closeAll());
afterAll(async () => {
  setTransportOverridesForTests({});
  await worker?.stop();
});

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
type Registrar = { registerTool(name: string, config: object, callback: (args: Record<string, unknown>) => unknown): unknown };

/** The orders server: search always answers; lookup of order "missing" is a tool error. */
function registerTools(server: Registrar): void {
  server.registerTool("search", { description: "Search orders", inputSchema: { q: z.string() } }, ({ q }) => text(`found ${String(q)}`));
  server.registerTool("lookup", { description: "Look an order up", inputSchema: { id: z.string() } }, ({ id }) =>
    id === "missing" ? { ...text("no such order"), isError: true } : text(`{"id":"${String(id)}"}`),
  );
}

/**
 * The six conversations, each through `call(conversation, tool, args)`: three identical searches,
 * then a lookup; conversation 0 looks up a missing order first and retries with the right id.
 */
async function converse(call: (conversation: number, tool: string, args: Record<string, unknown>) => Promise<unknown>): Promise<void> {
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 6 }, (_, i) => call(i, "search", { q: `topic-${i}` })));
  }
  await Promise.all(Array.from({ length: 6 }, (_, i) => call(i, "lookup", { id: i === 0 ? "missing" : `order-${i}` })));
  await call(0, "lookup", { id: "order-0" });
}

type Row = Record<string, unknown>;

/** Delivers the SDK's buffer, rolls up until all `calls` are counted, and returns the tool rows. */
async function countedRows(project: { read_key: string }, calls: number): Promise<Map<string, Row>> {
  await Promise.all(allDestinations().map((destination) => destination.buffer.flushFinal(5_000)));
  const deadline = Date.now() + 30_000;
  let rows: Row[] = [];
  do {
    await worker.runRollup();
    const response = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${project.read_key}` } });
    rows = ((await response.json()) as { tools: Row[] }).tools;
    if (rows.reduce((n, r) => n + (r.calls as number), 0) >= calls) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  } while (Date.now() < deadline);
  return new Map(rows.map((r) => [r.tool_name as string, r]));
}

const figures = (row: Row | undefined) =>
  row && { calls: row.calls, retries: row.retries, first_call_attempts: row.first_call_attempts, first_call_ok: row.first_call_ok, calls_without_session: row.calls_without_session };

/** The truth when conversations are told apart: repeats are no retries; one lookup retried. */
const EXACT = {
  search: { calls: 18, retries: 0, first_call_attempts: 18, first_call_ok: 18, calls_without_session: 0 },
  lookup: { calls: 7, retries: 1, first_call_attempts: 6, first_call_ok: 5, calls_without_session: 0 },
};

async function sessionsAnswer(project: { read_key: string }): Promise<Record<string, unknown>> {
  const response = await fetch(`${worker.url}/v1/metrics/sessions`, { headers: { authorization: `Bearer ${project.read_key}` } });
  return (await response.json()) as Record<string, unknown>;
}

test("MCP 2025 stateful streamable HTTP (1.x): six conversations of one client are reported exactly", async () => {
  const project = await createProject(worker, "stateful 1.x");
  const transports = new Map<string, HttpServerV1>();
  const url = await http.listen(async (req, res) => {
    const sessionId = req.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport) {
      const created = new HttpServerV1({ sessionIdGenerator: () => crypto.randomUUID(), onsessioninitialized: (id) => void transports.set(id, created) });
      transport = created;
      const server = watch(new McpServerV1({ name: "orders", version: "1.0.0" }), { key: project.ingest_key, endpoint: worker.url });
      registerTools(server as unknown as Registrar);
      await server.connect(created);
    }
    await transport.handleRequest(req, res);
  });
  const clients = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const client = new ClientV1({ name: "claude-ai", version: "1" });
      await client.connect(new HttpClientV1(new URL(url)));
      return client;
    }),
  );
  await converse((i, name, args) => clients[i]!.callTool({ name, arguments: args }));
  await Promise.all(clients.map((client) => client.close()));
  const rows = await countedRows(project, 25);
  expect(figures(rows.get("search"))).toEqual(EXACT.search);
  expect(figures(rows.get("lookup"))).toEqual(EXACT.lookup);
  expect(rows.get("search")).toMatchObject({ first_call_rate: 1 });
  // Six conversations: six sessions, each with its own startup (schema cost per session is right).
  expect(await sessionsAnswer(project)).toMatchObject({ sessions: 6, calls_without_session: 0, calls_per_session: 4.2 });
});

test("MCP 2026-07-28 (2.x createMcpHandler) with openai/session: reported exactly", async () => {
  const project = await createProject(worker, "modern 2.x");
  const handler = createMcpHandler(() => {
    const server = watch(new McpServerV2({ name: "orders", version: "1.0.0" }), { key: project.ingest_key, endpoint: worker.url });
    registerTools(server as unknown as Registrar);
    return server as never;
  });
  const url = await http.listenFetch((request) => handler.fetch(request));
  // One client object per conversation as ChatGPT would hold them: each sends its conversation id.
  const clients = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const client = new ClientV2({ name: "claude-ai", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } } as never);
      await client.connect(new HttpClientV2(new URL(url)));
      return client;
    }),
  );
  await converse((i, name, args) => clients[i]!.callTool({ name, arguments: args, _meta: { "openai/session": `chat-${i}` } }));
  await Promise.all(clients.map((client) => client.close()));
  const rows = await countedRows(project, 25);
  expect(figures(rows.get("search"))).toEqual(EXACT.search);
  expect(figures(rows.get("lookup"))).toEqual(EXACT.lookup);
  expect(await sessionsAnswer(project)).toMatchObject({ sessions: 6, calls_without_session: 0 });
});

test("2025 stateless HTTP, no id at all: no retry is invented, and the answer says why", async () => {
  const project = await createProject(worker, "stateless");
  const url = await http.listen(async (req, res) => {
    const server = watch(new McpServerV1({ name: "orders", version: "1.0.0" }), { key: project.ingest_key, endpoint: worker.url });
    registerTools(server as unknown as Registrar);
    const transport = new HttpServerV1({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close());
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  const clients = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const client = new ClientV1({ name: "claude-ai", version: "1" });
      await client.connect(new HttpClientV1(new URL(url)));
      return client;
    }),
  );
  await converse((i, name, args) => clients[i]!.callTool({ name, arguments: args }));
  await Promise.all(clients.map((client) => client.close()));
  const rows = await countedRows(project, 25);
  // Every call is a chain of its own: 0 retries (the truth for search); lookup's one real retry
  // cannot be seen without sessions, and calls_without_session says so.
  expect(figures(rows.get("search"))).toEqual({ calls: 18, retries: 0, first_call_attempts: 18, first_call_ok: 18, calls_without_session: 18 });
  expect(figures(rows.get("lookup"))).toEqual({ calls: 7, retries: 0, first_call_attempts: 7, first_call_ok: 6, calls_without_session: 7 });
  expect(await sessionsAnswer(project)).toMatchObject({ calls_without_session: 25 });
});
