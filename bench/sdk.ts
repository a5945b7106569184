// `npm run bench:sdk`: what watch() adds to a tool call with its sends running (SPEC §4 rule 2,
// issue 12). bench/sdk-run.ts measures, in a child process per Node version and MCP SDK major, a
// watched server against its unwatched twin with one event-loop turn after every call; this script
// bundles it once, hosts the ingest endpoint (a local HTTP server answering 202 at once, in this
// process so its work never lands in the measured one, and parsing the bodies only once a run is
// over, so that work does not take a CPU from the measured process either), checks that it
// received every call payload,
// and writes the bench:sdk section of docs/benchmarks.md. `-- --profile` also writes CPU profiles
// of a watched-only and a twin-only run per major (Node 22, or the Node BENCH_SDK_NODE picks) and
// prints where the time goes: the top functions, and the SDK's share of each watched run's samples
// by module.
// For attribution (printed, not written): BENCH_SDK_POST=noop replaces the HTTP send by a poster
// that answers 202 at once (the batch's JSON is still made); BENCH_SDK_NODE=20 or 22 runs one Node,
// BENCH_SDK_MAJOR=1.x or 2.x one MCP SDK major.
import { spawnSync, spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { build } from "esbuild";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { ARGS_CHARS, argumentsFor, RESULT } from "./sdk-inputs.ts";
import { argsHash, canonicalize } from "../src/shared/index.ts";
import { callArgsHash } from "../src/sdk/args-hash.ts";
import { wireTimestamp } from "../src/sdk/clock.ts";

const ROUNDS = 5;
const CALLS = 10_000;
const TARGET_US = { "1.x": 15, "2.x": 20 } as const;
type Major = keyof typeof TARGET_US;

// BENCH_SDK_MAJOR=1.x or 2.x runs one MCP SDK major (printed only, like BENCH_SDK_NODE).
const majors = (["1.x", "2.x"] as const).filter((major) => process.env.BENCH_SDK_MAJOR === undefined || process.env.BENCH_SDK_MAJOR === major);

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cacheDir = join(root, "node_modules", ".cache", "mcpulse-edge-bench");
const runner = join(cacheDir, "sdk-run.mjs");
mkdirSync(cacheDir, { recursive: true });
// Bundled so Node 20 (no type stripping) and Node 22 run the same JavaScript; the MCP SDKs and
// Zod stay external, resolved from node_modules as a real server resolves them.
await build({
  entryPoints: [join(root, "bench", "sdk-run.ts")],
  bundle: true,
  format: "esm",
  platform: "node",
  target: "node20",
  external: ["@modelcontextprotocol/*", "zod"],
  outfile: runner,
  logLevel: "warning",
});

// The system Node (20 on the reference machine): `node` from PATH without node_modules/.bin, which
// npm puts first (with Node 22 from devDependencies); Node 22 from the `node` devDependency.
const systemPath = (process.env.PATH ?? "").split(":").filter((dir) => !dir.includes("node_modules")).join(":");
const systemNode = spawnSync("sh", ["-c", "command -v node"], { env: { ...process.env, PATH: systemPath }, encoding: "utf8" }).stdout.trim();
const node22 = join(root, "node_modules", "node", "bin", "node");
const nodes = [systemNode, node22].map((command) => ({
  command,
  version: spawnSync(command, ["--version"], { encoding: "utf8" }).stdout.trim(),
}));

// The endpoint: 202 as soon as the body is in, then counts the call payloads per key.
const bodiesByKey = new Map<string, Buffer[]>();
let requests = 0;
const endpoint = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    response.writeHead(202).end();
    requests++;
    const key = String(request.headers.authorization ?? "").replace(/^Bearer /, "");
    let bodies = bodiesByKey.get(key);
    if (!bodies) bodiesByKey.set(key, (bodies = []));
    bodies.push(Buffer.concat(chunks));
  });
});
await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`;

interface RunOutput {
  node: string;
  major: Major;
  callsMade: number;
  droppedOldest: number;
  stillWaiting: number;
  rounds: { watchedUs: number[]; plainUs: number[]; heapKb: number[]; waiting: number[]; watchedCpuUs: number; plainCpuUs: number }[];
}

function callsReceived(key: string): number {
  let calls = 0;
  for (const body of bodiesByKey.get(key) ?? []) {
    calls += (JSON.parse(body.toString("utf8")) as { batch: { type: string }[] }).batch.filter((payload) => payload.type === "call").length;
  }
  bodiesByKey.delete(key);
  return calls;
}

let runCounter = 0;
function runChild(command: string, major: Major, rounds: number, calls: number, extraFlags: string[] = [], only?: string): Promise<RunOutput> {
  const key = `mp_live_bench_${major}_${++runCounter}`;
  return new Promise((resolve, reject) => {
    const child = spawn(command, ["--expose-gc", ...extraFlags, runner, major, url, key, String(rounds), String(calls), ...(only ? [only] : [])], {
      cwd: root,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`${command} ${major} exited with ${code}`));
      const output = JSON.parse(stdout) as RunOutput;
      // Every call payload reached the endpoint: nothing was dropped by the buffer during the run.
      const received = callsReceived(key);
      if (process.env.BENCH_SDK_POST !== "noop" && (output.droppedOldest !== 0 || output.stillWaiting !== 0 || received !== output.callsMade)) {
        return reject(new Error(`${output.node} ${major}: ${output.callsMade} calls, endpoint received ${received}, dropped ${output.droppedOldest}, waiting ${output.stillWaiting}`));
      }
      resolve(output);
    });
  });
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
const mean = (values: readonly number[]) => sum(values) / values.length;
const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const percentile = (values: readonly number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** The mean of all but the slowest 1 %. */
const trimmedMean = (values: readonly number[]) => mean([...values].sort((a, b) => a - b).slice(0, Math.floor(values.length * 0.99)));

interface Row {
  node: string;
  major: Major;
  calls: number;
  plainMedianUs: number;
  watchedMedianUs: number;
  /** Per round: median watched call − median twin call. */
  addedMedianUs: number[];
  /** Per round: mean watched call − mean twin call (every send's cost spread over the calls). */
  addedMeanUs: number[];
  addedP99Us: number[];
  /** Per round: the means with each side's slowest 1 % of calls left out. */
  addedTrimmedMeanUs: number[];
  /** Per round: the process's CPU time (every thread) per watched call minus per twin call. */
  addedCpuUs: number[];
  /** Added per call by the call's place after a send (SLOTS), all rounds pooled: [median µs, share of calls]. */
  addedBySlot: [number, number][];
  heapFirstKb: number;
  heapLastKb: number;
  heapMinKb: number;
  heapMaxKb: number;
}

/**
 * A watched call's place after the last send, from how many payloads its buffer held once the call
 * was over: 0 = its event-loop turn sent a batch, 1 = the call after that, and so on.
 */
const SLOTS = [
  { label: "the call whose turn sent", from: 0, to: 0 },
  { label: "the next", from: 1, to: 1 },
  { label: "2nd after", from: 2, to: 2 },
  { label: "3rd", from: 3, to: 3 },
  { label: "4th", from: 4, to: 4 },
  { label: "5th–9th", from: 5, to: 9 },
  { label: "10th on", from: 10, to: Number.POSITIVE_INFINITY },
] as const;

function summarise(output: RunOutput): Row {
  const allWatched = output.rounds.flatMap((round) => round.watchedUs);
  const allPlain = output.rounds.flatMap((round) => round.plainUs);
  const allWaiting = output.rounds.flatMap((round) => round.waiting);
  const plainMedian = median(allPlain);
  const addedBySlot = SLOTS.map(({ from, to }): [number, number] => {
    const inSlot = allWatched.filter((_, i) => allWaiting[i]! >= from && allWaiting[i]! <= to);
    return [inSlot.length > 0 ? median(inSlot) - plainMedian : Number.NaN, inSlot.length / allWatched.length];
  });
  // Memory over the last round's 10,000 calls, read after every 1,000 (after two forced GCs).
  const heap = output.rounds[output.rounds.length - 1]!.heapKb.slice(1);
  return {
    node: output.node,
    major: output.major,
    calls: allWatched.length,
    plainMedianUs: plainMedian,
    watchedMedianUs: median(allWatched),
    addedMedianUs: output.rounds.map((round) => median(round.watchedUs) - median(round.plainUs)),
    addedMeanUs: output.rounds.map((round) => mean(round.watchedUs) - mean(round.plainUs)),
    addedP99Us: output.rounds.map((round) => percentile(round.watchedUs, 99) - percentile(round.plainUs, 99)),
    addedTrimmedMeanUs: output.rounds.map((round) => trimmedMean(round.watchedUs) - trimmedMean(round.plainUs)),
    addedCpuUs: output.rounds.map((round) => (round.watchedCpuUs - round.plainCpuUs) / round.watchedUs.length),
    addedBySlot,
    heapFirstKb: heap[0]!,
    heapLastKb: heap[heap.length - 1]!,
    heapMinKb: Math.min(...heap),
    heapMaxKb: Math.max(...heap),
  };
}

if (process.argv.includes("--profile")) {
  // CPU profiles of a watched-only and a twin-only run, with the same event-loop turns.
  const profileDir = join(root, "node_modules", ".cache", "mcpulse-edge-bench", "profiles");
  // Node 22 unless BENCH_SDK_NODE=20 asks for the system Node.
  const profileNode = process.env.BENCH_SDK_NODE === "20" ? systemNode : node22;
  rmSync(profileDir, { recursive: true, force: true });
  for (const major of majors) {
    for (const only of ["watched", "plain"]) {
      const dir = join(profileDir, `${major}-${only}`);
      // Every 250 µs rather than Node's 1 ms: four times the samples for the SDK's small functions.
      const output = await runChild(profileNode, major, 2, CALLS, ["--cpu-prof", `--cpu-prof-dir=${dir}`, "--cpu-prof-interval=250"], only);
      // One profile per thread (CPU.<date>.<time>.<pid>.<thread id>.<n>): the tool calls' thread is 0.
      const files = readdirSync(dir).sort();
      const file = join(dir, files.find((name) => name.split(".")[4] === "0") ?? files[0]!);
      console.log(`\n${major} ${only}: ${file}`);
      for (const other of files.filter((name) => join(dir, name) !== file)) console.log(`  another thread's profile: ${join(dir, other)}`);
      const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
      printProfile(profile);
      if (only === "watched") printOurShare(profile, output.callsMade);
    }
  }
  endpoint.close();
  process.exit(0);
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function, top 25. */
function printProfile(profile: CpuProfile): void {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, index) => {
    const frame = byId.get(id)!.callFrame;
    const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(/^.*node_modules\//, "").replace(/^.*\.cache\/mcpulse-edge-bench\//, "")}:${frame.lineNumber + 1}`;
    const delta = profile.timeDeltas[index] ?? 0;
    self.set(name, (self.get(name) ?? 0) + delta);
    total += delta;
  });
  for (const [name, micros] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) {
    console.log(`${((micros / total) * 100).toFixed(1).padStart(5)} %  ${(micros / 1000).toFixed(0).padStart(6)} ms  ${name}`);
  }
}

