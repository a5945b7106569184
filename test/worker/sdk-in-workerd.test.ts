// The producer SDK runs in workerd too (SPEC §4): watch a real McpServer of each SDK major inside
// the Workers runtime, call its tools, and check what would be sent (captured in-process).
import { afterEach, expect, test } from "vitest";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer as McpServerV2, InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/server";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { watch } from "../../src/sdk/index.ts";
import { allDestinations, setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { defaultPostJson, postWithFetch } from "../../src/sdk/transport.ts";
import { payloadSchema } from "../../src/shared/index.ts";

afterEach(() => setTransportOverridesForTests({}));

test("in workerd the SDK sends with fetch", () => {
  expect(navigator.userAgent).toBe("Cloudflare-Workers");
  expect(defaultPostJson()).toBe(postWithFetch);
});

test.each(["1.x", "2.x"] as const)("watch() instruments a %s McpServer inside workerd", async (major) => {
  const bodies: { url: string; key: string; body: string }[] = [];
  setTransportOverridesForTests({
    post: async (url, key, body) => {
      bodies.push({ url, key, body });
      return 202;
    },
  });
  const key = `mp_live_workerd_${major}`;
  const register = (server: McpServerV1 | McpServerV2) => {
    const add = server.registerTool.bind(server) as (name: string, config: object, cb: () => unknown) => void;
    add("ok_tool", { description: "Answers" }, () => ({ content: [{ type: "text", text: "fine" }] }));
    add("empty_tool", { description: "Answers []" }, () => ({ content: [{ type: "text", text: "[]" }] }));
    add("broken_tool", { description: "Throws" }, () => {
      throw new Error("nope");
    });
  };
  let call: (name: string) => Promise<unknown>;
  if (major === "1.x") {
    const server = watch(new McpServerV1({ name: "w", version: "1" }), { key, endpoint: "https://ingest.example.com/" });
    register(server);
    const [a, b] = InMemoryV1.createLinkedPair();
    await server.connect(b);
    const client = new ClientV1({ name: "workerd-client", version: "1" });
    await client.connect(a);
    call = (name) => client.callTool({ name, arguments: { x: 1 } });
  } else {
    const server = watch(new McpServerV2({ name: "w", version: "1" }), { key, endpoint: "https://ingest.example.com/" });
    register(server);
    const [a, b] = InMemoryV2.createLinkedPair();
    await server.connect(b);
    const client = new ClientV2({ name: "workerd-client", version: "1" });
    await client.connect(a);
    call = (name) => client.callTool({ name, arguments: { x: 1 } });
  }
  await call("ok_tool");
  await call("empty_tool");
  await call("broken_tool");
  await new Promise((resolve) => setTimeout(resolve, 10));
  const destination = allDestinations().find((d) => d.key === key)!;
  await destination.buffer.flushFinal();
  expect(bodies.every((b) => b.url === "https://ingest.example.com/v1/ingest" && b.key === key)).toBe(true);
  const payloads = bodies.flatMap((b) => (JSON.parse(b.body) as { batch: Record<string, unknown>[] }).batch);
  for (const payload of payloads) expect(payloadSchema.safeParse(payload).success).toBe(true);
  expect(payloads.filter((p) => p.type === "call").map((p) => [p.tool_name, p.outcome, p.is_empty, p.client_name])).toEqual([
    ["ok_tool", "ok", false, "workerd-client"],
    ["empty_tool", "ok", true, "workerd-client"],
    ["broken_tool", "crashed", false, "workerd-client"],
  ]);
  const startup = payloads.find((p) => p.type === "startup")!;
  expect(startup).toMatchObject({ transport: "unknown", mcp_sdk_version: null, sdk: "mcpulse-edge-ts/0.1.0" });
});
