// One bench:sdk measurement of the SDK's own work per call (bench/sdk.ts starts it on Node 20 and
// 22): no MCP client, no transport, no Zod, no network. The instrumented `tools/call` entry of an
// McpServer is called directly, around a plain handler that runs the tool's callback as McpServer
// does; sends are answered at once (the batch's JSON is still made). Three servers in one process:
// unwatched (the twin), watched by the former SDK, watched by this tree's; rounds of calls taken by
// turns, each side's lowest CPU per call kept. What is left when the twin's is taken away is the
// SDK's code alone — the canonical JSON, its hash, the payload, the batch's JSON — steady to a few
// tenths of a µs where the all-in figure moves by several µs with the machine's neighbours.
// Prints one JSON line.
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { McpServer as McpServerV2 } from "@modelcontextprotocol/server";
import { z } from "zod";
import { watch } from "../src/sdk/index.ts";
import { setTransportOverridesForTests } from "../src/sdk/destination.ts";
// Resolved to the former SDK's tree by bench/sdk.ts (to this tree's when there is none).
import { watch as formerWatch } from "former-sdk/index";
import { setTransportOverridesForTests as formerOverrides } from "former-sdk/destination";
import { argumentsFor, INPUT_SHAPE, RESULT, type ArgSize } from "./sdk-inputs.ts";

type Major = "1.x" | "2.x";
type Handler = (request: unknown, extra: unknown) => Promise<unknown>;
type Watch = (server: unknown, options: { key: string; endpoint: string }) => unknown;

const [major, size, roundsText] = process.argv.slice(2) as [Major, ArgSize, string];
const ROUNDS = Number(roundsText);
const CALLS = size === "10 KB" ? 8_000 : 40_000;
const KEY = "mk_live_0123456789abcdef0123456789abcdef0123";

setTransportOverridesForTests({ post: async () => 202 });
formerOverrides({ post: async () => 202 });

function toolsCallEntry(watchWith: Watch | null, endpoint: string): Handler {
  const server = major === "1.x" ? new McpServerV1({ name: "bench", version: "1.0.0" }) : new McpServerV2({ name: "bench", version: "1.0.0" });
  (server as unknown as { registerTool: (...args: unknown[]) => void }).registerTool("search", { description: "Search orders", inputSchema: INPUT_SHAPE(z) }, () => RESULT);
  if (watchWith) watchWith(server, { key: KEY, endpoint });
  const tools = (server as unknown as { _registeredTools: Record<string, Record<string, (...args: unknown[]) => unknown>> })._registeredTools;
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers;
  // Set after watch(): the SDK's hook on the map wraps it as it wraps McpServer's own.
  handlers.set("tools/call", (request, extra) => {
    const { params } = request as { params: { name: string; arguments: unknown } };
    const tool = tools[params.name]!;
    // 2.x calls the tool's `executor`, 1.x its `handler` (SPEC §4 "Facts about the MCP SDKs").
    const run = tool.executor ?? tool.handler ?? tool.callback;
    return Promise.resolve(run!(params.arguments, extra));
  });
  return handlers.get("tools/call")!;
}

const sides: Record<"twin" | "former" | "current", Handler> = {
  twin: toolsCallEntry(null, ""),
  former: toolsCallEntry(formerWatch as Watch, "http://127.0.0.1:1"),
  current: toolsCallEntry(watch as Watch, "http://127.0.0.1:2"),
};

// Arguments as parsed from the wire (4,096 objects, each used ~10 times), and a signal per request.
const texts = Array.from({ length: 64 }, (_, i) => JSON.stringify(argumentsFor(size, i)));
const args = Array.from({ length: 4096 }, (_, i) => JSON.parse(texts[i & 63]!) as unknown);
const controllers = Array.from({ length: 4096 }, () => new AbortController());
const noop = async () => undefined;
const extraOf = (i: number) =>
  major === "1.x"
    ? { signal: controllers[i & 4095]!.signal, requestId: i, sendNotification: noop, sendRequest: noop }
    : { sessionId: undefined, mcpReq: { id: i, method: "tools/call", _meta: undefined, signal: controllers[i & 4095]!.signal, send: noop, notify: noop, requestState: () => undefined } };

async function round(handler: Handler): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) {
    await handler({ method: "tools/call", params: { name: "search", arguments: args[i & 4095] } }, extraOf(i));
    // A macrotask now and then, so the buffer's scheduled flushes run as in a server.
    if ((i & 31) === 31) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / CALLS;
}

const names = Object.keys(sides) as (keyof typeof sides)[];
const lowest = Object.fromEntries(names.map((name) => [name, Number.POSITIVE_INFINITY])) as Record<keyof typeof sides, number>;
for (const name of names) await round(sides[name]); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (let i = 0; i < names.length; i++) {
    const name = names[(i + r) % names.length]!;
    lowest[name] = Math.min(lowest[name], await round(sides[name]));
  }
}
process.stdout.write(`${JSON.stringify({ node: process.version, major, size, twinUs: lowest.twin, currentUs: lowest.current - lowest.twin, formerUs: lowest.former - lowest.twin })}\n`);
