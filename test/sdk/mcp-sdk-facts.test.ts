// The facts about the MCP SDKs that watch() relies on (SPEC §4 "Facts about the MCP SDKs"),
// checked against the installed 1.17, 1.32 and 2.x packages so an upgrade that breaks one fails here.
import { describe, expect, test } from "vitest";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer as McpServerV117 } from "@modelcontextprotocol/sdk-1-17/server/mcp.js";
import { Server as ServerV117 } from "@modelcontextprotocol/sdk-1-17/server/index.js";
import { Client as ClientV117 } from "@modelcontextprotocol/sdk-1-17/client/index.js";
import { InMemoryTransport as InMemoryV117 } from "@modelcontextprotocol/sdk-1-17/inMemory.js";
import { McpServer as McpServerV2, Server as ServerV2 } from "@modelcontextprotocol/server";
import { recogniseServer } from "../../src/sdk/shapes.ts";
import { connectInMemory } from "./helpers/fixtures.ts";

type Internals = { server: { _requestHandlers: unknown }; _registeredTools: Record<string, Record<string, unknown>> };

describe("1.17", () => {
  async function connect117(mcp: McpServerV117) {
    const [clientSide, serverSide] = InMemoryV117.createLinkedPair();
    await mcp.connect(serverSide);
    const client = new ClientV117({ name: "c", version: "1" });
    await client.connect(clientSide);
    return client;
  }

  test("the callback sits in `callback` (no `handler`, no `executor`) and is read at call time", async () => {
    const mcp = new McpServerV117({ name: "f", version: "1" });
    const internals = mcp as unknown as Internals;
    expect(internals.server._requestHandlers).toBeInstanceOf(Map);
    mcp.registerTool("t", { description: "t" }, () => ({ content: [{ type: "text", text: "before" }] }));
    const tool = internals._registeredTools.t!;
    expect(typeof tool.callback).toBe("function");
    expect(tool.handler).toBeUndefined();
    expect(tool.executor).toBeUndefined();
    tool.callback = () => ({ content: [{ type: "text", text: "after" }] });
    const client = await connect117(mcp);
    expect(await client.callTool({ name: "t", arguments: {} })).toMatchObject({ content: [{ text: "after" }] });
    // An unknown tool is a thrown −32602, as in 2.x (1.32 answers an isError result instead).
    await expect(client.callTool({ name: "missing", arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });

  test("Server._requestHandlers is a Map", () => {
    expect(new ServerV117({ name: "s", version: "1" }, { capabilities: { tools: {} } })).toHaveProperty("_requestHandlers", expect.any(Map));
  });
});

describe("1.32", () => {
  test("Server._requestHandlers is a Map; McpServer installs tools/call at the first registerTool", () => {
    const mcp = new McpServerV1({ name: "f", version: "1" });
    const internals = mcp as unknown as Internals;
    const handlers = internals.server._requestHandlers as Map<string, unknown>;
    expect(handlers).toBeInstanceOf(Map);
    expect(handlers.has("tools/call")).toBe(false);
    mcp.registerTool("t", { description: "t" }, () => ({ content: [] }));
    expect(handlers.has("tools/call")).toBe(true);
    expect(typeof internals._registeredTools.t!.handler).toBe("function");
    expect(new ServerV1({ name: "s", version: "1" }, { capabilities: { tools: {} } })).toHaveProperty("_requestHandlers", expect.any(Map));
  });

  test("the tool's handler is read at call time", async () => {
    const mcp = new McpServerV1({ name: "f", version: "1" });
    const internals = mcp as unknown as Internals;
    mcp.registerTool("t", { description: "t" }, () => ({ content: [{ type: "text", text: "before" }] }));
    internals._registeredTools.t!.handler = () => ({ content: [{ type: "text", text: "after" }] });
    const client = await connectInMemory("v1-mcp", mcp);
    expect(await client.callTool("t", {})).toMatchObject({ content: [{ text: "after" }] });
    await client.close();
  });

  test("an unknown tool is answered with an isError result", async () => {
    const mcp = new McpServerV1({ name: "f", version: "1" });
    mcp.registerTool("t", { description: "t" }, () => ({ content: [] }));
    const client = await connectInMemory("v1-mcp", mcp);
    expect(await client.callTool("missing", {})).toMatchObject({ isError: true });
    await client.close();
  });
});

describe("2.4", () => {
  test("the callback sits in a closure `executor`: replacing `handler` does nothing", async () => {
    const mcp = new McpServerV2({ name: "f", version: "1" });
    const internals = mcp as unknown as Internals;
    mcp.registerTool("t", { description: "t" }, () => ({ content: [{ type: "text", text: "before" }] }));
    expect(typeof internals._registeredTools.t!.executor).toBe("function");
    internals._registeredTools.t!.handler = () => ({ content: [{ type: "text", text: "after" }] });
    const client = await connectInMemory("v2-mcp", mcp);
    expect(await client.callTool("t", {})).toMatchObject({ content: [{ text: "before" }] });
    await client.close();
  });

  test("an unknown tool is a thrown −32602", async () => {
    const mcp = new McpServerV2({ name: "f", version: "1" });
    mcp.registerTool("t", { description: "t" }, () => ({ content: [] }));
    const client = await connectInMemory("v2-mcp", mcp);
    await expect(client.callTool("missing", {})).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });

  test("Server._requestHandlers is a Map", () => {
    expect(new ServerV2({ name: "s", version: "1" }, { capabilities: { tools: {} } })).toHaveProperty("_requestHandlers", expect.any(Map));
  });
});

test("each shape is recognised with its major version", () => {
  const info = { name: "s", version: "1" };
  expect(recogniseServer(new McpServerV117(info))).toMatchObject({ kind: "mcp", major: 1 });
  expect(recogniseServer(new ServerV117(info))).toMatchObject({ kind: "server", major: 1 });
  expect(recogniseServer(new McpServerV1(info))).toMatchObject({ kind: "mcp", major: 1 });
  expect(recogniseServer(new ServerV1(info))).toMatchObject({ kind: "server", major: 1 });
  expect(recogniseServer(new McpServerV2(info))).toMatchObject({ kind: "mcp", major: 2 });
  expect(recogniseServer(new ServerV2(info))).toMatchObject({ kind: "server", major: 2 });
  expect(recogniseServer({ server: {}, _registeredTools: {} })).toBeNull();
});
