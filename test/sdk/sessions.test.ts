// Where a call's session comes from (SPEC §4 "Sessions are conversations"): each row of the table
// in docs/sdk.md ("Where a session comes from") is a test here, driven by real MCP clients over real
// transports, plus the pure function and the session table it rests on. The stdio row is in
// processes.test.ts (a real child process per connection).
import { createHmac } from "node:crypto";
import { afterEach, describe, expect, test } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport as SseClientV1 } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport as HttpClientV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEServerTransport as SseServerV1 } from "@modelcontextprotocol/sdk/server/sse.js";
import { StreamableHTTPServerTransport as HttpServerV1 } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpClientV2 } from "@modelcontextprotocol/client";
import { createMcpHandler, WebStandardStreamableHTTPServerTransport as HttpServerV2 } from "@modelcontextprotocol/server";
import { watch, type WatchOptions } from "../../src/sdk/index.ts";
import {
  CONVERSATION_META_KEYS,
  derivedSessionId,
  MAX_REMEMBERED_SESSIONS,
  SessionTable,
  sessionSource,
  type SessionFacts,
} from "../../src/sdk/session.ts";
import { captureForFile } from "./helpers/capture-server.ts";
import { InMemoryTransport as InMemoryTransportV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { InMemoryTransport as InMemoryTransportV2 } from "@modelcontextprotocol/server";
import { buildServer, type Flavour } from "./helpers/fixtures.ts";
import { HttpServers } from "./helpers/http-listen.ts";

const SESSION_ID = /^s_[0-9a-f]{12}$/;
const ingest = captureForFile();
const ofKey = ingest.ofKey;
const http = new HttpServers();
let keys = 0;
const freshKey = (label: string) => `mp_live_sessions_${label}_${++keys}`;

afterEach(() => http.closeAll());

async function waitFor(key: string, type: string, count: number): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + 10_000;
  while (ofKey(key, type).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return ofKey(key, type);
}

/** The id SPEC §4 prescribes, computed here with node:crypto: s_ + hex12 of HMAC-SHA256(key, case:value). */
const expectedId = (key: string, kind: string, value: string) =>
  `s_${createHmac("sha256", key).update(`${kind}:${value}`).digest("hex").slice(0, 12)}`;

/** Calls `search` with each conversation's own arguments, three times each: repeats, never retries. */
async function sixConversations(call: (conversation: number, args: Record<string, unknown>) => Promise<unknown>): Promise<void> {
  for (let round = 0; round < 3; round++) {
    await Promise.all(Array.from({ length: 6 }, (_, i) => call(i, { query: `topic-${i}` })));
  }
}

/** Calls grouped by session: each group's tool names and argument hashes in order. */
function bySession(calls: Record<string, unknown>[]): Map<string, Record<string, unknown>[]> {
  const groups = new Map<string, Record<string, unknown>[]>();
  for (const call of calls) {
    const id = call.session_id as string;
    groups.set(id, [...(groups.get(id) ?? []), call]);
  }
  return groups;
}

describe("where a session comes from (docs/sdk.md table)", () => {
  test("1.x stateful streamable HTTP: the Mcp-Session-Id, six conversations of one client apart", async () => {
    const key = freshKey("v1_stateful");
    const transports = new Map<string, HttpServerV1>();
    const url = await http.listen(async (req, res) => {
      const sessionId = req.headers["mcp-session-id"];
      let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
      if (!transport) {
        const created = new HttpServerV1({ sessionIdGenerator: () => crypto.randomUUID(), onsessioninitialized: (id) => void transports.set(id, created) });
        transport = created;
        await (watch(buildServer("v1-mcp"), { key, endpoint: ingest.url }) as { connect(t: unknown): Promise<void> }).connect(created);
      }
      await transport.handleRequest(req, res);
    });
    const clients = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const client = new ClientV1({ name: "claude-ai", version: "1" });
        const transport = new HttpClientV1(new URL(url));
        await client.connect(transport);
        return { client, transport };
      }),
    );
    await sixConversations((i, args) => clients[i]!.client.callTool({ name: "search", arguments: args }));
    const mcpSessionIds = clients.map(({ transport }) => transport.sessionId!);
    await Promise.all(clients.map(({ client }) => client.close()));
    const calls = await waitFor(key, "call", 18);
    const groups = bySession(calls);
    expect(groups.size).toBe(6);
    expect([...groups.keys()].sort()).toEqual(mcpSessionIds.map((id) => expectedId(key, "transport", id)).sort());
    for (const group of groups.values()) {
      expect(group).toHaveLength(3);
      expect(new Set(group.map((c) => c.args_hash)).size).toBe(1); // one conversation's own repeats
      expect(group.every((c) => c.client_name === "claude-ai")).toBe(true);
    }
    // The descriptive facts (SPEC §1.2): where the id came from, the transport, the client's version.
    expect(calls.every((c) => c.session_kind === "transport" && c.transport === "http" && c.client_version === "1")).toBe(true);
    // Each conversation got its own startup (its schema cost is its own).
    const startups = await waitFor(key, "startup", 6);
    expect(new Set(startups.map((p) => p.session_id))).toEqual(new Set(groups.keys()));
  });

  test("2.x stateful streamable HTTP: the Mcp-Session-Id", async () => {
    const key = freshKey("v2_stateful");
    const transports = new Map<string, HttpServerV2>();
    const url = await http.listenFetch(async (request) => {
      const sessionId = request.headers.get("mcp-session-id");
      let transport = sessionId ? transports.get(sessionId) : undefined;
      if (!transport) {
        const created = new HttpServerV2({ sessionIdGenerator: () => crypto.randomUUID(), onsessioninitialized: (id) => void transports.set(id, created) });
        transport = created;
        await (watch(buildServer("v2-mcp"), { key, endpoint: ingest.url }) as { connect(t: unknown): Promise<void> }).connect(created);
      }
      return transport.handleRequest(request);
    });
    const clients = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const client = new ClientV2({ name: "cursor", version: "1" });
        const transport = new HttpClientV2(new URL(url));
        await client.connect(transport);
        return { client, transport };
      }),
    );
    for (const [i, { client }] of clients.entries()) await client.callTool({ name: "search", arguments: { query: `q${i}` } });
    const mcpSessionIds = clients.map(({ transport }) => transport.sessionId!);
    await Promise.all(clients.map(({ client }) => client.close()));
    const calls = await waitFor(key, "call", 3);
    expect(calls.map((c) => c.session_id).sort()).toEqual(mcpSessionIds.map((id) => expectedId(key, "transport", id)).sort());
  });

  test("1.x SSE: the SSE connection", async () => {
    const key = freshKey("v1_sse");
    const transports = new Map<string, SseServerV1>();
    const url = await http.listen(async (req, res) => {
      if (req.method === "GET") {
        const transport = new SseServerV1("/messages", res);
        transports.set(transport.sessionId, transport);
        await (watch(buildServer("v1-mcp"), { key, endpoint: ingest.url }) as { connect(t: unknown): Promise<void> }).connect(transport);
        return;
      }
      const sessionId = new URL(req.url!, "http://x").searchParams.get("sessionId")!;
      await transports.get(sessionId)!.handlePostMessage(req, res);
    });
    const clients = await Promise.all(
      Array.from({ length: 2 }, async () => {
        const client = new ClientV1({ name: "sse-client", version: "1" });
        await client.connect(new SseClientV1(new URL(url)));
        return client;
      }),
    );
    for (const [i, client] of clients.entries()) {
      await client.callTool({ name: "search", arguments: { query: `a${i}` } });
      await client.callTool({ name: "search", arguments: { query: `b${i}` } });
    }
    await Promise.all(clients.map((client) => client.close()));
    const calls = await waitFor(key, "call", 4);
    const groups = bySession(calls);
    expect([...groups.keys()].sort()).toEqual([...transports.keys()].map((id) => expectedId(key, "transport", id)).sort());
    for (const group of groups.values()) expect(group).toHaveLength(2);
  });

  test("1.x stateless streamable HTTP: no session is known, every call's session_id is empty", async () => {
    const key = freshKey("v1_stateless");
    const url = await http.listen(async (req, res) => {
      const server = watch(buildServer("v1-mcp"), { key, endpoint: ingest.url }) as { connect(t: unknown): Promise<void> };
      const transport = new HttpServerV1({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    const client = new ClientV1({ name: "stateless-client", version: "1" });
    await client.connect(new HttpClientV1(new URL(url)));
    await client.callTool({ name: "search", arguments: { query: "a" } });
    await client.callTool({ name: "search", arguments: { query: "b" } });
    await client.close();
    const calls = await waitFor(key, "call", 2);
    expect(calls.map((c) => c.session_id)).toEqual(["", ""]);
    expect(calls.map((c) => c.session_kind)).toEqual(["none", "none"]);
    // The tool list still goes out (dead tools and schema cost need it), under the process's own id.
    const [startup] = await waitFor(key, "startup", 1);
    expect(startup!.session_id).toMatch(SESSION_ID);
  });

  const modern = { versionNegotiation: { mode: { pin: "2026-07-28" } } } as never;

  /** A 2.x createMcpHandler server: a fresh watched server per request (stateless by design). */
  async function statelessV2(key: string, options: Partial<WatchOptions> = {}): Promise<string> {
    const handler = createMcpHandler(() => watch(buildServer("v2-mcp"), { key, endpoint: ingest.url, ...options }) as never);
    return http.listenFetch((request) => handler.fetch(request));
  }

  test("2.x createMcpHandler, 2025-era client: no session is known", async () => {
    const key = freshKey("v2_legacy");
    const url = await statelessV2(key);
    const client = new ClientV2({ name: "legacy", version: "1" });
    await client.connect(new HttpClientV2(new URL(url)));
    await client.callTool({ name: "search", arguments: { query: "a" } });
    await client.close();
    const calls = await waitFor(key, "call", 1);
    expect(calls[0]!.session_id).toBe("");
  });

  test("MCP 2026-07-28 without a conversation id: no session is known; one startup per client", async () => {
    const key = freshKey("modern_none");
    const url = await statelessV2(key);
    const clients = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const client = new ClientV2({ name: "claude-ai", version: "1" }, modern);
        await client.connect(new HttpClientV2(new URL(url)));
        return client;
      }),
    );
    await Promise.all(clients.map((client, i) => client.callTool({ name: "search", arguments: { query: `t${i}` } })));
    await Promise.all(clients.map((client) => client.close()));
    const calls = await waitFor(key, "call", 3);
    expect(calls.map((c) => c.session_id)).toEqual(["", "", ""]);
    expect(calls.every((c) => c.client_name === "claude-ai")).toBe(true);
    const startups = await waitFor(key, "startup", 1);
    expect(startups).toHaveLength(1);
    expect(startups[0]).toMatchObject({ client_name: "claude-ai", protocol_version: "2026-07-28" });
  });

  test("MCP 2026-07-28 with _meta[\"openai/session\"]: the client's conversation id, six conversations apart", async () => {
    const key = freshKey("modern_openai");
    const url = await statelessV2(key);
    const client = new ClientV2({ name: "openai-mcp", version: "1" }, modern);
    await client.connect(new HttpClientV2(new URL(url)));
    await sixConversations((i, args) => client.callTool({ name: "search", arguments: args, _meta: { "openai/session": `conversation-${i}` } }));
    await client.close();
    const calls = await waitFor(key, "call", 18);
    const groups = bySession(calls);
    expect([...groups.keys()].sort()).toEqual(Array.from({ length: 6 }, (_, i) => expectedId(key, "conversation", `conversation-${i}`)).sort());
    expect(calls.every((c) => c.session_kind === "conversation")).toBe(true);
    for (const group of groups.values()) {
      expect(group).toHaveLength(3);
      expect(new Set(group.map((c) => c.args_hash)).size).toBe(1);
    }
    // A startup per conversation, at its first request, with the conversation's own id — and none
    // for the client's other requests that carried no conversation id (no session without calls).
    const startups = await waitFor(key, "startup", 6);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ofKey(key, "startup")).toHaveLength(6);
    expect(new Set(startups.map((p) => p.session_id))).toEqual(new Set(groups.keys()));
    // The conversation id itself never leaves the process.
    for (const request of ingest.requests) expect(request.body).not.toContain("conversation-");
  });

  describe.each(["v1-mcp", "v2-server"] as Flavour[])("sessionKey (%s)", (flavour) => {
    test("the author's handle wins over every other source; a throw or a non-string falls through", async () => {
      const key = freshKey(`option_${flavour.replace("-", "_")}`);
      const seen: unknown[] = [];
      const server = watch(buildServer(flavour), {
        key,
        endpoint: ingest.url,
        sessionKey: (request) => {
          seen.push(request);
          const user = request.meta?.user;
          if (user === "boom") throw new Error("the host's own bug");
          return typeof user === "string" ? `user:${user}` : (7 as unknown as string);
        },
      });
      // One connection; each call's client sends `_meta.user` through the real MCP client.
      const client = await connectWithMeta(flavour, server, "host-client");
      for (const user of ["ann", "bob", "ann", "boom", undefined]) await client.call("search", { query: String(user) }, user === undefined ? {} : { user });
      await client.close();
      const calls = await waitFor(key, "call", 5);
      expect(calls.map((c) => c.session_id)).toEqual([
        expectedId(key, "key", "user:ann"),
        expectedId(key, "key", "user:bob"),
        expectedId(key, "key", "user:ann"),
        calls[3]!.session_id, // threw: falls through to the connection
        calls[3]!.session_id, // not a string: falls through too
      ]);
      expect(calls[3]!.session_id).toMatch(SESSION_ID);
      expect(calls[3]!.session_id).not.toBe(expectedId(key, "key", "user:ann"));
      expect(calls.map((c) => c.session_kind)).toEqual(["key", "key", "key", "connection", "connection"]);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen[0]).toMatchObject({ clientName: "host-client" });
    });
  });
});

