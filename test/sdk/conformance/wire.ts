// Real MCP clients (1.17, 1.32 and 2.4) against servers of the matching version, with every JSON-RPC
// message recorded as it crossed the transport: the review compares the SDK's payloads with the
// wire itself, not with what a client library hands back after its own parsing.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { Client as ClientV117 } from "@modelcontextprotocol/sdk-1-17/client/index.js";
import { InMemoryTransport as InMemoryV117 } from "@modelcontextprotocol/sdk-1-17/inMemory.js";
import { InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/server";
import type { Generation } from "./servers.ts";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpClientV2 } from "@modelcontextprotocol/client";

export type JsonRpc = { id?: string | number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: unknown };

export interface Wire {
  /** Client → server messages, as sent. */
  sent: JsonRpc[];
  /** Server → client messages, as sent. */
  received: JsonRpc[];
  /** The response the server sent for a request. */
  responseTo(request: JsonRpc): JsonRpc;
  /** Requests of one method, in order. */
  requests(method: string): JsonRpc[];
}

function newWire(): Wire {
  const wire: Wire = {
    sent: [],
    received: [],
    responseTo(request) {
      const response = wire.received.find((message) => message.id === request.id && message.method === undefined);
      if (!response) throw new Error(`no response to ${JSON.stringify(request)}`);
      return response;
    },
    requests: (method) => wire.sent.filter((message) => message.method === method),
  };
  return wire;
}

/** A JSON round trip, as every real transport does (it also drops `undefined` members). */
const asOnTheWire = (message: unknown) => JSON.parse(JSON.stringify(message)) as JsonRpc;

function tap(transport: { send: (message: unknown, options?: unknown) => Promise<void> }, into: JsonRpc[]): void {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    into.push(asOnTheWire(message));
    return send(message, options);
  };
}

export interface TappedClient {
  wire: Wire;
  /** Sends tools/call with exactly these params (arguments omitted when undefined). */
  call(name: string, args?: unknown): Promise<void>;
  listTools(): Promise<void>;
  close(): Promise<void>;
}

/** Connects a real client of `major` to `server` over InMemoryTransport, recording the wire. */
export async function connectTapped(major: Generation, server: unknown, clientName: string): Promise<TappedClient> {
  const wire = newWire();
  const [clientSide, serverSide] =
    major === 1 ? InMemoryV1.createLinkedPair() : major === "1.17" ? InMemoryV117.createLinkedPair() : InMemoryV2.createLinkedPair();
  tap(serverSide as never, wire.received);
  tap(clientSide as never, wire.sent);
  await (server as { connect(transport: unknown): Promise<void> }).connect(serverSide);
  const info = { name: clientName, version: "1.0.0" };
  const client = major === 1 ? new ClientV1(info) : major === "1.17" ? new ClientV117(info) : new ClientV2(info);
  await client.connect(clientSide as never);
  return {
    wire,
    async call(name, args) {
      const params = args === undefined ? { name } : { name, arguments: args };
      // Errors are part of what is under test: the wire holds them.
      await (client as { callTool(params: unknown): Promise<unknown> }).callTool(params).catch(() => undefined);
    },
    async listTools() {
      await client.listTools();
    },
    close: () => client.close(),
  };
}

/**
 * A 2.4 client over streamable HTTP to a fetch-style handler (no socket needed), recording each
 * request body and response body; SSE responses are unwrapped to their JSON-RPC messages.
 */
export async function connectHttpTapped(
  handle: (request: Request) => Promise<Response>,
  clientName: string,
  options?: unknown,
): Promise<TappedClient> {
  const wire = newWire();
  const fetchLike = async (url: string | URL, init?: RequestInit) => {
    if (typeof init?.body === "string") {
      const body = JSON.parse(init.body) as JsonRpc | JsonRpc[];
      wire.sent.push(...(Array.isArray(body) ? body : [body]));
    }
    const response = await handle(new Request(url, init));
    const text = await response.text();
    const type = response.headers.get("content-type") ?? "";
    if (type.includes("application/json") && text.length > 0) {
      const body = JSON.parse(text) as JsonRpc | JsonRpc[];
      wire.received.push(...(Array.isArray(body) ? body : [body]));
    } else if (type.includes("text/event-stream")) {
      for (const line of text.split("\n")) if (line.startsWith("data: ")) wire.received.push(JSON.parse(line.slice(6)) as JsonRpc);
    }
    return new Response(text, { status: response.status, headers: response.headers });
  };
  const client = new ClientV2({ name: clientName, version: "1.0.0" }, options as never);
  await client.connect(new HttpClientV2(new URL("http://127.0.0.1/mcp"), { fetch: fetchLike } as never));
  return {
    wire,
    async call(name, args) {
      const params = args === undefined ? { name } : { name, arguments: args };
      await client.callTool(params as never).catch(() => undefined);
    },
    async listTools() {
      await client.listTools();
    },
    close: () => client.close(),
  };
}
