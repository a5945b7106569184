// One bench:sdk measurement in its own process (bench/sdk.ts starts it on Node 20 and on Node 22,
// bundled by esbuild so both run the same JavaScript). A watched McpServer and its unwatched twin,
// identical otherwise, live in this process; a real MCP client calls them over InMemoryTransport,
// and after every call the event loop turns once (a setImmediate), as it does between messages of
// a real stdio or HTTP transport, so the SDK's timers, its sends to the endpoint (a local HTTP
// server in the parent process) and their answers run between the calls, as in a server.
//
// Two modes:
// - `cpu watched` / `cpu twin`: only that side is called. The process's CPU time over every
//   thread (process.cpuUsage: the tool calls' thread, the garbage collector's helpers, libuv)
//   is read before and after the measured calls, the last send included. The parent runs the two
//   sides in alternating processes: the difference is what watch() costs the machine per call,
//   with nothing of one side's garbage collection or sends landing on the other's count.
// - `latency`: both sides called in one process, interleaved call by call (which goes first
//   alternates), each call timed: the added median and mean, as an independent harness measures.
//   The same process then times blocks of 1,000 calls per side, as bench:sdk used to.
// Prints one JSON line; the parent checks that its endpoint received every call payload.
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer as McpServerV2, InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/server";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { z } from "zod";
import { watch } from "../src/sdk/index.ts";
import { allDestinations, setTransportOverridesForTests } from "../src/sdk/destination.ts";
if (process.env.BENCH_SDK_POST === "noop") setTransportOverridesForTests({ post: async () => 202 });
import { argumentsFor, INPUT_SHAPE, RESULT, type ArgSize } from "./sdk-inputs.ts";

type Major = "1.x" | "2.x";
type Call = (args: Record<string, unknown>) => Promise<unknown>;

const [major, endpoint, key, size, mode, side, callsText] = process.argv.slice(2) as [Major, string, string, ArgSize, "cpu" | "latency", string, string];
const CALLS = Number(callsText);
const WARMUP = 3_000;
const BLOCK = 1_000;
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

async function connect(watched: boolean): Promise<Call> {
  const inputSchema = INPUT_SHAPE(z);
  if (major === "1.x") {
    const server = new McpServerV1({ name: "bench", version: "1.0.0" });
    server.registerTool("search", { description: "Search orders", inputSchema }, () => RESULT);
    if (watched) watch(server, { key, endpoint });
    const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
    await server.connect(serverSide);
    const client = new ClientV1({ name: "bench-client", version: "1.0.0" });
    await client.connect(clientSide);
    return (args) => client.callTool({ name: "search", arguments: args });
  }
  const server = new McpServerV2({ name: "bench", version: "1.0.0" });
  server.registerTool("search", { description: "Search orders", inputSchema }, () => RESULT);
  if (watched) watch(server, { key, endpoint });
  const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
  await server.connect(serverSide);
  const client = new ClientV2({ name: "bench-client", version: "1.0.0" });
  await client.connect(clientSide);
  return (args) => client.callTool({ name: "search", arguments: args });
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
const destination = () => allDestinations()[0];

/** Lets the watched server's send in flight finish (outside the latency timings). */
async function sendSettled(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (destination()?.buffer.sending && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
}

/** Sends everything still waiting, so the endpoint can count every call. */
async function drainAll(): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const d = destination();
    if (!d || Date.now() > deadline) return;
    if (!d.buffer.sending && d.buffer.size === 0) return;
    if (!d.buffer.sending) d.buffer.flush();
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

// 64 different argument objects, as parsed from the wire each time in a real server.
const argsList = Array.from({ length: 64 }, (_, i) => argumentsFor(size, i));

/** `count` calls, each followed by one event-loop turn; with `into`, each call's time in µs from `at`. */
async function run(call: Call, count: number, into?: Float64Array, at = 0): Promise<void> {
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await call(argsList[(at + i) & 63]!);
    await turn();
    if (into) into[at + i] = (performance.now() - started) * 1000;
  }
}

function heapAfterGc(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

/** CPU time of the whole process, every thread, in µs. */
function processCpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

const twin = await connect(false);
const watched = await connect(true);
let watchedCalls = 0;
let output: Record<string, unknown>;

if (mode === "cpu") {
  const call = side === "watched" ? watched : twin;
  await run(call, WARMUP);
  if (side === "watched") watchedCalls += WARMUP;
  await sendSettled();
  // Heap after 1,000 calls and after the last, each after two forced collections, outside the count.
  const heapKb: number[] = [];
  await run(call, BLOCK);
  if (side === "watched") watchedCalls += BLOCK;
  await sendSettled();
  heapKb.push(heapAfterGc() / 1024);
  const wallStart = performance.now();
  const cpuStart = processCpuUs();
  await run(call, CALLS);
  // The last send's work, wherever it runs, is part of the count.
  await sendSettled();
  const cpuUs = processCpuUs() - cpuStart;
  const wallUs = (performance.now() - wallStart) * 1000;
  if (side === "watched") watchedCalls += CALLS;
  heapKb.push(heapAfterGc() / 1024);
  output = { cpuUsPerCall: cpuUs / CALLS, wallUsPerCall: wallUs / CALLS, heapKb };
} else {
  await run(twin, WARMUP);
  await run(watched, WARMUP);
  watchedCalls += WARMUP;
  await sendSettled();
  // Interleaved, call by call: which side goes first alternates with every pair.
  const watchedUs = new Float64Array(CALLS);
  const twinUs = new Float64Array(CALLS);
  for (let i = 0; i < CALLS; i++) {
    if (i % 2 === 0) {
      await run(watched, 1, watchedUs, i);
      await run(twin, 1, twinUs, i);
    } else {
      await run(twin, 1, twinUs, i);
      await run(watched, 1, watchedUs, i);
    }
  }
  watchedCalls += CALLS;
  await sendSettled();
  // The former way: blocks of 1,000 per side, alternating which goes first; before a twin block the
  // watched side's send in flight is let finish.
  const blockWatchedUs = new Float64Array(CALLS);
  const blockTwinUs = new Float64Array(CALLS);
  for (let at = 0, index = 0; at < CALLS; at += BLOCK, index++) {
    const count = Math.min(BLOCK, CALLS - at);
    for (const which of index % 2 === 0 ? ["watched", "twin"] : ["twin", "watched"]) {
      if (which === "watched") {
        await run(watched, count, blockWatchedUs, at);
        await sendSettled();
      } else {
        await run(twin, count, blockTwinUs, at);
      }
    }
  }
  watchedCalls += CALLS;
  output = { watchedUs: [...watchedUs], twinUs: [...twinUs], blockWatchedUs: [...blockWatchedUs], blockTwinUs: [...blockTwinUs] };
}

await drainAll();
const d = destination()!;
process.stdout.write(
  `${JSON.stringify({
    node: process.version,
    major,
    size,
    mode,
    side,
    callsMade: watchedCalls,
    droppedOldest: d.buffer.droppedOldest,
    stillWaiting: d.buffer.size,
    ...output,
  })}\n`,
);
