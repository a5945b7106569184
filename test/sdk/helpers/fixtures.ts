// The same tool set on every server shape the SDK supports, with one tool per outcome and per
// is_empty case, so each test runs against 1.x and 2.x, McpServer and low-level Server alike.
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryTransportV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import {
  McpServer as McpServerV2,
  Server as ServerV2,
  InMemoryTransport as InMemoryTransportV2,
  ProtocolError,
} from "@modelcontextprotocol/server";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { z } from "zod";

export type Flavour = "v1-mcp" | "v1-server" | "v2-mcp" | "v2-server";
export const FLAVOURS: Flavour[] = ["v1-mcp", "v1-server", "v2-mcp", "v2-server"];

export const CANARY_ARG = "CANARY-ARG-7d1f";
export const CANARY_RESULT = "CANARY-RESULT-93ab";
export const CANARY_DESCRIPTION = "CANARY-DESCRIPTION-5e0c";

type Result = { content: { type: "text"; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

const text = (value: string): Result => ({ content: [{ type: "text", text: value }] });

/** Each tool's behaviour, independent of the MCP SDK; `expect` is what the SDK must report. */
export const TOOLS: Record<
  string,
  {
    description: string;
    run: (args: Record<string, unknown>, signal: AbortSignal) => Result | Promise<Result>;
    expect: { outcome: string; is_empty: boolean };
  }
> = {
  answer: {
    description: `Answers with prose. ${CANARY_DESCRIPTION}`,
    run: () => text(`forty-two ${CANARY_RESULT}`),
    expect: { outcome: "ok", is_empty: false },
  },
  zero: { description: "Answers 0", run: () => text("0"), expect: { outcome: "ok", is_empty: false } },
  false_answer: { description: "Answers false", run: () => text("false"), expect: { outcome: "ok", is_empty: false } },
  empty_array: { description: "Answers []", run: () => text("[]"), expect: { outcome: "ok", is_empty: true } },
  empty_object: { description: "Answers {}", run: () => text(" { } "), expect: { outcome: "ok", is_empty: true } },
  empty_string_json: { description: 'Answers ""', run: () => text('""'), expect: { outcome: "ok", is_empty: true } },
  null_json: { description: "Answers null", run: () => text("null"), expect: { outcome: "ok", is_empty: true } },
  blank: { description: "Answers blank text", run: () => text(" \n\t "), expect: { outcome: "ok", is_empty: true } },
  no_content: { description: "Answers no content", run: () => ({ content: [] }), expect: { outcome: "ok", is_empty: true } },
  two_parts_empty: {
    description: "Answers two empty parts",
    run: () => ({ content: [{ type: "text", text: "" }, { type: "text", text: "" }] }),
    expect: { outcome: "ok", is_empty: false },
  },
  structured_empty: {
    description: "Structured {} beside prose",
    run: () => ({ content: [{ type: "text", text: "nothing found, sorry" }], structuredContent: {} }),
    expect: { outcome: "ok", is_empty: true },
  },
  structured_count_zero: {
    description: "Structured count 0 beside []",
    run: () => ({ content: [{ type: "text", text: "[]" }], structuredContent: { count: 0 } }),
    expect: { outcome: "ok", is_empty: false },
  },
  returns_error: {
    description: "Returns isError",
    run: () => ({ ...text(`no such order ${CANARY_RESULT}`), isError: true }),
    expect: { outcome: "tool_error", is_empty: false },
  },
  throws: {
    description: "Throws",
    run: () => {
      throw new Error(`boom ${CANARY_RESULT}`);
    },
    expect: { outcome: "crashed", is_empty: false },
  },
  rejects: {
    description: "Rejects asynchronously",
    run: async () => {
      await Promise.resolve();
      throw new Error("async boom");
    },
    expect: { outcome: "crashed", is_empty: false },
  },
  wait_for_cancel: {
    description: "Waits until cancelled, then throws",
    run: (_args, signal) =>
      new Promise<Result>((_resolve, reject) => {
        if (signal.aborted) reject(new Error("cancelled"));
        signal.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
      }),
    expect: { outcome: "crashed", is_empty: false },
  },
};

/** A tool with a typed argument, so wrong arguments fail validation before the callback runs. */
export const TYPED_TOOL = "search";
/** A tool whose structuredContent fails its own output schema. */
export const OUTPUT_SCHEMA_TOOL = "bad_output";
/** A registered, then disabled tool. */
export const DISABLED_TOOL = "retired";

export interface Harness {
  flavour: Flavour;
  /** The server object handed to watch(). */
  server: unknown;
  /** Registers a tool after the fact (McpServer flavours only). */
  connect(): Promise<ClientLike>;
}

export interface ClientLike {
  callTool(name: string, args?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<unknown>;
  listTools(): Promise<unknown>;
  close(): Promise<void>;
}

const typedRun = (args: Record<string, unknown>) => text(`found ${String(args.query)} ${CANARY_RESULT}`);

function lowLevelError(flavour: Flavour, message: string): Error {
  return flavour === "v1-server" ? new McpError(-32602, message) : new ProtocolError(-32602, message);
}

/** Builds one server of the given flavour with the whole tool set (no watch()). */
export function buildServer(flavour: Flavour): unknown {
  const info = { name: "fixture-server", version: "1.0.0" };
  if (flavour === "v1-mcp" || flavour === "v2-mcp") {
    const server = flavour === "v1-mcp" ? new McpServerV1(info) : new McpServerV2(info);
    const register = server.registerTool.bind(server) as (name: string, config: object, cb: (...args: unknown[]) => unknown) => { disable(): void };
    for (const [name, tool] of Object.entries(TOOLS)) {
      register(name, { description: tool.description }, (extra: unknown) =>
        tool.run({}, signalOf(extra)),
      );
    }
    register(TYPED_TOOL, { description: "Search orders", inputSchema: { query: z.string(), limit: z.number().optional() } }, (args: unknown) =>
      typedRun(args as Record<string, unknown>),
    );
    register(
      OUTPUT_SCHEMA_TOOL,
      { description: "Promises a number", outputSchema: { n: z.number() } },
      () => ({ content: [{ type: "text", text: "x" }], structuredContent: { n: "not a number" } }),
    );
    register(DISABLED_TOOL, { description: "Retired" }, () => text("never")).disable();
    return server;
  }
  // Low-level Server: the tools/call handler is the callback.
  const server =
    flavour === "v1-server"
      ? new ServerV1(info, { capabilities: { tools: {} } })
      : new ServerV2(info, { capabilities: { tools: {} } });
  const listed = [
    ...Object.entries(TOOLS).map(([name, tool]) => ({ name, description: tool.description, inputSchema: { type: "object" as const } })),
    {
      name: TYPED_TOOL,
      description: "Search orders",
      inputSchema: { type: "object" as const, properties: { query: { type: "string" } }, required: ["query"] },
    },
  ];
  const listHandler = () => ({ tools: listed });
  const callHandler = async (request: { params: { name: string; arguments?: Record<string, unknown> } }, extra: unknown) => {
    const { name, arguments: args = {} } = request.params;
    if (name === TYPED_TOOL) {
      if (typeof args.query !== "string") throw lowLevelError(flavour, "query must be a string");
      return typedRun(args);
    }
    const tool = TOOLS[name];
    if (!tool) throw lowLevelError(flavour, `unknown tool ${name}`);
    return tool.run(args, signalOf(extra));
  };
  if (flavour === "v1-server") {
    const v1 = server as ServerV1;
    v1.setRequestHandler(ListToolsRequestSchema, listHandler);
    v1.setRequestHandler(CallToolRequestSchema, callHandler as never);
  } else {
    const v2 = server as ServerV2;
    v2.setRequestHandler("tools/list", listHandler as never);
    v2.setRequestHandler("tools/call", callHandler as never);
  }
  return server;
}

function signalOf(extra: unknown): AbortSignal {
  const context = extra as { signal?: AbortSignal; mcpReq?: { signal?: AbortSignal } };
  return context.signal ?? context.mcpReq?.signal ?? new AbortController().signal;
}

/** Connects a real client of the matching major version over InMemoryTransport. */
export async function connectInMemory(flavour: Flavour, server: unknown, clientName = "fixture-client"): Promise<ClientLike> {
  if (flavour.startsWith("v1")) {
    const [clientTransport, serverTransport] = InMemoryTransportV1.createLinkedPair();
    await (server as { connect(t: unknown): Promise<void> }).connect(serverTransport);
    const client = new ClientV1({ name: clientName, version: "1.0.0" });
    await client.connect(clientTransport);
    return {
      callTool: (name, args, options) => client.callTool({ name, arguments: args }, undefined, options),
      listTools: () => client.listTools(),
      close: () => client.close(),
    };
  }
  const [clientTransport, serverTransport] = InMemoryTransportV2.createLinkedPair();
  await (server as { connect(t: unknown): Promise<void> }).connect(serverTransport);
  const client = new ClientV2({ name: clientName, version: "1.0.0" });
  await client.connect(clientTransport);
  return {
    callTool: (name, args, options) => client.callTool({ name, arguments: args }, options),
    listTools: () => client.listTools(),
    close: () => client.close(),
  };
}

/** Calls a tool and captures what the client saw, answer or error, as plain JSON. */
export async function callAndCapture(client: ClientLike, name: string, args?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<unknown> {
  try {
    return { result: await client.callTool(name, args, options) };
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown };
    return { error: { code: e.code, message: e.message } };
  }
}

export const isMcp = (flavour: Flavour) => flavour.endsWith("-mcp");

/** Every call the scenario makes, with what the SDK must report for it. */
export function scenario(flavour: Flavour): { name: string; args?: Record<string, unknown>; outcome: string; is_empty: boolean }[] {
  const calls: { name: string; args?: Record<string, unknown>; outcome: string; is_empty: boolean }[] = Object.entries(TOOLS)
    .filter(([name]) => name !== "wait_for_cancel")
    .map(([name, tool]) => ({ name, args: { note: CANARY_ARG }, ...tool.expect }));
  calls.push({ name: TYPED_TOOL, args: { query: "orders", limit: 25 }, outcome: "ok", is_empty: false });
  calls.push({ name: TYPED_TOOL, args: { query: 5 }, outcome: "bad_args", is_empty: false });
  calls.push({ name: TYPED_TOOL, args: {}, outcome: "bad_args", is_empty: false });
  calls.push({ name: "no_such_tool", args: {}, outcome: "bad_args", is_empty: false });
  if (isMcp(flavour)) {
    calls.push({ name: DISABLED_TOOL, args: {}, outcome: "bad_args", is_empty: false });
    calls.push({ name: OUTPUT_SCHEMA_TOOL, args: {}, outcome: "crashed", is_empty: false });
  }
  return calls;
}