/**
 * The SDK's share of a watched run: each sample goes to the nearest frame, from the leaf up, that is
 * the SDK's (src/ in the bundle, by esbuild's `// src/…` markers), the MCP SDK's or Zod's, or the
 * bench's own; natives and Node internals count for whoever called them (the SDK's sends, hashes
 * and timers are the SDK's). Samples before the first watched tools/call (loading, connecting)
 * are left out; µs per call divides by every watched call of the run, warm-up included.
 */
function printOurShare(profile: CpuProfile, calls: number): void {
  const moduleAtLine: string[] = [];
  let current = "bench";
  readFileSync(runner, "utf8").split("\n").forEach((line, index) => {
    const marker = /^\/\/ ((?:src|bench)\/\S+)$/.exec(line);
    if (marker) current = marker[1]!;
    moduleAtLine[index] = current;
  });
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const ownerOf = (frame: CpuProfile["nodes"][number]["callFrame"]): string | undefined => {
    if (frame.url.endsWith("sdk-run.mjs")) {
      const module = moduleAtLine[frame.lineNumber] ?? "bench";
      return module.startsWith("src/") ? module : "bench";
    }
    if (frame.url.includes("@modelcontextprotocol") || frame.url.includes("/zod/")) return "mcp";
    return undefined;
  };
  let started = false;
  let total = 0;
  const byOwner = new Map<string, number>();
  profile.samples.forEach((id, index) => {
    const stack: CpuProfile["nodes"][number][] = [];
    for (let node = byId.get(id); node; node = byId.get(parentOf.get(node.id) ?? -1)) stack.push(node);
    if (!started && !stack.some((node) => node.callFrame.functionName === "toolsCall")) return;
    started = true;
    const delta = profile.timeDeltas[index] ?? 0;
    const leaf = stack[0]?.callFrame.functionName;
    if (leaf === "(idle)") return;
    total += delta;
    // Garbage collection and V8's own work are theirs; "other" is Node's work no frame above claims
    // (mostly the HTTP client reading the ingest's answers).
    let owner = leaf?.startsWith("(") ? leaf : "other";
    for (const node of stack) {
      const found = ownerOf(node.callFrame);
      if (found !== undefined) {
        owner = found;
        break;
      }
    }
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + delta);
  });
  const ours = [...byOwner].filter(([owner]) => owner.startsWith("src/"));
  const oursUs = sum(ours.map(([, us]) => us));
  const perCall = (us: number) => `${(us / calls).toFixed(2)} µs/call`;
  console.log(
    `the SDK's share: ${((oursUs / total) * 100).toFixed(1)} % of ${(total / 1000).toFixed(0)} ms of non-idle samples after the first call, ` +
      `${perCall(oursUs)} over ${calls.toLocaleString("en")} calls (MCP SDK and Zod ${(((byOwner.get("mcp") ?? 0) / total) * 100).toFixed(1)} %)`,
  );
  const share = (us: number) => `${((us / total) * 100).toFixed(1)} %`;
  console.log(`  the rest: ${[...byOwner].filter(([owner]) => !owner.startsWith("src/")).sort((a, b) => b[1] - a[1]).map(([owner, us]) => `${owner} ${share(us)}`).join(", ")}`);
  for (const [module, us] of ours.sort((a, b) => b[1] - a[1]).slice(0, 10)) {
    console.log(`  ${((us / total) * 100).toFixed(1).padStart(5)} %  ${perCall(us).padStart(14)}  ${module}`);
  }
}

