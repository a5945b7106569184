// Caps the SDK applies before sending (SPEC §1.2, §4), each at, just under and just over.
import { expect, test } from "vitest";
import { Server as ServerV1 } from "@modelcontextprotocol/sdk/server/index.js";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { watch } from "../../src/sdk/index.ts";
import { captureForFile } from "./helpers/capture-server.ts";
import { connectInMemory } from "./helpers/fixtures.ts";

const capture = captureForFile();

let counter = 0;
const ofKey = capture.ofKey;
async function waitFor(key: string, type: string, count: number) {
  const deadline = Date.now() + 5_000;
  while (ofKey(key, type).length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return ofKey(key, type);
}

/** A low-level server listing exactly these tools (every one answers "ok"). */
function listing(tools: { name: string; description?: string }[]) {
  const server = new ServerV1({ name: "limits", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map((tool) => ({ ...tool, inputSchema: { type: "object" as const } })) }));
  server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: "text" as const, text: "ok" }] }));
  return server;
}

test.each([
  [127, 127],
  [128, 128],
  [129, 128],
  [0, "unknown"],
] as const)("a client name of %s characters is sent as %s", async (length, expected) => {
  const key = `mp_live_limits_client_${++counter}`;
  const name = "c".repeat(length);
  const client = await connectInMemory("v1-mcp", watch(listing([{ name: "t" }]), { key, endpoint: capture.url }), name);
  await client.callTool("t", {});
  const [call] = await waitFor(key, "call", 1);
  const [startup] = await waitFor(key, "startup", 1);
  const sent = expected === "unknown" ? "unknown" : "c".repeat(expected);
  expect(call!.client_name).toBe(sent);
  expect(startup!.client_name).toBe(sent);
  await client.close();
});

test.each([
  [499, 499],
  [500, 500],
  [501, 500],
])("a tools/list of %s tools gives a startup of %s", async (count, expected) => {
  const key = `mp_live_limits_tools_${++counter}`;
  const tools = Array.from({ length: count }, (_, i) => ({ name: `tool_${i}` }));
  const client = await connectInMemory("v1-server", watch(listing(tools), { key, endpoint: capture.url }));
  const [startup] = await waitFor(key, "startup", 1);
  expect((startup!.tools as unknown[]).length).toBe(expected);
  await client.close();
});

test("tool names of 200 characters are kept; a 201-character name or a repeated name is left out, not the whole startup", async () => {
  const key = `mp_live_limits_names_${++counter}`;
  const tools = [{ name: "a".repeat(199) }, { name: "b".repeat(200) }, { name: "c".repeat(201) }, { name: "dup" }, { name: "dup", description: "again" }];
  const client = await connectInMemory("v1-server", watch(listing(tools), { key, endpoint: capture.url }));
  const [startup] = await waitFor(key, "startup", 1);
  expect((startup!.tools as { name: string }[]).map((tool) => tool.name.length)).toEqual([199, 200, 3]);
  await client.close();
});

test("a startup after each initialize; an empty tool list is still a startup", async () => {
  const key = `mp_live_limits_reinit_${++counter}`;
  const first = await connectInMemory("v1-server", watch(listing([]), { key, endpoint: capture.url }), "first");
  const second = await connectInMemory("v1-server", watch(listing([{ name: "x" }]), { key, endpoint: capture.url }), "second");
  const startups = await waitFor(key, "startup", 2);
  // Every field of the startup is present, agree_declared empty without `agree`.
  expect(Object.keys(startups[0]!).sort()).toEqual(
    ["agree_declared", "client_name", "mcp_sdk_version", "protocol_version", "sdk", "session_id", "tools", "transport", "type", "v"],
  );
  expect(startups[0]!.agree_declared).toEqual([]);
  expect(Object.keys((startups[1]!.tools as object[])[0]!).sort()).toEqual(
    ["description_hash", "description_norm", "name", "policy", "schema_bytes", "schema_hash"],
  );
  expect(startups.map((p) => [p.client_name, (p.tools as unknown[]).length])).toEqual([
    ["first", 0],
    ["second", 1],
  ]);
  // Two connections are two conversations, each with its own startup (SPEC §4).
  expect(new Set(startups.map((p) => p.session_id)).size).toBe(2);
  await first.close();
  await second.close();
});

test("policy flags are sent as declared, both or either", async () => {
  const key = `mp_live_limits_policy_${++counter}`;
  const server = new McpServerV1({ name: "p", version: "1" });
  for (const name of ["both", "auth", "identity", "none"]) server.registerTool(name, { description: name }, () => ({ content: [] }));
  watch(server, {
    key,
    endpoint: capture.url,
    policy: {
      both: { requires_authorization: true, requires_verified_identity: true },
      auth: { requires_authorization: true },
      identity: { requires_verified_identity: true },
    },
  });
  const client = await connectInMemory("v1-mcp", server);
  const [startup] = await waitFor(key, "startup", 1);
  expect(Object.fromEntries((startup!.tools as { name: string; policy: unknown }[]).map((tool) => [tool.name, tool.policy]))).toEqual({
    both: { requires_authorization: true, requires_verified_identity: true },
    auth: { requires_authorization: true, requires_verified_identity: false },
    identity: { requires_authorization: false, requires_verified_identity: true },
    none: null,
  });
  await client.close();
});
