#!/usr/bin/env node
// `npm run bench:ingest`: POST /v1/ingest of the real worker against a floor worker and a
// parse-only worker, and POST /v1/traces (OTLP protobuf, SPEC §10) with the same calls as spans,
// each in its own Miniflare (workerd), driven over loopback HTTP with 500-call batches in
// interleaved slices. Local D1 runs inside the worker's process, so writes are part of
// every figure: a slice ends when its rows have drained into D1, not when the last 202 arrived.
// Prints the figures and replaces the bench:ingest section of docs/benchmarks.md.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { migrateToHead } from "../scripts/migrations.ts";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { execFileSync } from "node:child_process";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "ingest");
const BATCH_CALLS = 500;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
// 4 rounds × 5 s = 20 s of load per worker (SPEC target: at least 20 s), ~75 s in all.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const SLICE_SECONDS = Number(process.env.BENCH_SLICE_SECONDS ?? 5);
const DRAIN_TIMEOUT_MS = 30_000;
const ADMIN_TOKEN = "bench-admin-token";
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))[1];
const CLOCK_TICKS_PER_SECOND = 100; // Linux USER_HZ, what /proc/<pid>/stat counts in

/** A schema file split into statements (statements end with `;` at line end). */
function statementsOf(sql) {
  return sql
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
    .filter((s) => s.length > 0);
}

/** Batches of 500 valid calls over 50 sessions, timestamps a minute old (inside the 7-day window). */
function makeBodies(count) {
  const startedAt = new Date(Date.now() - 60_000).toISOString();
  const outcomes = ["ok", "ok", "ok", "bad_args", "tool_error", "crashed"];
  return Array.from({ length: count }, (_, b) =>
    JSON.stringify({
      batch: Array.from({ length: BATCH_CALLS }, (_, i) => ({
        v: 1,
        type: "call",
        session_id: `s_${(b * 50 + (i % 50)).toString(16).padStart(12, "0")}`,
        client_name: i % 3 === 0 ? "claude-ai" : "cursor",
        tool_name: `tool_${i % 25}`,
        started_at: startedAt,
        duration_ms: (i * 37) % 2000,
        outcome: outcomes[i % outcomes.length],
        response_bytes: 100 + i,
        is_empty: false,
        args_hash: ((b * BATCH_CALLS + i) % 0xffffff).toString(16).padStart(12, "0"),
      })),
    }),
  );
}

/**
 * The same 500 calls per batch as makeBodies, as an OpenTelemetry server would report them: SERVER
 * spans with the MCP semantic conventions (the arguments recorded, so ingest hashes them as the
 * SDK does), made by the OTel JS SDK and encoded by its own OTLP protobuf serializer.
 */
function makeOtlpBodies(count) {
  const startMs = Date.now() - 60_000;
  const errorTypes = [undefined, undefined, undefined, "-32602", "tool_error", "Error"];
  return Array.from({ length: count }, (_, b) => {
    const memory = new InMemorySpanExporter();
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ "service.name": "bench-mcp", "service.version": "1.0.0" }),
      spanProcessors: [new SimpleSpanProcessor({ exporter: memory })],
    });
    const tracer = provider.getTracer("bench");
    for (let i = 0; i < BATCH_CALLS; i++) {
      const tool = `tool_${i % 25}`;
      const span = tracer.startSpan(`tools/call ${tool}`, {
        kind: SpanKind.SERVER,
        startTime: startMs,
        attributes: {
          "mcp.method.name": "tools/call",
          "gen_ai.tool.name": tool,
          "gen_ai.operation.name": "execute_tool",
          "mcp.session.id": `conv-${b * 50 + (i % 50)}`,
          "mcp.client.name": i % 3 === 0 ? "claude-ai" : "cursor",
          "mcp.protocol.version": "2025-06-18",
          "gen_ai.tool.call.arguments": JSON.stringify({ query: `q${b * BATCH_CALLS + i}`, limit: 25 }),
        },
      });
      const errorType = errorTypes[i % errorTypes.length];
      if (errorType !== undefined) {
        span.setAttribute("error.type", errorType);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end(startMs + ((i * 37) % 2000));
    }
    const body = ProtobufTraceSerializer.serializeRequest(memory.getFinishedSpans());
    void provider.shutdown();
    return body;
  });
}

/** The machine's load averages (1, 5, 15 min): the machine is shared, so figures are read beside them. */
function loadAverage() {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim().replace(/^.*load average:\s*/, "");
  } catch {
    return "unknown";
  }
}

