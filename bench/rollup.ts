// `npm run bench:rollup`: the rollup cron from scratch over 10k, 100k and 1M raw calls, and an
// incremental run after 1 % more, on the real worker (bundled, run in Miniflare/workerd with a
// local D1), running the cron's rollup job (one per database, SPEC §7) until caught up. Prints the figures beside a baseline
// measured in the same run (one GROUP BY pass over the same raw rows) and replaces the
// bench:rollup section of docs/benchmarks.md.
//
// Env: BENCH_SIZES (default "10000,100000,1000000"), BENCH_REPEAT (default 3: each figure is the
// median of that many runs, each on a freshly seeded database, because the machine is shared).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, cpus } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { migrateToHead } from "../scripts/migrations.ts";
import { DEFAULT_ROLLUP_OPTIONS } from "../src/worker/rollup/run.ts";
import { SPACING_MS, T0, countedCalls, seed, seedDurations, type Db } from "./rollup-seed.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "rollup");
const SIZES = (process.env.BENCH_SIZES ?? "10000,100000,1000000").split(",").map(Number);
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 3));
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))![1]!;
const ROLLUP_CRON = "*/5 * * * *";
const ROLLUP_QUEUE = "mcpulse-rollup";
/** Runs the cron's rollup job (the worker's queue() handler) until no request waits in call_batches. */
async function rollUntilCaughtUp(mf: Miniflare, db: Db, scheduledFrom: number) {
  const worker = await mf.getWorker();
  let invocations = 0;
  let longestInvocation = 0;
  const started = performance.now();
  for (;;) {
    const invoked = performance.now();
    // One cron run of a one-database deployment: its one rollup job, as the mcpulse-rollup queue delivers it (SPEC §7).
    const body = { v: 1, kind: "rollup", database: "DB", scheduled_time_ms: scheduledFrom + invocations * 300_000 };
    await worker.queue(ROLLUP_QUEUE, [{ id: `run-${invocations}`, timestamp: new Date(), attempts: 1, body }]);
    longestInvocation = Math.max(longestInvocation, (performance.now() - invoked) / 1000);
    invocations += 1;
    const s = await db
      .prepare("SELECT EXISTS (SELECT 1 FROM call_batches) AS waiting")
      .first<{ waiting: number }>();
    if (!s!.waiting) break;
  }
  console.log(`    longest invocation ${longestInvocation.toFixed(2)} s of ${invocations}`);
  return { seconds: (performance.now() - started) / 1000, invocations };
}

/** Baseline: one GROUP BY pass over the same seeded rows, as ingest stored them (the floor of "aggregate the calls once"). */
async function scanBaseline(db: Db): Promise<number> {
  const started = performance.now();
  await db
    .prepare(`SELECT j.value ->> 2 AS tool_name, j.value ->> 1 AS client_name, CAST((j.value ->> 3) / 3600000 AS INTEGER) AS h, COUNT(*),
      SUM(j.value ->> 4), SUM(j.value ->> 6), SUM(j.value ->> 5 = 'ok') FROM call_batches b, json_each(b.calls_json) AS j GROUP BY tool_name, client_name, h`)
    .all();
  return (performance.now() - started) / 1000;
}