/** An in-memory connection whose calls carry a `_meta` of the test's choosing. */
async function connectWithMeta(
  flavour: Flavour,
  server: unknown,
  clientName: string,
): Promise<{ call(name: string, args: object, meta: object): Promise<unknown>; close(): Promise<void> }> {
  const v1 = flavour.startsWith("v1");
  const [clientSide, serverSide] = v1 ? InMemoryTransportV1.createLinkedPair() : InMemoryTransportV2.createLinkedPair();
  await (server as { connect(t: unknown): Promise<void> }).connect(serverSide);
  const client = v1 ? new ClientV1({ name: clientName, version: "1" }) : new ClientV2({ name: clientName, version: "1" });
  await (client as { connect(t: unknown): Promise<void> }).connect(clientSide);
  return {
    call: (name, args, meta) => (client as unknown as { callTool(p: object): Promise<unknown> }).callTool({ name, arguments: args, _meta: meta }),
    close: () => client.close(),
  };
}

describe("the session table and the pure function", () => {
  const facts = (over: Partial<SessionFacts>): SessionFacts => ({
    fromOption: undefined,
    meta: undefined,
    transportSessionId: undefined,
    transport: "http",
    connection: undefined,
    ...over,
  });

  test("first match wins, in SPEC §4's order", () => {
    const connection = {};
    const all = facts({ fromOption: "u1", meta: { "openai/session": "c1" }, transportSessionId: "t1", transport: "stdio", connection });
    expect(sessionSource(all)).toEqual({ kind: "key", value: "u1" });
    expect(sessionSource({ ...all, fromOption: "" })).toEqual({ kind: "conversation", value: "c1" });
    expect(sessionSource({ ...all, fromOption: null, meta: { "openai/session": 5 } })).toEqual({ kind: "transport", value: "t1" });
    // VS Code's conversation id, and the first key listed when a request carries both.
    expect(sessionSource({ ...all, fromOption: undefined, meta: { "vscode.conversationId": "v1" } })).toEqual({ kind: "conversation", value: "v1" });
    expect(sessionSource({ ...all, fromOption: undefined, meta: { "vscode.conversationId": "v1", "openai/session": "c1" } })).toEqual({ kind: "conversation", value: "c1" });
    expect(sessionSource({ ...all, fromOption: undefined, meta: { vscode: { conversationId: "v1" } } })).toEqual({ kind: "transport", value: "t1" });
    expect(sessionSource({ ...all, fromOption: undefined, meta: undefined, transportSessionId: "" })).toEqual({ kind: "connection", connection });
    expect(sessionSource({ ...all, fromOption: undefined, meta: undefined, transportSessionId: undefined, transport: "memory" })).toEqual({ kind: "connection", connection });
    // Stateless HTTP and unknown transports: none, never a guess.
    expect(sessionSource(facts({ connection }))).toBeNull();
    expect(sessionSource(facts({ transport: "unknown", connection }))).toBeNull();
    expect(sessionSource(facts({ transport: "stdio" }))).toBeNull();
  });

  test("every listed conversation key names a session, with its client and source documented", () => {
    for (const { key, client, source } of CONVERSATION_META_KEYS) {
      expect(sessionSource(facts({ meta: { [key]: "abc" } }))).toEqual({ kind: "conversation", value: "abc" });
      expect(client.length).toBeGreaterThan(0);
      expect(source.length).toBeGreaterThan(0);
    }
    // A user id is not a conversation: ChatGPT's openai/subject names a person across conversations.
    expect(sessionSource(facts({ meta: { "openai/subject": "abc" } }))).toBeNull();
  });

  test("derived ids are HMAC-SHA256 of case:value under the ingest key, as node:crypto computes it", () => {
    for (const [key, kind, value] of [
      ["mp_live_a", "transport", "3f1c"],
      ["mp_live_a", "conversation", "3f1c"],
      ["mp_live_b", "transport", "3f1c"],
      ["k".repeat(100), "key", "ü✓ 😀"],
      ["", "key", ""],
    ] as const) {
      expect(derivedSessionId(key, kind, value)).toBe(expectedId(key, kind, value));
    }
    // Two replicas with one key agree; another key (another project) does not.
    expect(derivedSessionId("mp_live_a", "transport", "x")).toBe(derivedSessionId("mp_live_a", "transport", "x"));
    expect(derivedSessionId("mp_live_a", "transport", "x")).not.toBe(derivedSessionId("mp_live_b", "transport", "x"));
  });

  test("a known conversation is a lookup; a new one is new once; connections get random ids", () => {
    const table = new SessionTable("mp_live_t");
    const first = table.lookup({ kind: "conversation", value: "c" });
    expect(first).toEqual({ id: expectedId("mp_live_t", "conversation", "c"), isNew: true });
    expect(table.lookup({ kind: "conversation", value: "c" })).toEqual({ id: first.id, isNew: false });
    const a = {};
    const b = {};
    const onA = table.lookup({ kind: "connection", connection: a });
    expect(onA.isNew).toBe(true);
    expect(onA.id).toMatch(SESSION_ID);
    expect(table.lookup({ kind: "connection", connection: a })).toEqual({ id: onA.id, isNew: false });
    expect(table.lookup({ kind: "connection", connection: b }).id).not.toBe(onA.id);
    // A long value a client controls is kept as its hash, with the HMAC over the whole value.
    const long = "v".repeat(100_000);
    expect(table.lookup({ kind: "conversation", value: long })).toEqual({ id: expectedId("mp_live_t", "conversation", long), isNew: true });
    expect(table.lookup({ kind: "conversation", value: long }).isNew).toBe(false);
  });

  test("memory stays bounded: at most 10,000 remembered sessions, least recently used forgotten first", () => {
    expect(MAX_REMEMBERED_SESSIONS).toBe(10_000);
    const table = new SessionTable("mp_live_bound");
    for (let i = 0; i < MAX_REMEMBERED_SESSIONS; i++) table.lookup({ kind: "transport", value: `s${i}` });
    expect(table.size).toBe(10_000);
    table.lookup({ kind: "transport", value: "s0" }); // used again: now the most recent
    table.lookup({ kind: "transport", value: "one-more" });
    expect(table.size).toBe(10_000);
    expect(table.lookup({ kind: "transport", value: "s0" }).isNew).toBe(false);
    // s1 was the least recently used: forgotten, so it is new again (same id, one more startup).
    const again = table.lookup({ kind: "transport", value: "s1" });
    expect(again).toEqual({ id: expectedId("mp_live_bound", "transport", "s1"), isNew: true });
    expect(table.size).toBe(10_000);
  });
});
