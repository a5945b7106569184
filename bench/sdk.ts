// `npm run bench:sdk`: what watch() adds to a tool call (SPEC §4 rule 2, issue 6 targets).
// 10,000 calls with ~1 KB arguments over InMemoryTransport, watched and unwatched in the same
// run, alternating call by call, for the 1.x and the 2.x SDK. Targets: median added time per call
// ≤ 15 µs (1.x) and ≤ 20 µs (2.x); no growth in added time or heap from the first to the last
// thousand calls. The endpoint is a local HTTP server that discards what it receives. Results go
// to the bench:sdk section of docs/benchmarks.md.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { McpServer as McpServerV1 } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport as InMemoryV1 } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpServer as McpServerV2, InMemoryTransport as InMemoryV2 } from "@modelcontextprotocol/server";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { z } from "zod";
import { watch } from "../src/sdk/index.ts";
import { allDestinations } from "../src/sdk/session.ts";
import { argsHash, canonicalize, sha256Hex12 } from "../src/shared/index.ts";

const CALLS = 10_000;
const WARMUP = 2_000;
const BLOCK = 1_000;
const TARGET_US = { "1.x": 15, "2.x": 20 } as const;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc (npm run bench:sdk does)");

// ~1 KB of arguments, shaped like a real search call.
function argumentsFor(i: number) {
  return {
    query: `quarterly revenue by region and product line, call ${i}`,
    limit: 25,
    offset: i % 100,
    filters: { region: "EMEA", active: true, currency: "EUR", segment: ["enterprise", "mid-market", "smb"], since: "2026-01-01" },
    fields: ["id", "customer", "amount", "currency", "status", "created_at", "updated_at", "owner", "region", "product"],
    sort: [{ field: "amount", direction: "desc" }, { field: "created_at", direction: "asc" }],
    ids: Array.from({ length: 40 }, (_, k) => 100_000 + k * 7),
    note: "Customer asked for the breakdown before the board meeting; include refunds and credit notes as negatives, and split anything booked in the last week of the quarter into its own line so finance can reconcile it.",
    requested_by: { team: "finance-ops", channel: "#revenue-reporting" },
  };
}
const ARGS_BYTES = JSON.stringify(argumentsFor(0)).length;

const inputShape = {
  query: z.string(),
  limit: z.number(),
  offset: z.number(),
  filters: z.record(z.string(), z.unknown()),
  fields: z.array(z.string()),
  sort: z.array(z.object({ field: z.string(), direction: z.string() })),
  ids: z.array(z.number()),
  note: z.string(),
};
const result = { content: [{ type: "text" as const, text: '{"rows":[{"id":1,"amount":1200.5}],"total":1}' }] };

type Call = (args: Record<string, unknown>) => Promise<unknown>;