async function withWorker<T>(name: string, workerScript: string, fn: (mf: Miniflare, db: Db) => Promise<T>): Promise<T> {
  const mf = new Miniflare(convertV4MiniflareOptions({
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_compat"],
    modules: true,
    scriptPath: workerScript,
    d1Databases: { DB: name },
    d1Persist: join(tmp, name),
    durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
    // BENCH_MAX_QUERIES=12 (the run's 5 fixed statements and one 7-statement calls chunk) makes every
    // invocation one chunk, so the longest invocation is the longest transaction.
    bindings: { RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3", ...(process.env.BENCH_MAX_QUERIES ? { ROLLUP_MAX_QUERIES: process.env.BENCH_MAX_QUERIES } : {}) },
  }));
  try {
    await mf.ready;
    const db = await mf.getD1Database("DB");
    await migrateToHead(db as unknown as D1Database);
    await db.prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES ('bench', 'bench', 0)").run();
    await seedDurations(db);
    return await fn(mf, db);
  } finally {
    await mf.dispose();
  }
}

interface SizeResult {
  calls: number;
  /** Every repetition's from-scratch seconds (the figures are medians). */
  runs?: number[];
  seedSeconds: number;
  seconds: number;
  invocations: number;
  scanSeconds: number;
  counted: number;
  incremental?: { calls: number; seconds: number; invocations: number; counted: number };
}

async function runSize(n: number, workerScript: string, withIncremental: boolean): Promise<SizeResult> {
  return withWorker(`rollup-${n}`, workerScript, async (mf, db) => {
    const seedStarted = performance.now();
    await seed(db, 1, n);
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const scanSeconds = await scanBaseline(db);
    const fromScratch = await rollUntilCaughtUp(mf, db, T0 + n * SPACING_MS + 60_000);
    const counted = await countedCalls(db);
    const result: SizeResult = { calls: n, seedSeconds, scanSeconds, counted, ...fromScratch };
    console.log(
      `${String(n).padStart(9)} calls: rollup ${result.seconds.toFixed(2)} s in ${result.invocations} invocations ` +
        `(${Math.round(n / result.seconds)} calls/s); one GROUP BY scan ${scanSeconds.toFixed(2)} s; seeded in ${seedSeconds.toFixed(1)} s; ` +
        `counted ${counted}`,
    );
    if (withIncremental) {
      const extra = Math.round(n / 100);
      await seed(db, n + 1, n + extra);
      const inc = await rollUntilCaughtUp(mf, db, T0 + (n + extra) * SPACING_MS + 60_000);
      const total = await countedCalls(db);
      result.incremental = { calls: extra, counted: total, ...inc };
      console.log(`  + ${extra} calls: incremental rollup ${inc.seconds.toFixed(2)} s in ${inc.invocations} invocations; counted ${total}`);
    }
    return result;
  });
}

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await bundleWorker(workerScript);
  console.log(`bench:rollup — sizes ${SIZES.join(", ")}; ${availableParallelism()} CPUs (${cpus()[0]?.model ?? "?"})`);
  const largest = Math.max(...SIZES);
  const results: SizeResult[] = [];
  const median = <T>(runs: T[], key: (t: T) => number): T => [...runs].sort((a, b) => key(a) - key(b))[Math.floor(runs.length / 2)]!;
  for (const n of SIZES) {
    const runs: SizeResult[] = [];
    for (let r = 0; r < REPEAT; r++) runs.push(await runSize(n, workerScript, n === largest));
    const picked = { ...median(runs, (x) => x.seconds), runs: runs.map((x) => x.seconds) };
    if (n === largest) picked.incremental = median(runs, (x) => x.incremental!.seconds).incremental;
    results.push(picked);
  }
  rmSync(tmp, { recursive: true, force: true });

  const by = new Map(results.map((r) => [r.calls, r]));
  const smallest = by.get(Math.min(...SIZES))!;
  const rows = results.map((r, k) => {
    const prev = k > 0 ? results[k - 1] : undefined;
    const growth = prev ? `${(r.seconds / prev.seconds).toFixed(1)}× for ${(r.calls / prev.calls).toFixed(0)}× the calls` : "—";
    return `| ${r.calls.toLocaleString("en-US")} | ${r.seconds.toFixed(2)} s (${(r.runs ?? [r.seconds]).map((x) => x.toFixed(2)).join(", ")}) | ${r.invocations} | ${Math.round(r.calls / r.seconds).toLocaleString("en-US")} | ${growth} | ${r.scanSeconds.toFixed(2)} s | ${(r.seconds / r.scanSeconds).toFixed(0)}× |`;
  });
  const big = by.get(largest)!;
  const inc = big.incremental!;
  const checks = [
    `- ${largest.toLocaleString("en-US")} calls from scratch: **${big.seconds.toFixed(1)} s** (target ≤ 30 s: ${big.seconds <= 30 ? "met" : "NOT met"}).`,
    ...results.slice(1).map((r, k) => {
      const ratio = r.seconds / results[k]!.seconds;
      const callsRatio = r.calls / results[k]!.calls;
      return `- ${results[k]!.calls.toLocaleString("en-US")} → ${r.calls.toLocaleString("en-US")} calls: ${ratio.toFixed(1)}× the time for ${callsRatio.toFixed(0)}× the calls (target ≤ ${(callsRatio * 1.2).toFixed(0)}×: ${ratio <= callsRatio * 1.2 ? "met" : "NOT met"}).`;
    }),
    `- Incremental run, ${largest.toLocaleString("en-US")} + ${inc.calls.toLocaleString("en-US")} calls: **${inc.seconds.toFixed(2)} s** = ${(inc.seconds / smallest.seconds).toFixed(1)}× the from-scratch run on ${smallest.calls.toLocaleString("en-US")} (${smallest.seconds.toFixed(2)} s; target ≤ 3×: ${inc.seconds <= 3 * smallest.seconds ? "met" : "NOT met"}).`,
  ];
  const md = `## bench:rollup

\`npm run bench:rollup\` (bench/rollup.ts), ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} CPUs shared with
other jobs — timings are noisy; each figure is the median of ${REPEAT} runs on freshly seeded data; compare the
ratios, measured in the same run, more than the absolute seconds.

The real worker (bundled) runs in Miniflare/workerd with a local D1; the benchmark seeds raw calls
as ingest stores them (one \`call_batches\` row of 500 calls per request: 50 concurrent sessions of 200 calls per 10,000 calls, 8 tools, 5 argument hashes (~3 % of calls retries), 3 clients, 20
calls/s so 72,000 per hour, 1 % of calls 10 minutes late), then runs the \`${ROLLUP_CRON}\` cron's rollup job of its one database
(as the \`${ROLLUP_QUEUE}\` queue delivers it, to the worker's \`queue()\` handler) with default options (≤ 48 D1 statements, chunks of up to 12,000 calls of work: 6 per
invocation, a ${DEFAULT_ROLLUP_OPTIONS.pauseMs} ms pause whenever the next one would hold the database past ${DEFAULT_ROLLUP_OPTIONS.holdMs / 1000} s) until no request waits, so the time includes numbering the calls and appending them to
\`call_state\` (one JSON row per session, client and hour, migration 0011; the flags are recomputed per chunk
from the rows around the new calls, the sessions derived by the rollup). Time = all invocations plus a one-row
progress check after each. Baseline = one \`GROUP BY\` pass over the same raw calls (no retries,
pairs, sessions or histograms): what merely reading the calls once costs. The incremental run adds
1 % more calls after the ${largest.toLocaleString("en-US")} already rolled up (the next minutes of the same
traffic, 1 % of them 10 minutes late, so they land between rolled-up calls) and rolls up again.

| calls | rollup from scratch, median (runs) | invocations | calls/s | growth | baseline scan | rollup ÷ scan |
|---:|---:|---:|---:|---|---:|---:|
${rows.join("\n")}

${checks.join("\n")}

Every run was checked to count every call once (Σ calls of the day rows as reads see them = ${results.map((r) => r.counted.toLocaleString("en-US")).join(", ")}; after the incremental run ${inc.counted.toLocaleString("en-US")}).`;
  console.log(`\n${md}`);
  writeBenchmarkSection("rollup", md);
}

await main();
