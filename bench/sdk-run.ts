// One bench:sdk measurement in its own process (bench/sdk.ts starts it on Node 20 and on Node 22,
// bundled by esbuild so both run the same JavaScript). A watched server and its unwatched twin,
// identical otherwise, in this process; a real MCP client calls each over InMemoryTransport, and
// after every call the event loop turns once (a setImmediate), as it does between messages of a
// real stdio or HTTP transport: the SDK's timers, its sends to the endpoint (a local HTTP server in
// the parent process answering 202 at once) and their responses run inside the measured windows.
// Calls go in blocks of 1,000, watched and twin alternating which goes first; before a twin block
// the watched server's send in flight is let finish, so none of its work lands in a twin window.
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
import { argumentsFor, INPUT_SHAPE, RESULT } from "./sdk-inputs.ts";

type Major = "1.x" | "2.x";
type Call = (args: Record<string, unknown>) => Promise<unknown>;

const [major, endpoint, key, roundsText, callsText, only] = process.argv.slice(2) as [Major, string, string, string, string, string | undefined];
const ROUNDS = Number(roundsText);
const CALLS = Number(callsText);
const BLOCK = 1_000;
const WARMUP = 3_000;
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

/** Outside the timings: lets the watched server's send in flight finish. */
async function sendSettled(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (destination()?.buffer.sending && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
}

/** Outside the timings: sends everything still waiting, so the endpoint can count every call. */
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

const argsList = Array.from({ length: 64 }, (_, i) => argumentsFor(i));

/**
 * `count` calls, each followed by one event-loop turn, timed one by one into `into` from `at`;
 * with `waiting`, also how many payloads the watched side's buffer held after each call (read
 * after the clock stops): 0 after the call whose turn sent a batch, 1 after the next, and so on.
 */
async function block(call: Call, into: Float64Array, at: number, count: number, waiting?: Int32Array): Promise<void> {
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await call(argsList[(at + i) & 63]!);
    await turn();
    into[at + i] = (performance.now() - started) * 1000;
    if (waiting) waiting[at + i] = destination()?.buffer.size ?? -1;
  }
}

function heapAfterGc(): number {
  if (only) return process.memoryUsage().heapUsed; // a profile run: no forced collections in it
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

const plain = await connect(false);
const watched = await connect(true);
// Warm-up with the same event-loop turns, so V8's tiering has settled and the keep-alive socket is open.
const scratch = new Float64Array(WARMUP);
await block(plain, scratch, 0, WARMUP);
await block(watched, scratch, 0, WARMUP);
await sendSettled();

/** CPU time of the whole process, every thread, in µs. */
function processCpuUs(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

const rounds: { watchedUs: number[]; plainUs: number[]; heapKb: number[]; waiting: number[]; watchedCpuUs: number; plainCpuUs: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const watchedUs = new Float64Array(CALLS);
  const plainUs = new Float64Array(CALLS);
  const waiting = new Int32Array(CALLS);
  const heapKb: number[] = [];
  let watchedCpuUs = 0;
  let plainCpuUs = 0;
  await sendSettled();
  heapKb.push(heapAfterGc() / 1024);
  for (let at = 0, index = 0; at < CALLS; at += BLOCK, index++) {
    const count = Math.min(BLOCK, CALLS - at);
    const watchedFirst = (index + round) % 2 === 0;
    for (const side of watchedFirst ? ["watched", "plain"] : ["plain", "watched"]) {
      const cpuBefore = processCpuUs();
      if (side === "watched") {
        if (only !== "plain") await block(watched, watchedUs, at, count, waiting);
        // The block's sends finish inside its CPU count, wherever they ran.
        await sendSettled();
        watchedCpuUs += processCpuUs() - cpuBefore;
      } else if (only !== "watched") {
        await block(plain, plainUs, at, count);
        plainCpuUs += processCpuUs() - cpuBefore;
      }
    }
    heapKb.push(heapAfterGc() / 1024);
  }
  rounds.push({ watchedUs: [...watchedUs], plainUs: [...plainUs], heapKb, waiting: [...waiting], watchedCpuUs, plainCpuUs });
}
await drainAll();
const d = destination()!;
const callsMade = WARMUP + (only === "plain" ? 0 : ROUNDS * CALLS);
process.stdout.write(
  `${JSON.stringify({
    node: process.version,
    major,
    callsMade,
    droppedOldest: d.buffer.droppedOldest,
    stillWaiting: d.buffer.size,
    rounds,
  })}\n`,
);