/** Pids of the workerd processes this process has started. */
function workerdPids() {
  const pids = new Set();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(entry);
    if (stat && stat.comm.includes("workerd") && stat.ppid === process.pid) pids.add(entry);
  }
  return pids;
}

function procStat(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return {
    comm: text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")),
    ppid: Number(fields[1]),
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND, // utime + stime
  };
}

function cpuSecondsOf(pids) {
  let total = 0;
  for (const pid of pids) total += procStat(pid)?.cpuSeconds ?? 0;
  return total;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Starts one worker in its own Miniflare and notes its workerd process (for CPU accounting).
 * `prepare(bindings, url)` sets up storage and returns the request headers.
 */
async function startTarget(name, options, prepare, countRows) {
  const before = workerdPids();
  const mf = new Miniflare(
    convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, compatibilityDate: COMPATIBILITY_DATE, ...options }),
  );
  const url = await mf.ready;
  const pids = new Set([...workerdPids()].filter((pid) => !before.has(pid)));
  const bindings = await mf.getBindings();
  const { path, headers } = await prepare(bindings, url);
  return {
    name,
    mf,
    url: new URL(path, url),
    headers,
    pids,
    countRows: countRows ? () => countRows(bindings) : null,
    latencies: [],
    statuses: new Map(),
    // /v1/ingest answers 202; OTLP's /v1/traces answers 200 (SPEC §10).
    acceptedStatus: path === "/v1/traces" ? 200 : 202,
    accepted: 0,
    rows: 0,
    elapsedMs: 0,
    cpuSeconds: 0,
  };
}

/**
 * One slice of load: CONCURRENCY clients for `seconds`, then — for a storing worker — wait until
 * every accepted payload is a row. The slice's time runs until then, so writes are counted.
 */
async function driveSlice(target, bodies, seconds) {
  const cpuBefore = cpuSecondsOf(target.pids);
  const start = performance.now();
  const stopAt = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, client) => {
      for (let n = client; performance.now() < stopAt; n += CONCURRENCY) {
        const t0 = performance.now();
        let status = 0;
        try {
          // An Idempotency-Key per request, as the SDK sends one per batch (the worker's resend guard runs).
          const headers = { ...target.headers, "idempotency-key": `bench-${client}-${n}-${Math.floor(start)}` };
          const res = await fetch(target.url, { method: "POST", headers, body: bodies[n % bodies.length] });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = -1;
        }
        target.latencies.push(performance.now() - t0);
        target.statuses.set(status, (target.statuses.get(status) ?? 0) + 1);
        if (status === target.acceptedStatus) target.accepted += BATCH_CALLS;
      }
    }),
  );
  if (target.countRows) {
    let rows = await target.countRows();
    let lastChange = performance.now();
    while (rows < target.accepted && performance.now() - lastChange < DRAIN_TIMEOUT_MS) {
      await new Promise((r) => setTimeout(r, 20));
      const now = await target.countRows();
      if (now !== rows) lastChange = performance.now();
      rows = now;
    }
    target.rows = rows;
  }
  target.elapsedMs += performance.now() - start;
  target.cpuSeconds += cpuSecondsOf(target.pids) - cpuBefore;
}

