// The MCP SDK internals watch() relies on (src/sdk/internals.ts): none is missing on the installed
// 1.17, 1.32 and 2.x packages (nor, under `npm run test:mcp-latest`, on the newest published 1.x and
// 2.x), and each one's absence is reported by its name.
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer as McpServerV117 } from "@modelcontextprotocol/sdk-1-17/server/mcp.js";
import { Server as ServerV117 } from "@modelcontextprotocol/sdk-1-17/server/index.js";
import { McpServer as McpServerV2, Server as ServerV2 } from "@modelcontextprotocol/server";
import { CHECKED_MCP_SDK_VERSIONS, MCP_SDK_INTERNALS, missingInternals, missingInternalsMessage } from "../../src/sdk/internals.ts";
import { connectInMemory } from "./helpers/fixtures.ts";

const info = { name: "s", version: "1" };
const tool = (mcp: { registerTool: (...args: never[]) => unknown }) =>
  (mcp.registerTool as (name: string, config: object, cb: () => object) => unknown)("t", { description: "t" }, () => ({ content: [] }));

describe("on the installed MCP SDKs", () => {
  test("no internal is missing, before and after a tool and a connection", async () => {
    const servers = [new McpServerV117(info), new McpServerV1(info), new McpServerV2(info)];
    for (const mcp of servers) tool(mcp as never);
    for (const server of [...servers, new ServerV117(info, { capabilities: { tools: {} } }), new ServerV1(info, { capabilities: { tools: {} } }), new ServerV2(info, { capabilities: { tools: {} } })]) {
      expect(missingInternals(server), server.constructor.name).toEqual([]);
    }
    const v2 = new McpServerV2(info);
    tool(v2 as never);
    const client = await connectInMemory("v2-mcp", v2);
    expect(missingInternals(v2)).toEqual([]);
    await client.close();
  });

  test.skipIf(process.env.MCP_LATEST_DIR !== undefined)("were checked on exactly the installed versions (CHECKED_MCP_SDK_VERSIONS is current)", () => {
    const versionOf = (pkg: string) => (JSON.parse(readFileSync(new URL(`../../node_modules/${pkg}/package.json`, import.meta.url), "utf8")) as { version: string }).version;
    expect([versionOf("@modelcontextprotocol/sdk-1-17"), versionOf("@modelcontextprotocol/sdk")]).toEqual(CHECKED_MCP_SDK_VERSIONS["@modelcontextprotocol/sdk"]);
    expect([versionOf("@modelcontextprotocol/server")]).toEqual(CHECKED_MCP_SDK_VERSIONS["@modelcontextprotocol/server"]);
  });
});

describe("a renamed internal is reported by name", () => {
  /** Moves `member` of `object` to another name, as a release that renames it would. */
  function rename(object: object, member: string): void {
    const record = object as Record<string, unknown>;
    const value = record[member];
    Object.defineProperty(record, member, { value: undefined, configurable: true, writable: true });
    record[`${member}Renamed`] = value;
  }

  test("Server._requestHandlers", () => {
    const low = new ServerV1(info, { capabilities: { tools: {} } });
    rename(low, "_requestHandlers");
    expect(missingInternals(low)).toEqual(["requestHandlers"]);
    const mcp = new McpServerV2(info);
    rename(mcp.server, "_requestHandlers");
    expect(missingInternals(mcp)).toEqual(["requestHandlers"]);
  });

  test("McpServer._registeredTools", () => {
    const mcp = new McpServerV1(info);
    rename(mcp, "_registeredTools");
    expect(missingInternals(mcp)).toEqual(["registeredTools"]);
  });

  test("the tool callback (1.17 callback, 1.32 handler, 2.x executor)", () => {
    for (const [mcp, member] of [[new McpServerV117(info), "callback"], [new McpServerV1(info), "handler"], [new McpServerV2(info), "executor"]] as const) {
      tool(mcp as never);
      rename((mcp as unknown as { _registeredTools: Record<string, object> })._registeredTools.t!, member);
      expect(missingInternals(mcp), member).toEqual(["toolCallback"]);
    }
  });

  test("the 2.x codec, server identity, negotiated revision and major hook", () => {
    for (const [member, key] of [["_negotiatedWireCodec", "negotiatedWireCodec"], ["_outboundServerInfo", "outboundServerInfo"], ["_wrapHandler", "wrapHandler"]] as const) {
      const low = new ServerV2(info, { capabilities: { tools: {} } });
      rename(low, member);
      expect(missingInternals(low), member).toContain(key);
    }
    const low = new ServerV2(info, { capabilities: { tools: {} } }) as unknown as Record<string, unknown>;
    delete low._negotiatedProtocolVersion;
    expect(missingInternals(low)).toEqual(["negotiatedProtocolVersion"]);
  });

  test("anything that is not an MCP server is null, and nothing throws (rule 1, never throw)", () => {
    expect(missingInternals(null)).toBeNull();
    expect(missingInternals({})).toBeNull();
    expect(missingInternals({ server: {} })).toBeNull();
    const hostile = new Proxy({}, { get() { throw new Error("boom"); } });
    expect(missingInternals(hostile)).toBeNull();
  });

  test("the message names the members and the checked versions", () => {
    const message = missingInternalsMessage(["negotiatedWireCodec", "toolCallback"]);
    expect(message).toContain(MCP_SDK_INTERNALS.negotiatedWireCodec.name);
    expect(message).toContain(MCP_SDK_INTERNALS.toolCallback.name);
    expect(message).toContain("1.32.2");
  });
});
