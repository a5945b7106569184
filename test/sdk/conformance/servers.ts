// The servers under review, built here rather than borrowed from test/sdk/helpers: one tool per
// SPEC §4 outcome and is_empty rule, on McpServer and on the low-level Server, 1.x and 2.x.
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { McpServer as McpServerV117 } from "@modelcontextprotocol/sdk-1-17/server/mcp.js";
import { Server as ServerV117 } from "@modelcontextprotocol/sdk-1-17/server/index.js";
import {
  CallToolRequestSchema as CallToolRequestSchemaV117,
  ListToolsRequestSchema as ListToolsRequestSchemaV117,
  McpError as McpErrorV117,
} from "@modelcontextprotocol/sdk-1-17/types.js";
import { McpServer as McpServerV2, ProtocolError, Server as ServerV2 } from "@modelcontextprotocol/server";
import { z } from "zod";
// MCP SDK 1.17 validates with its own Zod 3 (installed beside it); Zod 4 shapes mean nothing to it.
import { z as z3 } from "../../../node_modules/@modelcontextprotocol/sdk-1-17/node_modules/zod/index.js";

/** Which MCP SDK builds the server: 1 = `@modelcontextprotocol/sdk` 1.32, "1.17" = the 1.17 alias, 2 = 2.4. */
export type Generation = 1 | "1.17" | 2;

export type Kind = "McpServer" | "Server";
export interface Case {
  tool: string;
  /** `undefined`: the request carries no `arguments` at all. */
  args?: unknown;
  outcome: "ok" | "bad_args" | "tool_error" | "crashed";
  is_empty: boolean;
}

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });

/** Tool behaviours shared by both server kinds (name → result, or a throw). */
const ANSWERS: Record<string, () => unknown> = {
  prose: () => text("Three threads found, the newest from Ada."),
  zero: () => text("0"),
  false_text: () => text("false"),
  empty_list: () => text(" [ ] "),
  empty_object: () => text("{}"),
  empty_string: () => text('""'),
  null_text: () => text("null"),
  blank: () => text("  \n "),
  no_parts: () => ({ content: [] }),
  two_blank_parts: () => ({ content: [{ type: "text", text: "" }, { type: "text", text: "" }] }),
  structured_empty: () => ({ ...text("nothing matched, sorry"), structuredContent: {} }),
  structured_count_zero: () => ({ ...text("[]"), structuredContent: { count: 0 } }),
  refuses: () => ({ ...text("order 17 does not exist"), isError: true }),
  // Its own _meta: on revision 2026-07-28 the 2.x codec merges the server's identity into it,
  // so the SDK measures it through the codec rather than adding the learnt fixed growth.
  with_meta: () => ({ ...text("annotated"), _meta: { "example.com/trace": "t-1" } }),
  explodes: () => {
    throw new Error("database unreachable");
  },
};

/** Descriptions: a SPEC §1.3 example, a non-ASCII one, and none at all. */
export const DESCRIPTIONS: Record<string, string | undefined> = {
  prose: "Search for threads in the user's mailbox",
  zero: "Zählt die Einträge — 数える",
  no_parts: undefined,
};

export function buildMcpServer(major: Generation): unknown {
  const info = { name: "conformance-server", version: "3.1.4" };
  const server = major === 1 ? new McpServerV1(info) : major === "1.17" ? new McpServerV117(info) : new McpServerV2(info);
  const zod = (major === "1.17" ? z3 : z) as typeof z;
  const register = server.registerTool.bind(server) as (name: string, config: object, callback: (...args: unknown[]) => unknown) => {
    disable(): void;
  };
  for (const [name, answer] of Object.entries(ANSWERS)) {
    const description = Object.hasOwn(DESCRIPTIONS, name) ? DESCRIPTIONS[name] : `The ${name} tool`;
    register(name, description === undefined ? {} : { description }, () => answer());
  }
  register(
    "lookup",
    { description: "Look up orders", inputSchema: { query: zod.string(), limit: zod.number().int().optional() } },
    (args: unknown) => text(`looked up ${(args as { query: string }).query}`),
  );
  register("promises_number", { description: "Promises {n: number}", outputSchema: { n: zod.number() } }, () => ({
    ...text("n is a word"),
    structuredContent: { n: "seven" },
  }));
  register("retired", { description: "No longer offered" }, () => text("never")).disable();
  return server;
}

