#!/usr/bin/env node
// `npm run bench:ingest`: POST /v1/ingest of the real worker against a floor worker and a
// parse-only worker, each run locally in its own Miniflare (workerd) over loopback HTTP with
// 500-call batches. Local D1 runs inside the worker's process, so writes are part of every figure:
// a run ends when the rows have drained into D1, not when the last 202 arrived.
// Prints the figures and replaces the bench:ingest section of docs/benchmarks.md.
import { build } from "esbuild";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "ingest");
const BATCH_CALLS = 500;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const RUN_SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const PARSE_ONLY_SECONDS = Math.max(5, Math.round(RUN_SECONDS / 2));
const DIAGNOSTIC_SECONDS = PARSE_ONLY_SECONDS;
const DRAIN_TIMEOUT_MS = 30_000;
const ADMIN_TOKEN = "bench-admin-token";
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))[1];
const CLOCK_TICKS_PER_SECOND = 100; // Linux USER_HZ, what /proc/<pid>/stat counts in

/** schema.sql split into statements, as test/worker/apply-schema.ts does. */
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

/** CPU seconds (user + system) of the workerd processes started by this process. */
function workerdCpuSeconds() {
  let ticks = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (!comm.includes("workerd") || Number(fields[1]) !== process.pid) continue;
    ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
  }
  return ticks / CLOCK_TICKS_PER_SECOND;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Drives `url` with CONCURRENCY clients for `seconds`, then waits until `countRows()` reaches what was accepted. */
async function drive(name, url, headers, bodies, seconds, countRows) {
  const latencies = [];
  const statuses = new Map();
  let accepted = 0;
  const cpuBefore = workerdCpuSeconds();
  const start = performance.now();
  const stopAt = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, client) => {
      for (let n = client; performance.now() < stopAt; n += CONCURRENCY) {
        const t0 = performance.now();
        let status = 0;
        try {
          const res = await fetch(url, { method: "POST", headers, body: bodies[n % bodies.length] });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = -1;
        }
        latencies.push(performance.now() - t0);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 202) accepted += BATCH_CALLS;
      }
    }),
  );
  const lastAnswerMs = performance.now() - start;
  let rows = countRows ? await countRows() : accepted;
  let lastChange = performance.now();
  while (countRows && rows < accepted && performance.now() - lastChange < DRAIN_TIMEOUT_MS) {
    await new Promise((r) => setTimeout(r, 50));
    const now = await countRows();
    if (now !== rows) lastChange = performance.now();
    rows = now;
  }
  const drainedMs = performance.now() - start;
  const cpuSeconds = workerdCpuSeconds() - cpuBefore;
  latencies.sort((a, b) => a - b);
  const result = {
    name,
    requests: latencies.length,
    non202: latencies.length - (statuses.get(202) ?? 0),
    statuses: Object.fromEntries(statuses),
    payloadsSent: latencies.length * BATCH_CALLS,
    accepted,
    rows,
    lastAnswerMs,
    drainedMs,
    payloadsPerSecond: accepted / (drainedMs / 1000),
    cpuMsPer1000: (cpuSeconds * 1000) / (accepted / 1000),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
  console.log(
    `${name.padEnd(11)} ${result.payloadsPerSecond.toFixed(0).padStart(7)} payloads/s  ` +
      `CPU ${result.cpuMsPer1000.toFixed(1)} ms/1000  p50 ${result.p50.toFixed(1)} ms  p99 ${result.p99.toFixed(1)} ms  ` +
      `non-202 ${result.non202}  rows ${rows}/${accepted}  (answers done ${(lastAnswerMs / 1000).toFixed(1)} s, drained ${(drainedMs / 1000).toFixed(1)} s)`,
  );
  return result;
}

async function withMiniflare(options, fn) {
  const mf = new Miniflare(
    convertV4MiniflareOptions({ host: "127.0.0.1", port: 0, compatibilityDate: COMPATIBILITY_DATE, ...options }),
  );
  try {
    const url = await mf.ready;
    return await fn(mf, url);
  } finally {
    await mf.dispose();
  }
}