function summarise(target) {
  const latencies = [...target.latencies].sort((a, b) => a - b);
  const result = {
    name: target.name,
    requests: latencies.length,
    non202: latencies.length - (target.statuses.get(target.acceptedStatus) ?? 0),
    accepted: target.accepted,
    rows: target.countRows ? target.rows : null,
    seconds: target.elapsedMs / 1000,
    payloadsPerSecond: target.accepted / (target.elapsedMs / 1000),
    cpuMsPer1000: (target.cpuSeconds * 1000) / (target.accepted / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
  console.log(
    `${result.name.padEnd(11)} ${result.payloadsPerSecond.toFixed(0).padStart(7)} payloads/s  ` +
      `CPU ${result.cpuMsPer1000.toFixed(1)} ms/1000  p50 ${result.p50.toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms  ` +
      `non-202 ${result.non202}  rows ${result.rows ?? "—"}/${result.accepted}  (${result.seconds.toFixed(1)} s incl. drain)`,
  );
  return result;
}

/** Applies a schema file through a D1 binding. */
async function applySchema(db, file) {
  await db.batch(statementsOf(readFileSync(join(root, file), "utf8")).map((s) => db.prepare(s)));
}

/** The real worker with a fresh D1 and a project whose budget cannot interfere; `otlp`: driven on /v1/traces. */
function ingestTarget(name, workerScript, otlp = false) {
  return startTarget(
    name,
    {
      modules: true,
      scriptPath: workerScript,
      compatibilityFlags: ["nodejs_compat"],
      d1Databases: { DB: `bench-${name}` },
      durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
      queueProducers: { INGEST_QUEUE: { queueName: "mcpulse-ingest" } },
      analyticsEngineDatasets: { CALLS_AE: { dataset: "bench_calls" } },
      bindings: { ADMIN_TOKEN, RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3" },
    },
    async ({ DB: db }, url) => {
      await migrateToHead(db);
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
      const created = await fetch(new URL("/v1/admin/projects", url), { method: "POST", headers: admin, body: '{"name":"bench"}' });
      const project = await created.json();
      // Raise the budget so the limit never interferes with the measurement.
      await fetch(new URL(`/v1/admin/projects/${project.project_id}`, url), {
        method: "PATCH",
        headers: admin,
        body: JSON.stringify({ payload_budget_per_minute: 100_000_000 }),
      });
      return otlp
        ? { path: "/v1/traces", headers: { "x-mcpulse-key": project.ingest_key, "content-type": "application/x-protobuf" } }
        : { path: "/v1/ingest", headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" } };
    },
    async ({ DB: db }) => (await db.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches").first()).n,
  );
}

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await bundleWorker(workerScript);
  const bodies = makeBodies(CONCURRENCY * 2);
  const otlpBodies = makeOtlpBodies(CONCURRENCY * 2);
  const loadBefore = loadAverage();
  const ingest = await ingestTarget("ingest", workerScript);
  const otlp = await ingestTarget("otlp", workerScript, true);
  const floor = await startTarget(
    "floor",
    { modules: true, scriptPath: join(root, "bench/floor-worker/floor.js"), d1Databases: { DB: "bench-floor" } },
    async ({ DB: db }) => {
      await applySchema(db, "bench/floor-worker/schema.sql");
      return { path: "/", headers: { "content-type": "application/json" } };
    },
    async ({ DB: db }) => (await db.prepare("SELECT COUNT(*) AS n FROM floor_calls").first()).n,
  );
  const parseOnly = await startTarget(
    "parse-only",
    { modules: true, scriptPath: join(root, "bench/floor-worker/parse-only.js") },
    async () => ({ path: "/", headers: { "content-type": "application/json" } }),
    null,
  );
  const targets = [ingest, floor, parseOnly, otlp];
  console.log(
    `bench:ingest — ${BATCH_CALLS}-call batches (${(bodies[0].length / 1024).toFixed(0)} KiB), concurrency ${CONCURRENCY}, ` +
      `${ROUNDS} rounds of ${SLICE_SECONDS} s per worker (parse-only ${SLICE_SECONDS / 2} s), ${availableParallelism()} CPUs`,
  );
  let results;
  try {
    // Interleaved slices, so a change in the shared machine's load hits every worker alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const target of targets) await driveSlice(target, target === otlp ? otlpBodies : bodies, target === parseOnly ? SLICE_SECONDS / 2 : SLICE_SECONDS);
    }
    results = targets.map(summarise);
  } finally {
    for (const target of targets) await target.mf.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
  const [ingestResult, floorResult, parseOnlyResult, otlpResult] = results;
  writeReport(ingestResult, floorResult, parseOnlyResult, otlpResult, bodies[0].length, otlpBodies[0].length, { before: loadBefore, after: loadAverage() });
}

function writeReport(ingest, floor, parseOnly, otlp, bodyBytes, otlpBodyBytes, load) {
  const ratio = ingest.payloadsPerSecond / floor.payloadsPerSecond;
  const ratioParse = ingest.payloadsPerSecond / parseOnly.payloadsPerSecond;
  const cpuRatio = floor.cpuMsPer1000 / ingest.cpuMsPer1000;
  const lost = ingest.accepted - ingest.rows;
  const verdict = [
    `${ratio >= 0.6 ? "meets" : "MISSES"} the ≥ 0.6× floor target`,
    `${ingest.non202 === 0 ? "zero" : ingest.non202} non-202 answers`,
    `${lost === 0 ? "zero" : lost} lost rows`,
  ].join(", ");
  console.log(
    `ingest / floor = ${ratio.toFixed(2)}× (by CPU ${cpuRatio.toFixed(2)}×), ingest / parse-only = ${ratioParse.toFixed(2)}× — ${verdict}`,
  );
  const otlpRatio = otlp.payloadsPerSecond / ingest.payloadsPerSecond;
  const cpuPerSpanUs = otlp.cpuMsPer1000; // ms per 1,000 spans = µs per span
  const otlpLost = otlp.accepted - otlp.rows;
  console.log(
    `otlp / ingest = ${otlpRatio.toFixed(2)}× by throughput; ${cpuPerSpanUs.toFixed(1)} µs CPU per span against ${ingest.cpuMsPer1000.toFixed(1)} µs per JSON call; ` +
      `${otlp.non202} non-200, ${otlpLost} lost rows; load average ${load.before} before, ${load.after} after`,
  );
  const row = (r) =>
    `| ${r.name} | ${r.payloadsPerSecond.toFixed(0)} | ${r.cpuMsPer1000.toFixed(1)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ` +
    `${r.non202} | ${r.rows === null ? "—" : `${r.rows} / ${r.accepted}`} |`;
  const section = `## Ingest throughput (\`npm run bench:ingest\`)

Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${availableParallelism()} shared CPUs. Each worker runs in
its own Miniflare (workerd) and is driven over loopback HTTP by ${CONCURRENCY} concurrent clients with
${BATCH_CALLS}-call batches (${(bodyBytes / 1024).toFixed(0)} KiB each, all valid), in ${ROUNDS} interleaved rounds of
${SLICE_SECONDS} s per worker (parse-only ${SLICE_SECONDS / 2} s), so load from other work on the machine hits them alike.
Local D1 runs inside the worker's process, so the writes are part of the figures: each slice lasts until
its rows have drained into D1, and payloads/s divides by that time. CPU is the worker's workerd process's
user + system time per 1,000 payloads accepted; latency is the time to the 202.

- **ingest** — the real worker: key check (D1), content type, body limit, JSON, the shared Zod
  validation of every item, the per-key budget Durable Object, 202, then in waitUntil the Analytics
  Engine points and one D1 batch (the request's calls as ONE \`call_batches\` row of JSON, migration 0008 — the
  rollup appends them to \`call_state\`, one JSON row per session, client and hour — plus startups and verdicts;
  the session rows are the rollup's since migration 0011).
- **floor** — \`bench/floor-worker/floor.js\`: read the body, parse the JSON, 202, and in waitUntil one
  \`INSERT … SELECT … FROM json_each\` into one unindexed table. No auth, validation or budget.
- **parse-only** — \`bench/floor-worker/parse-only.js\`: read and parse the body, 202 (for information).

- **otlp** — the real worker on \`POST /v1/traces\` (SPEC §10): the same 500 calls per request as
  SERVER spans with the MCP semantic conventions and their arguments recorded, made by the OTel JS SDK
  and encoded by its own protobuf serializer (${(otlpBodyBytes / 1024).toFixed(0)} KiB each): protobuf decoding
  (@bufbuild/protobuf), the span → call map (session HMAC, args hash at ingest), the same validation,
  then /v1/ingest's own path. Its "payloads" are spans, all of them tool calls; a 200 counts as accepted.

| worker | payloads/s | CPU ms / 1,000 payloads | p50 to 202 (ms) | p99 to 202 (ms) | non-202 | rows stored / valid sent |
|---|---|---|---|---|---|---|
${row(ingest)}
${row(floor)}
${row(parseOnly)}
${row(otlp)}

**ingest / floor = ${ratio.toFixed(2)}×** by throughput (target ≥ 0.6×), ${cpuRatio.toFixed(2)}× by CPU per payload;
ingest / parse-only = ${ratioParse.toFixed(2)}×. Result: ${verdict}.
Ingest does more than the floor (auth, validation, budget, sessions upsert, Analytics Engine) but writes one row per request where the floor writes one per call, so it can be faster than the floor.

**OTLP: otlp / ingest = ${otlpRatio.toFixed(2)}×** by throughput; **${cpuPerSpanUs.toFixed(1)} µs of CPU per span**
(ingest: ${ingest.cpuMsPer1000.toFixed(1)} µs per JSON call), so a request of 500 spans costs about ${((cpuPerSpanUs * BATCH_CALLS) / 1000).toFixed(1)} ms
of CPU, inside the free plan's 10 ms per invocation only for requests of up to ~${Math.floor(10_000 / cpuPerSpanUs)} spans (the
CPU figure is the whole workerd process's, D1's writes and the budget object included, so it
overstates the request's own CPU). ${otlp.non202 === 0 ? "Zero" : otlp.non202} non-200 answers, ${otlpLost === 0 ? "zero" : otlpLost} lost rows.
Machine load average (1, 5, 15 min) ${load.before} at the start, ${load.after} at the end: the 2 CPUs are shared
with other work, so compare the rows with each other, not with other runs.
`;
  writeBenchmarkSection("ingest", section);
}

await main();