async function connect(major: "1.x" | "2.x", endpoint: string | null, key: string): Promise<Call> {
  if (major === "1.x") {
    const server = new McpServerV1({ name: "bench", version: "1.0.0" });
    server.registerTool("search", { description: "Search orders", inputSchema: inputShape }, () => result);
    if (endpoint) watch(server, { key, endpoint });
    const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
    await server.connect(serverSide);
    const client = new ClientV1({ name: "bench-client", version: "1.0.0" });
    await client.connect(clientSide);
    return (args) => client.callTool({ name: "search", arguments: args });
  }
  const server = new McpServerV2({ name: "bench", version: "1.0.0" });
  server.registerTool("search", { description: "Search orders", inputSchema: inputShape }, () => result);
  if (endpoint) watch(server, { key, endpoint });
  const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
  await server.connect(serverSide);
  const client = new ClientV2({ name: "bench-client", version: "1.0.0" });
  await client.connect(clientSide);
  return (args) => client.callTool({ name: "search", arguments: args });
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Lets the event loop turn until every buffered payload has been sent (outside the timings). */
async function drained(): Promise<void> {
  const deadline = Date.now() + 5_000;
  do {
    await new Promise((resolve) => setTimeout(resolve, 5));
  } while (allDestinations().some((d) => d.buffer.size > 0 || d.buffer.sending) && Date.now() < deadline);
}

function heapAfterGc(): number {
  gc!();
  gc!();
  return process.memoryUsage().heapUsed;
}

interface Row {
  major: "1.x" | "2.x";
  unwatchedMedianUs: number;
  watchedMedianUs: number;
  addedMedianUs: number;
  addedFirstThousandUs: number;
  addedLastThousandUs: number;
  heapFirstKb: number;
  heapLastKb: number;
  heapMinKb: number;
  heapMaxKb: number;
  targetUs: number;
}

async function run(major: "1.x" | "2.x", endpoint: string): Promise<Row> {
  const plain = await connect(major, null, "");
  const watched = await connect(major, endpoint, `mp_live_bench_${major}`);
  const argsList = Array.from({ length: 64 }, (_, i) => argumentsFor(i));
  for (let i = 0; i < WARMUP; i++) {
    await plain(argsList[i % 64]!);
    await watched(argsList[i % 64]!);
  }
  const plainUs: number[] = [];
  const watchedUs: number[] = [];
  const heapAtBlock: number[] = [];
  for (let block = 0; block < CALLS / BLOCK; block++) {
    // Outside the timed calls: let the SDK's sends complete, then read the heap after a full GC.
    await drained();
    heapAtBlock.push(heapAfterGc());
    for (let i = 0; i < BLOCK; i++) {
      const args = argsList[i % 64]!;
      // Alternate which goes first so neither always runs on a warmer cache.
      if (i % 2 === 0) {
        let t = performance.now();
        await plain(args);
        plainUs.push((performance.now() - t) * 1000);
        t = performance.now();
        await watched(args);
        watchedUs.push((performance.now() - t) * 1000);
      } else {
        let t = performance.now();
        await watched(args);
        watchedUs.push((performance.now() - t) * 1000);
        t = performance.now();
        await plain(args);
        plainUs.push((performance.now() - t) * 1000);
      }
    }
  }
  await drained();
  heapAtBlock.push(heapAfterGc());
  const added = (from: number, to: number) => median(watchedUs.slice(from, to)) - median(plainUs.slice(from, to));
  return {
    major,
    unwatchedMedianUs: median(plainUs),
    watchedMedianUs: median(watchedUs),
    addedMedianUs: median(watchedUs) - median(plainUs),
    addedFirstThousandUs: added(0, BLOCK),
    addedLastThousandUs: added(CALLS - BLOCK, CALLS),
    heapFirstKb: heapAtBlock[1]! / 1024,
    heapLastKb: heapAtBlock[heapAtBlock.length - 1]! / 1024,
    heapMinKb: Math.min(...heapAtBlock.slice(1)) / 1024,
    heapMaxKb: Math.max(...heapAtBlock.slice(1)) / 1024,
    targetUs: TARGET_US[major],
  };
}

function timeIt(fn: () => unknown, iterations = 20_000): number {
  for (let i = 0; i < 2_000; i++) fn();
  const start = performance.now();
  for (let i = 0; i < iterations; i++) fn();
  return ((performance.now() - start) * 1000) / iterations;
}

// The discarding endpoint.
let received = 0;
const sink = createServer((request, response) => {
  request.on("data", () => undefined);
  request.on("end", () => {
    received++;
    response.writeHead(202).end();
  });
});
await new Promise<void>((resolve) => sink.listen(0, "127.0.0.1", resolve));
const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

const rows: Row[] = [];
for (const major of ["1.x", "2.x"] as const) rows.push(await run(major, endpoint));
const canonicalText = canonicalize(argumentsFor(0));
const hashedArguments = argumentsFor(7);
const argsHashUs = timeIt(() => argsHash(hashedArguments));
const sha256Us = timeIt(() => sha256Hex12(canonicalText));
sink.close();

const fmt = (us: number) => `${us.toFixed(1)} µs`;
const lines: string[] = [];
lines.push("## SDK overhead (`npm run bench:sdk`)");
lines.push("");
lines.push(
  `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, Node ${process.version}, ${cpus().length} shared CPUs. ` +
    `${CALLS.toLocaleString("en")} \`tools/call\` requests with ${ARGS_BYTES}-character arguments (validated by a Zod input schema) ` +
    `over InMemoryTransport, after ${WARMUP.toLocaleString("en")} warm-up calls; each watched call alternates with an unwatched call ` +
    `to an identical server in the same process (the baseline). Watched servers send to a local HTTP endpoint that discards ` +
    `(${received} requests received). Heap is \`heapUsed\` after two forced GCs, read after every 1,000 calls once the SDK's buffer has drained.`,
);
lines.push("");
lines.push("| MCP SDK | unwatched median | watched median | added (median) | target | added, first 1,000 | added, last 1,000 | heap after 1,000 | heap after 10,000 | heap range, every 1,000 |");
lines.push("|---|---|---|---|---|---|---|---|---|---|");
for (const row of rows) {
  lines.push(
    `| ${row.major} | ${fmt(row.unwatchedMedianUs)} | ${fmt(row.watchedMedianUs)} | **${fmt(row.addedMedianUs)}** | ≤ ${row.targetUs} µs ${row.addedMedianUs <= row.targetUs ? "(met)" : "(MISSED)"} | ${fmt(row.addedFirstThousandUs)} | ${fmt(row.addedLastThousandUs)} | ${(row.heapFirstKb / 1024).toFixed(2)} MiB | ${(row.heapLastKb / 1024).toFixed(2)} MiB | ${(row.heapMinKb / 1024).toFixed(2)}–${(row.heapMaxKb / 1024).toFixed(2)} MiB |`,
  );
}
lines.push("");
lines.push(
  `For scale, measured in the same run: \`argsHash\` of these arguments (canonical JSON + SHA-256) takes ${fmt(argsHashUs)}; ` +
    `SHA-256 alone of the same canonical text ${fmt(sha256Us)}. The added time is the hash plus recording ` +
    `(result size, is_empty, the payload object, the buffer push) and the wrappers around the handler and the tool callback.`,
);
lines.push("");
lines.push(
  "InMemoryTransport delivers on microtasks, so inside each block of 1,000 awaited calls no timer or socket event runs: " +
    "the first flush's request cannot progress, the buffer reaches its 1,000-payload cap and drops the oldest (SPEC §4), " +
    "and memory stays flat by design. Between blocks the event loop turns and the sends complete; the timings exclude those pauses.",
);
const section = lines.join("\n");
console.log(section);

writeBenchmarkSection("sdk", section);