/** The real worker with a fresh D1, a project whose budget cannot interfere, then the load. */
async function runIngest(name, seconds, workerScript, bodies, dropRawCallIndexes) {
  return withMiniflare(
    {
      modules: true,
      scriptPath: workerScript,
      compatibilityFlags: ["nodejs_compat"],
      d1Databases: { DB: "bench-ingest" },
      durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true } },
      analyticsEngineDatasets: { CALLS_AE: { dataset: "bench_calls" } },
      bindings: { ADMIN_TOKEN, RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3" },
    },
    async (mf, url) => {
      const { DB: db } = await mf.getBindings();
      await db.batch(statementsOf(readFileSync(join(root, "schema.sql"), "utf8")).map((s) => db.prepare(s)));
      if (dropRawCallIndexes) {
        const { results } = await db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'raw_calls' AND sql IS NOT NULL")
          .all();
        for (const { name: index } of results) await db.prepare(`DROP INDEX "${index}"`).run();
      }
      const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
      const project = await (await fetch(new URL("/v1/admin/projects", url), { method: "POST", headers: admin, body: '{"name":"bench"}' })).json();
      // Raise the budget so the limit never interferes with the measurement.
      await fetch(new URL(`/v1/admin/projects/${project.project_id}`, url), {
        method: "PATCH",
        headers: admin,
        body: JSON.stringify({ payload_budget_per_minute: 100_000_000 }),
      });
      const headers = { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" };
      return drive(name, new URL("/v1/ingest", url), headers, bodies, seconds, async () =>
        (await db.prepare("SELECT COUNT(*) AS n FROM raw_calls").first()).n,
      );
    },
  );
}

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await build({
    entryPoints: [join(root, "src/worker/index.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    outfile: workerScript,
    logLevel: "warning",
  });
  const bodies = makeBodies(CONCURRENCY * 2);
  console.log(
    `bench:ingest — ${BATCH_CALLS}-call batches (${(bodies[0].length / 1024).toFixed(0)} KiB), concurrency ${CONCURRENCY}, ` +
      `${RUN_SECONDS} s per worker (parse-only and the diagnostic run ${PARSE_ONLY_SECONDS} s), ${availableParallelism()} CPUs`,
  );

  const ingest = await runIngest("ingest", RUN_SECONDS, workerScript, bodies, false);
  // Diagnostic: the same worker with raw_calls stripped of its secondary (rollup) indexes, to show
  // what they cost at write time.
  const ingestNoIndexes = await runIngest("ingest-noix", DIAGNOSTIC_SECONDS, workerScript, bodies, true);

  const floor = await withMiniflare(
    {
      modules: true,
      scriptPath: join(root, "bench/floor-worker/floor.js"),
      d1Databases: { DB: "bench-floor" },
    },
    async (mf, url) => {
      const { DB: db } = await mf.getBindings();
      await db.batch(statementsOf(readFileSync(join(root, "bench/floor-worker/schema.sql"), "utf8")).map((s) => db.prepare(s)));
      return drive("floor", url, { "content-type": "application/json" }, bodies, RUN_SECONDS, async () =>
        (await db.prepare("SELECT COUNT(*) AS n FROM floor_calls").first()).n,
      );
    },
  );

  const parseOnly = await withMiniflare(
    { modules: true, scriptPath: join(root, "bench/floor-worker/parse-only.js") },
    async (_mf, url) => drive("parse-only", url, { "content-type": "application/json" }, bodies, PARSE_ONLY_SECONDS, null),
  );

  const ratio = ingest.payloadsPerSecond / floor.payloadsPerSecond;
  const ratioParse = ingest.payloadsPerSecond / parseOnly.payloadsPerSecond;
  const lost = ingest.accepted - ingest.rows;
  const verdict = [
    `${ratio >= 0.6 ? "meets" : "MISSES"} the ≥ 0.6× floor target`,
    `${ingest.non202 === 0 ? "zero" : ingest.non202} non-202 answers`,
    `${lost === 0 ? "zero" : lost} lost rows`,
  ].join(", ");
  console.log(`ingest / floor = ${ratio.toFixed(2)}×, ingest / parse-only = ${ratioParse.toFixed(2)}× — ${verdict}`);
  rmSync(tmp, { recursive: true, force: true });

  const row = (r) =>
    `| ${r.name} | ${r.payloadsPerSecond.toFixed(0)} | ${r.cpuMsPer1000.toFixed(1)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ` +
    `${r.non202} | ${r.rows === null ? "—" : `${r.rows} / ${r.accepted}`} |`;
  const section = `## Ingest throughput (\`npm run bench:ingest\`)

Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC on ${availableParallelism()} shared CPUs: each worker
runs alone in its own Miniflare (workerd), driven over loopback HTTP by ${CONCURRENCY} concurrent clients
with ${BATCH_CALLS}-call batches (${(bodies[0].length / 1024).toFixed(0)} KiB each, all valid) for ${RUN_SECONDS} s
(parse-only and the diagnostic run ${PARSE_ONLY_SECONDS} s). Local D1 runs inside the worker's process, so the writes are part of the
figures: payloads/s counts the time until the rows had drained into D1, not until the last 202. CPU is
the workerd process's user + system time per 1,000 payloads accepted; latency is time to the 202.

- **ingest** — the real worker: key check (D1), content type, body limit, JSON, the shared Zod
  validation of every item, the per-key budget Durable Object, 202, then in waitUntil the Analytics
  Engine points and the D1 batch (raw_calls with its rollup indexes, and the sessions upsert).
- **floor** — \`bench/floor-worker/floor.js\`: read the body, parse the JSON, 202, and in waitUntil one
  \`INSERT … SELECT … FROM json_each\` into one unindexed table. No auth, validation or budget.
- **parse-only** — \`bench/floor-worker/parse-only.js\`: read and parse the body, 202 (for information).

| worker | payloads/s | CPU ms / 1,000 payloads | p50 to 202 (ms) | p99 to 202 (ms) | non-202 | rows stored / valid sent |
|---|---|---|---|---|---|---|
${row(ingest)}
${row(floor)}
${row({ ...ingestNoIndexes, name: "ingest, raw_calls without its secondary indexes (diagnostic)" })}
${row({ ...parseOnly, rows: null })}

**ingest / floor = ${ratio.toFixed(2)}×** (target ≥ 0.6×); ingest / parse-only = ${ratioParse.toFixed(2)}×.
Result: ${verdict}.

The diagnostic row runs the same worker after dropping raw_calls' secondary indexes (the rollup's
session and hour lookups): ${(ingestNoIndexes.payloadsPerSecond / floor.payloadsPerSecond).toFixed(2)}× the floor, ` +
    `${ingestNoIndexes.cpuMsPer1000.toFixed(1)} CPU ms per 1,000 payloads against ${ingest.cpuMsPer1000.toFixed(1)} with them — the part of
the gap to the floor that is index maintenance rather than ingest's own work (auth, validation, budget,
sessions upsert, Analytics Engine).
`;
  writeSection("ingest", section);
}

/** Replaces this benchmark's own section of docs/benchmarks.md (between its markers), creating the file if needed. */
function writeSection(name, content) {
  const path = join(root, "docs", "benchmarks.md");
  const start = `<!-- bench:${name}:start -->`;
  const end = `<!-- bench:${name}:end -->`;
  const block = `${start}\n${content.trim()}\n${end}`;
  let text = existsSync(path) ? readFileSync(path, "utf8") : "# Benchmarks\n\nEach section is written by its `npm run bench:…` script.\n";
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from >= 0 && to > from) text = text.slice(0, from) + block + text.slice(to + end.length);
  else text = `${text.trimEnd()}\n\n${block}\n`;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  console.log(`Wrote the bench:${name} section of docs/benchmarks.md`);
}

await main();