export function mcpServerCases(): Case[] {
  return [
    { tool: "prose", args: { b: 1, a: [true, null, "é"] }, outcome: "ok", is_empty: false },
    { tool: "zero", args: {}, outcome: "ok", is_empty: false },
    { tool: "false_text", args: undefined, outcome: "ok", is_empty: false },
    { tool: "empty_list", args: {}, outcome: "ok", is_empty: true },
    { tool: "empty_object", args: {}, outcome: "ok", is_empty: true },
    { tool: "empty_string", args: {}, outcome: "ok", is_empty: true },
    { tool: "null_text", args: {}, outcome: "ok", is_empty: true },
    { tool: "blank", args: {}, outcome: "ok", is_empty: true },
    { tool: "no_parts", args: {}, outcome: "ok", is_empty: true },
    { tool: "two_blank_parts", args: {}, outcome: "ok", is_empty: false },
    { tool: "structured_empty", args: {}, outcome: "ok", is_empty: true },
    { tool: "structured_count_zero", args: {}, outcome: "ok", is_empty: false },
    { tool: "refuses", args: {}, outcome: "tool_error", is_empty: false },
    { tool: "with_meta", args: {}, outcome: "ok", is_empty: false },
    { tool: "explodes", args: {}, outcome: "crashed", is_empty: false },
    // Validation strips the unknown key and the callback runs: the hash is over what was sent.
    { tool: "lookup", args: { zeta: "stripped by validation", query: "invoices ✓", limit: 3 }, outcome: "ok", is_empty: false },
    { tool: "lookup", args: { query: 42 }, outcome: "bad_args", is_empty: false },
    { tool: "lookup", args: undefined, outcome: "bad_args", is_empty: false },
    { tool: "no_such_tool", args: { q: 1 }, outcome: "bad_args", is_empty: false },
    { tool: "retired", args: {}, outcome: "bad_args", is_empty: false },
    { tool: "promises_number", args: {}, outcome: "crashed", is_empty: false },
  ];
}

/** Low-level Server: the tools/call handler is the callback (SPEC §4). */
export function buildLowLevelServer(major: Generation): unknown {
  const info = { name: "conformance-low", version: "0.0.1" };
  const tools = [
    ...Object.keys(ANSWERS).map((name) => {
      const description = Object.hasOwn(DESCRIPTIONS, name) ? DESCRIPTIONS[name] : `The ${name} tool`;
      return { name, ...(description === undefined ? {} : { description }), inputSchema: { type: "object" as const } };
    }),
    { name: "strict", description: "Wants a query", inputSchema: { type: "object" as const, properties: { query: { type: "string" } }, required: ["query"] } },
    // 2.x only (1.32 clients refuse a non-object output schema): on 2025-era connections the 2.x
    // wire codec wraps it into an object schema, so the entry on the wire differs from the one
    // the handler returned, and schema_bytes must measure the wire's.
    ...(major === 2
      ? [{ name: "listing", description: "Lists names", inputSchema: { type: "object" as const }, outputSchema: { type: "array", items: { type: "string" } } }]
      : []),
  ];
  const invalid = (message: string) =>
    major === 1 ? new McpError(-32602, message) : major === "1.17" ? new McpErrorV117(-32602, message) : new ProtocolError(-32602, message);
  const list = () => ({ tools });
  const call = (request: { params: { name: string; arguments?: Record<string, unknown> } }) => {
    const { name, arguments: args } = request.params;
    if (name === "strict") {
      if (typeof args?.query !== "string") throw invalid("query must be a string");
      return text("ok");
    }
    const answer = ANSWERS[name];
    if (!answer) throw invalid(`unknown tool ${name}`);
    return answer();
  };
  if (major === "1.17") {
    const server = new ServerV117(info, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchemaV117, list as never);
    server.setRequestHandler(CallToolRequestSchemaV117, call as never);
    return server;
  }
  if (major === 1) {
    const server = new ServerV1(info, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, list as never);
    server.setRequestHandler(CallToolRequestSchema, call as never);
    return server;
  }
  const server = new ServerV2(info, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", list as never);
  server.setRequestHandler("tools/call", call as never);
  return server;
}

export function lowLevelServerCases(): Case[] {
  return [
    { tool: "prose", args: { b: 1, a: "x" }, outcome: "ok", is_empty: false },
    { tool: "empty_list", args: undefined, outcome: "ok", is_empty: true },
    { tool: "structured_count_zero", args: {}, outcome: "ok", is_empty: false },
    { tool: "refuses", args: {}, outcome: "tool_error", is_empty: false },
    { tool: "explodes", args: {}, outcome: "crashed", is_empty: false },
    { tool: "strict", args: { query: 1 }, outcome: "bad_args", is_empty: false },
    { tool: "strict", args: { query: "fine" }, outcome: "ok", is_empty: false },
    { tool: "no_such_tool", args: {}, outcome: "bad_args", is_empty: false },
  ];
}
