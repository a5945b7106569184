// Streamable HTTP, where a fresh server object per request is normal (SPEC §4): every fresh
// server shares the process's buffer, concurrent clients keep their own names, and a session is a
// conversation, never the process (where each session comes from: sessions.test.ts).
import { afterEach, describe, expect, test } from "vitest";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as HttpClientV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StreamableHTTPServerTransport as HttpServerV1 } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpClientV2 } from "@modelcontextprotocol/client";
import { createMcpHandler } from "@modelcontextprotocol/server";
import { watch } from "../../src/sdk/index.ts";
import { captureForFile } from "./helpers/capture-server.ts";
import { buildServer } from "./helpers/fixtures.ts";
import { HttpServers } from "./helpers/http-listen.ts";

const ingest = captureForFile();
const ofKey = ingest.ofKey;
const http = new HttpServers();
afterEach(() => http.closeAll());

async function waitFor<T>(read: () => T[], count: number): Promise<T[]> {
  const deadline = Date.now() + 5_000;
  while (read().length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return read();
}

describe("1.x StreamableHTTPServerTransport", () => {
  test("stateless, a fresh watched McpServer per request: one session, every call recorded", async () => {
    const key = "mp_live_http_v1_stateless";
    let serversBuilt = 0;
    const url = await http.listen(async (req, res) => {
      const server = watch(buildServer("v1-mcp"), { key, endpoint: `${ingest.url}/` }) as { connect(t: unknown): Promise<void> };
      serversBuilt++;
      const transport = new HttpServerV1({ sessionIdGenerator: undefined });
      res.on("close", () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    const client = new ClientV1({ name: "stateless-client", version: "1" });
    await client.connect(new HttpClientV1(new URL(url)));
    await client.callTool({ name: "answer", arguments: {} });
    await client.callTool({ name: "throws", arguments: {} });
    await client.callTool({ name: "empty_array", arguments: {} });
    await client.close();
    expect(serversBuilt).toBeGreaterThanOrEqual(4);
    const calls = await waitFor(() => ofKey(key, "call"), 3);
    expect(calls.map((p) => [p.tool_name, p.outcome, p.is_empty])).toEqual([
      ["answer", "ok", false],
      ["throws", "crashed", false],
      ["empty_array", "ok", true],
    ]);
    // Each call reaches a fresh server that saw no initialize, in a request naming no client and
    // no session: "unknown" (SPEC §4 never lets a call borrow another request's client).
    expect(calls.map((p) => p.client_name)).toEqual(["unknown", "unknown", "unknown"]);
    const [startup] = await waitFor(() => ofKey(key, "startup"), 1);
    expect(startup).toMatchObject({ transport: "http", client_name: "stateless-client" });
    // Stateless: nothing tells conversations apart, so no session is known (SPEC §4 case 5); the
    // tool list goes out under the process's own id.
    expect(calls.map((p) => p.session_id)).toEqual(["", "", ""]);
    expect(startup!.session_id).toMatch(/^s_[0-9a-f]{12}$/);
  });

  test("stateful: two clients at once, each call carries its own client's name", async () => {
    const key = "mp_live_http_v1_stateful";
    const transports = new Map<string, HttpServerV1>();
    const url = await http.listen(async (req, res) => {
      const sessionId = req.headers["mcp-session-id"];
      let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
      if (!transport) {
        const created = new HttpServerV1({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (id) => void transports.set(id, created),
        });
        transport = created;
        const server = watch(buildServer("v1-mcp"), { key, endpoint: ingest.url }) as { connect(t: unknown): Promise<void> };
        await server.connect(transport);
      }
      await transport.handleRequest(req, res);
    });
    const alpha = new ClientV1({ name: "alpha", version: "1" });
    const beta = new ClientV1({ name: "beta", version: "1" });
    await Promise.all([alpha.connect(new HttpClientV1(new URL(url))), beta.connect(new HttpClientV1(new URL(url)))]);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? alpha : beta).callTool({ name: "answer", arguments: { i } })),
    );
    await Promise.all([alpha.close(), beta.close()]);
    const calls = await waitFor(() => ofKey(key, "call"), 10);
    const names = calls.map((p) => [p.client_name, (p.args_hash as string).length]);
    expect(names.filter(([name]) => name === "alpha")).toHaveLength(5);
    expect(names.filter(([name]) => name === "beta")).toHaveLength(5);
    // Two Mcp-Session-Ids, two conversations: each client's calls in its own session.
    const sessionOf = (name: string) => new Set(calls.filter((p) => p.client_name === name).map((p) => p.session_id));
    expect(sessionOf("alpha").size).toBe(1);
    expect(sessionOf("beta").size).toBe(1);
    expect([...sessionOf("alpha")][0]).not.toBe([...sessionOf("beta")][0]);
    const startups = await waitFor(() => ofKey(key, "startup"), 2);
    expect(startups.map((p) => p.client_name).sort()).toEqual(["alpha", "beta"]);
    expect(new Set(startups.map((p) => p.session_id))).toEqual(new Set(calls.map((p) => p.session_id)));
  });
});

describe("2.x createMcpHandler (a fresh server per request; clients may skip initialize)", () => {
  test("two concurrent clients, each named per request; one startup per client, process and destination", async () => {
    const key = "mp_live_http_v2";
    const handler = createMcpHandler(() => watch(buildServer("v2-mcp"), { key, endpoint: ingest.url }) as never);
    const url = await http.listenFetch((request) => handler.fetch(request));
    // Pinned to the 2026-07-28 revision: no initialize, the client names itself in every request.
    const modern = { versionNegotiation: { mode: { pin: "2026-07-28" } } } as never;
    const gamma = new ClientV2({ name: "gamma", version: "1" }, modern);
    const delta = new ClientV2({ name: "delta", version: "1" }, modern);
    await Promise.all([gamma.connect(new HttpClientV2(new URL(url))), delta.connect(new HttpClientV2(new URL(url)))]);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? gamma : delta).callTool({ name: i % 4 < 2 ? "answer" : "returns_error", arguments: { i } })),
    );
    await Promise.all([gamma.close(), delta.close()]);
    const calls = await waitFor(() => ofKey(key, "call"), 10);
    expect(calls).toHaveLength(10);
    expect(calls.filter((p) => p.client_name === "gamma")).toHaveLength(5);
    expect(calls.filter((p) => p.client_name === "delta")).toHaveLength(5);
    expect(calls.filter((p) => p.outcome === "tool_error")).toHaveLength(4); // i = 2, 3, 6, 7
    // No conversation id in _meta, no transport session: no session is known (SPEC §4 case 5).
    expect(new Set(calls.map((p) => p.session_id))).toEqual(new Set([""]));
    // Once per client, process and destination, at the first request that names its client.
    const startups = await waitFor(() => ofKey(key, "startup"), 2);
    expect(startups).toHaveLength(2);
    for (const startup of startups) {
      expect(startup).toMatchObject({ transport: "http", mcp_sdk_version: "2.4.0", protocol_version: "2026-07-28" });
    }
    expect(startups.map((p) => p.client_name).sort()).toEqual(["delta", "gamma"]);
  });

  test("legacy stateless clients: a call never borrows another client's name", async () => {
    const key = "mp_live_http_v2_legacy";
    const handler = createMcpHandler(() => watch(buildServer("v2-mcp"), { key, endpoint: ingest.url }) as never);
    const url = await http.listenFetch((request) => handler.fetch(request));
    const first = new ClientV2({ name: "first", version: "1" });
    await first.connect(new HttpClientV2(new URL(url)));
    const second = new ClientV2({ name: "second", version: "1" });
    await second.connect(new HttpClientV2(new URL(url)));
    await first.callTool({ name: "answer", arguments: {} });
    await Promise.all([first.close(), second.close()]);
    const [call] = await waitFor(() => ofKey(key, "call"), 1);
    // Stateless 2025-era requests carry no session and no client information: "unknown", never
    // the name of whichever client initialized last.
    expect(call!.client_name).toBe("unknown");
    const startups = await waitFor(() => ofKey(key, "startup"), 2);
    expect(startups.map((p) => p.client_name)).toEqual(["first", "second"]);
  });
});