const rows: Row[] = [];
for (const { command } of process.env.BENCH_SDK_NODE === "20" ? nodes.slice(0, 1) : process.env.BENCH_SDK_NODE === "22" ? nodes.slice(1) : nodes) {
  for (const major of majors) {
    const row = summarise(await runChild(command, major, ROUNDS, CALLS));
    rows.push(row);
    console.log(
      `${row.node} ${major}: added per call, median of rounds ${median(row.addedMedianUs).toFixed(1)} µs ` +
        `(rounds ${row.addedMedianUs.map((v) => v.toFixed(1)).join(", ")}); trimmed mean ${median(row.addedTrimmedMeanUs).toFixed(1)} µs; mean ${median(row.addedMeanUs).toFixed(1)} µs; CPU, all threads ${median(row.addedCpuUs).toFixed(1)} µs`,
    );
  }
}
endpoint.close();

function timeIt(fn: () => unknown, iterations = 20_000): number {
  for (let i = 0; i < 5_000; i++) fn();
  const start = performance.now();
  for (let i = 0; i < iterations; i++) fn();
  return ((performance.now() - start) * 1000) / iterations;
}
// What the parts of a watched call cost on their own (Node 22, this process).
const hashedArguments = argumentsFor(7);
const canonicalUs = timeIt(() => canonicalize(hashedArguments));
const portableHashUs = timeIt(() => argsHash(hashedArguments));
const nativeHashUs = timeIt(() => callArgsHash(hashedArguments));
const resultLengthUs = timeIt(() => JSON.stringify(RESULT).length);
const payloadAt = Date.now();
const payloadOf = (i: number) => ({
  v: 1, type: "call", session_id: "s_0123456789ab", client_name: "bench-client", tool_name: "search",
  started_at: wireTimestamp(payloadAt + i), duration_ms: 0, outcome: "ok", response_bytes: 73, is_empty: false, args_hash: "0123456789ab",
});
let sink = 0;
const payloadUs = timeIt(() => (sink += payloadOf(sink & 1023).duration_ms));
const batchOf30 = Array.from({ length: 30 }, (_, i) => payloadOf(i));
const batchJsonPerPayloadUs = timeIt(() => JSON.stringify({ batch: batchOf30 })) / 30;
const fmt = (us: number) => `${us.toFixed(1)} µs`;
/** The parts timed alone: some take well under a microsecond. */
const fmtPart = (us: number) => `${us.toFixed(us < 1 ? 2 : 1)} µs`;
const spread = (values: number[]) => `${Math.min(...values).toFixed(1)} … ${Math.max(...values).toFixed(1)}`;
const mib = (kb: number) => `${(kb / 1024).toFixed(2)} MiB`;
const lines: string[] = [];
lines.push("## SDK overhead (`npm run bench:sdk`)");
lines.push("");
lines.push(
  `Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${cpus().length} CPUs shared with other work. ` +
    `Per Node version and MCP SDK major, one process holds a watched McpServer and its unwatched twin; a real MCP client calls ` +
    `each over InMemoryTransport with ${ARGS_CHARS}-character arguments (validated by a Zod input schema), and **after every call ` +
    `the event loop turns once** (\`setImmediate\`), as between the messages of a real stdio or HTTP transport, so the SDK's ` +
    `timers, its \`JSON.stringify\` of each batch, the HTTP request to the endpoint and its 202 response all run inside the measured ` +
    `windows (the endpoint is a local HTTP server in another process, answering 202 at once and counting the payloads once the run is over). ` +
    `${ROUNDS} rounds of ` +
    `${CALLS.toLocaleString("en")} calls per side, after 3,000 warm-up calls each, in blocks of 1,000 alternating which side goes ` +
    `first; a watched block's last send is let finish before a twin block starts, so none of it lands in a twin window. ` +
    `The endpoint received every call payload of every run (${requests.toLocaleString("en")} requests; the bench fails otherwise) ` +
    `and the buffer dropped none.`,
);
lines.push("");
lines.push(
  "**Added per call** = the watched call's time minus the twin's, per round, then the median of the rounds and the range the " +
    "rounds spanned. *Median* compares the two median calls: the cost every call pays (the target: ≤ 15 µs with MCP SDK 1.x, " +
    "≤ 20 µs with 2.x, on both Node versions). *Trimmed mean* compares the averages with each side's slowest 1 % of calls left " +
    "out, so the sends' cost is in it, spread over all calls: what watch() costs a busy server on average. *Mean* keeps every " +
    "call; on this shared 2-CPU machine single calls on either side take up to tens of milliseconds when the process is " +
    "preempted, so the raw mean mostly measures the neighbours (its range shows it). *Added CPU, all threads* is the process's " +
    "CPU time (user + system, every thread: the garbage collector's and libuv's included) over the watched blocks, their last send " +
    "included, minus over the twin's, per call: what watch() costs the machine, wherever it runs. *p99* compares the 99th-percentile calls.",
);
lines.push("");
lines.push("| Node | MCP SDK | twin call (median) | watched call (median) | **added, median** | rounds ranged | target | added, trimmed mean | rounds ranged | added CPU, all threads | rounds ranged | added, mean | rounds ranged | added at p99 | heap after 1,000 → 10,000 calls | heap range, every 1,000 |");
lines.push("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const row of rows) {
  const added = median(row.addedMedianUs);
  lines.push(
    `| ${row.node} | ${row.major} | ${fmt(row.plainMedianUs)} | ${fmt(row.watchedMedianUs)} | **${fmt(added)}** | ${spread(row.addedMedianUs)} µs | ` +
      `≤ ${TARGET_US[row.major]} µs ${added <= TARGET_US[row.major] ? "(met)" : "(MISSED)"} | ${fmt(median(row.addedTrimmedMeanUs))} | ${spread(row.addedTrimmedMeanUs)} µs | ` +
      `${fmt(median(row.addedCpuUs))} | ${spread(row.addedCpuUs)} µs | ` +
      `${fmt(median(row.addedMeanUs))} | ${spread(row.addedMeanUs)} µs | ${fmt(median(row.addedP99Us))} | ${mib(row.heapFirstKb)} → ${mib(row.heapLastKb)} | ${mib(row.heapMinKb)}–${mib(row.heapMaxKb)} |`,
  );
}
lines.push("");
lines.push(
  "**Where the median sits.** Added per call by the call's place after the last send (the watched side's buffer read after " +
    "each call; all rounds pooled, minus the twin's median; the share of calls in brackets). A send — the batch's digests and " +
    "JSON, Node's HTTP request, then its 202 — makes the calls right after it slower for a while; the median call is among " +
    "the later ones, so the steady cost and the sends' tail both move it.",
);
lines.push("");
lines.push(`| Node | MCP SDK | ${SLOTS.map((slot) => slot.label).join(" | ")} |`);
lines.push(`|---|---|${SLOTS.map(() => "---").join("|")}|`);
for (const row of rows) {
  lines.push(`| ${row.node} | ${row.major} | ${row.addedBySlot.map(([us, share]) => `${Number.isNaN(us) ? "–" : fmt(us)} (${(share * 100).toFixed(0)} %)`).join(" | ")} |`);
}
lines.push("");
lines.push(
  `Parts, timed alone in the same run (Node ${process.version}, µs per call): \`args_hash\` ${fmt(nativeHashUs)} ` +
    `(canonical JSON ${fmt(canonicalUs)}, taken during the call, + native SHA-256, taken when the call's batch is sent; the portable JavaScript SHA-256 path, used where \`crypto.hash\` is missing, ${fmt(portableHashUs)}); ` +
    `\`response_bytes\` (JSON of the result) ${fmtPart(resultLengthUs)}; the call payload with its ISO timestamp ${fmtPart(payloadUs)}; ` +
    `its share of the batch's JSON ${fmtPart(batchJsonPerPayloadUs)}. Inside a real call each part costs about twice what it costs in a loop. ` +
    "The rest of the median is the wrappers around the handler and the tool callback, the session lookup, the outcome and is_empty " +
    "checks and the buffer push; the trimmed mean adds what each send costs the tool calls' thread ÷ 30. What each part is: docs/sdk.md, \"What it costs\".",
);
const section = lines.join("\n");
console.log(section);
// The knobs for finding where the time goes print only: docs/benchmarks.md holds full runs.
if (process.env.BENCH_SDK_POST === undefined && process.env.BENCH_SDK_NODE === undefined && process.env.BENCH_SDK_MAJOR === undefined) writeBenchmarkSection("sdk", section);
