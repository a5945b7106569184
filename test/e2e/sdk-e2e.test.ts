// End to end: a real MCP client → servers with watch() (1.x McpServer and 2.x Server) → the
// worker running locally in Miniflare → the scheduled rollup → GET /v1/metrics/tools shows those
// calls with the right outcomes and first-call numbers (SPEC §2.1, §2.2, §3, §4).
import { afterAll, beforeAll, expect, test } from "vitest";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server as ServerV2, InMemoryTransport as InMemoryV2, ProtocolError } from "@modelcontextprotocol/server";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { z } from "zod";
import { watch } from "../../src/sdk/index.ts";
import { allDestinations } from "../../src/sdk/destination.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;
let project: { project_id: string; ingest_key: string; read_key: string };

beforeAll(async () => {
  // The real worker in Miniflare: wrangler's bundle, wrangler.toml's bindings, the migrations applied,
  // an ADMIN_TOKEN; the project is created through the admin route.
  worker = await startWorker();
  project = await createProject(worker, "sdk e2e");
});
afterAll(async () => {
  await worker?.stop();
});

const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });

test("calls made through watch() come back from /v1/metrics/tools after the rollup", async () => {
  const options = { key: project.ingest_key, endpoint: `${worker.url}/` };

  // Agreement, opt-in: three tools report one value; only verdicts travel.
  const prices = watch(new McpServer({ name: "prices", version: "1.0.0" }), {
    ...options,
    agree: { liquidity: { price_a: "data.value", price_b: "data.value", price_c: "value" } },
  });
  prices.registerTool("price_a", { description: "A" }, () => text('{"data":{"value":25.22}}'));
  prices.registerTool("price_b", { description: "B" }, () => ({ ...text("see structured"), structuredContent: { data: { value: "25.220" } } }));
  prices.registerTool("price_c", { description: "C" }, () => text('{"value":30}'));
  const [pricesClientSide, pricesServerSide] = InMemoryV1.createLinkedPair();
  await prices.connect(pricesServerSide);
  const carol = new ClientV1({ name: "carol-client", version: "1" });
  await carol.connect(pricesClientSide);
  for (const name of ["price_a", "price_b", "price_c"]) await carol.callTool({ name, arguments: {} });

  // 1.x McpServer, the high-level shape.
  const high = watch(new McpServer({ name: "orders", version: "1.0.0" }), options);
  high.registerTool("search", { description: "Search orders", inputSchema: { q: z.string() } }, ({ q }) => text(`found ${q}`));
  high.registerTool("lookup", { description: "Look an order up" }, () => text('{"id":1}'));
  high.registerTool("lookup_empty", { description: "Finds nothing" }, () => text("[]"));
  high.registerTool("refund", { description: "Refund" }, () => ({ ...text("not refundable"), isError: true }));
  high.registerTool("export", { description: "Export" }, () => {
    throw new Error("backend down");
  });
  high.registerTool("never_called", { description: "Registered, never called" }, () => text("x"));
  const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
  await high.connect(serverSide);
  const alice = new ClientV1({ name: "alice-client", version: "1" });
  await alice.connect(clientSide);

  await alice.callTool({ name: "search", arguments: { q: 5 } }); // bad_args …
  await alice.callTool({ name: "search", arguments: { q: "five" } }); // … and its retry (new hash, within 30 s)
  await alice.callTool({ name: "lookup", arguments: { id: 1 } });
  await new Promise((resolve) => setTimeout(resolve, 5));
  await alice.callTool({ name: "lookup", arguments: { id: 1 } }); // same hash: a repeat, not a retry
  await alice.callTool({ name: "lookup_empty", arguments: {} }); // ok but empty
  await alice.callTool({ name: "refund", arguments: {} }); // tool_error
  await alice.callTool({ name: "export", arguments: {} }); // crashed

  // 2.x low-level Server: the tools/call handler is the callback.
  const low = watch(new ServerV2({ name: "billing", version: "1.0.0" }, { capabilities: { tools: {} } }), options);
  low.setRequestHandler("tools/list", () => ({
    tools: [
      { name: "invoice", inputSchema: { type: "object" } },
      { name: "dormant", description: "Registered, never called", inputSchema: { type: "object" } },
    ],
  }));
  low.setRequestHandler("tools/call", async (request) => {
    if (typeof request.params.arguments?.n !== "number") throw new ProtocolError(-32602, "n must be a number");
    return text(`invoice ${request.params.arguments.n}`);
  });
  const [clientSide2, serverSide2] = InMemoryV2.createLinkedPair();
  await low.connect(serverSide2);
  const bob = new ClientV2({ name: "bob-client", version: "1" });
  await bob.connect(clientSide2);
  await bob.callTool({ name: "invoice", arguments: { n: "x" } }).catch(() => undefined); // bad_args
  await bob.callTool({ name: "invoice", arguments: { n: 7 } }); // its retry, ok

  // Deliver now (the SDK would on its 5 s interval or at exit), then wait for ingest's writes.
  await new Promise((resolve) => setTimeout(resolve, 20));
  await Promise.all(allDestinations().map((destination) => destination.buffer.flushFinal(5_000)));
  // Ingest answers 202 before it writes (SPEC §1.1): run the cron until all 12 calls are folded in.
  let body: { as_of: string | null; tools: Record<string, unknown>[] } = { as_of: null, tools: [] };
  const deadline = Date.now() + 15_000;
  do {
    await worker.runRollup();
    const response = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${project.read_key}` } });
    expect(response.status).toBe(200);
    body = (await response.json()) as typeof body;
    if (body.tools.reduce((sum, tool) => sum + (tool.calls as number), 0) >= 12) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  } while (Date.now() < deadline);
  expect(body.tools.reduce((sum, tool) => sum + (tool.calls as number), 0)).toBe(12);
  expect(body.as_of).not.toBeNull();
  const row = (name: string) => body.tools.find((tool) => tool.tool_name === name);
  const pick = (name: string) => {
    const tool = row(name);
    return tool && {
      calls: tool.calls, ok: tool.ok, empty: tool.empty, bad_args: tool.bad_args, tool_error: tool.tool_error, crashed: tool.crashed,
      retries: tool.retries, first_call_attempts: tool.first_call_attempts, first_call_ok: tool.first_call_ok,
    };
  };
  expect(pick("search")).toEqual({ calls: 2, ok: 1, empty: 0, bad_args: 1, tool_error: 0, crashed: 0, retries: 1, first_call_attempts: 1, first_call_ok: 0 });
  expect(pick("lookup")).toEqual({ calls: 2, ok: 2, empty: 0, bad_args: 0, tool_error: 0, crashed: 0, retries: 0, first_call_attempts: 2, first_call_ok: 2 });
  expect(pick("lookup_empty")).toEqual({ calls: 1, ok: 1, empty: 1, bad_args: 0, tool_error: 0, crashed: 0, retries: 0, first_call_attempts: 1, first_call_ok: 0 });
  expect(pick("refund")).toEqual({ calls: 1, ok: 0, empty: 0, bad_args: 0, tool_error: 1, crashed: 0, retries: 0, first_call_attempts: 1, first_call_ok: 0 });
  expect(pick("export")).toEqual({ calls: 1, ok: 0, empty: 0, bad_args: 0, tool_error: 0, crashed: 1, retries: 0, first_call_attempts: 1, first_call_ok: 0 });
  expect(pick("invoice")).toEqual({ calls: 2, ok: 1, empty: 0, bad_args: 1, tool_error: 0, crashed: 0, retries: 1, first_call_attempts: 1, first_call_ok: 0 });
  // The latest startup wins (SPEC §2.4): the 2.x server's, so the 1.x server's tools are
  // reported as called but not registered.
  expect(row("search")).toMatchObject({ first_call_rate: 0, error_rate: 0.5, registered: false });
  expect(row("lookup")).toMatchObject({ first_call_rate: 1, empty_rate: 0 });
  expect(row("lookup_empty")).toMatchObject({ empty_rate: 1, error_rate: 0 });
  expect(row("invoice")).toMatchObject({ registered: true, dead: false, first_call_rate: 0 });
  expect(row("dormant")).toMatchObject({ registered: true, dead: true, calls: 0 });
  expect(row("never_called")).toBeUndefined();

  // Split by client: each server's calls carry its own client's name.
  const byClient = await fetch(`${worker.url}/v1/metrics/tools?client=bob-client`, { headers: { authorization: `Bearer ${project.read_key}` } });
  const bobTools = ((await byClient.json()) as { tools: Record<string, unknown>[] }).tools.filter((tool) => (tool.calls as number) > 0);
  expect(bobTools.map((tool) => tool.tool_name)).toEqual(["invoice"]);

  const agreement = (await (
    await fetch(`${worker.url}/v1/metrics/agreement`, { headers: { authorization: `Bearer ${project.read_key}` } })
  ).json()) as { agreement: { field: string; tool_a: string; tool_b: string; checks: number; disagreements: number }[] };
  expect(agreement.agreement.map((r) => [r.field, r.tool_a, r.tool_b, r.checks, r.disagreements]).sort()).toEqual([
    ["liquidity", "price_a", "price_b", 1, 0],
    ["liquidity", "price_a", "price_c", 1, 1],
    ["liquidity", "price_b", "price_c", 1, 1],
  ]);

  await alice.close();
  await bob.close();
  await carol.close();
});
