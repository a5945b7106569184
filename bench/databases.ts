// `npm run bench:databases`: rollup capacity with one database against two (SPEC §7, docs/scaling.md).
// The real worker (bundled) runs in Miniflare/workerd with two local D1 databases. The same calls
// are seeded either all into DB, or half into DB and half into DB_2; each cron run is then what
// Cloudflare runs — one rollup job per database, each its own queue invocation with its own
// statement budget (the worker's queue() handler, as the mcpulse-rollup queue delivers them; the
// jobs of one run go concurrently) — until no request waits. Prints calls folded per cron run and
// the wall time, and replaces the bench:databases section of docs/benchmarks.md.
//
// Env: BENCH_CALLS (default 400000: the total, split over the databases), BENCH_MAX_QUERIES (default
// 48, the free plan's budget per invocation).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { migrateToHead } from "../scripts/migrations.ts";
import { SPACING_MS, T0, countedCalls, seed, seedDurations, type Db } from "./rollup-seed.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "databases");
const CALLS = Number(process.env.BENCH_CALLS ?? 400_000);
const MAX_QUERIES = process.env.BENCH_MAX_QUERIES ?? "48";
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))![1]!;
const NAMES = ["DB", "DB_2"];

type Result = { databases: number; runs: number; seconds: number; longestRunSeconds: number; perRun: number[]; counted: number };

async function measure(databases: number, workerScript: string): Promise<Result> {
  const mf = new Miniflare(convertV4MiniflareOptions({
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_compat"],
    modules: true,
    scriptPath: workerScript,
    d1Databases: { DB: `databases-${databases}-a`, DB_2: `databases-${databases}-b` },
    d1Persist: join(tmp, `d${databases}`),
    durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
    bindings: { RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3", ROLLUP_MAX_QUERIES: MAX_QUERIES },
  }));
  try {
    await mf.ready;
    const dbs: Db[] = [];
    for (const name of NAMES) {
      const db = await mf.getD1Database(name);
      await migrateToHead(db as unknown as D1Database);
      await db.prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES ('bench', 'bench', 0)").run();
      await seedDurations(db);
      dbs.push(db);
    }
    // The same calls: all in DB, or the first half in DB and the second in DB_2.
    const share = Math.ceil(CALLS / databases);
    for (let d = 0; d < databases; d++) await seed(dbs[d]!, d * share + 1, Math.min(CALLS, (d + 1) * share));
    const worker = await mf.getWorker();
    const scheduledFrom = T0 + CALLS * SPACING_MS + 60_000;
    const waiting = async (db: Db) => (await db.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches").first<{ n: number }>())!.n;
    const perRun: number[] = [];
    let longestRunSeconds = 0;
    const started = performance.now();
    for (let run = 0; ; run++) {
      const before = (await Promise.all(dbs.map(waiting))).reduce((a, b) => a + b, 0);
      if (before === 0) break;
      const runStarted = performance.now();
      // One job per database of this deployment, as the cron sends them; Cloudflare runs them as separate invocations.
      await Promise.all(
        NAMES.map((database) =>
          worker.queue("mcpulse-rollup", [{ id: `${database}-${run}`, timestamp: new Date(), attempts: 1, body: { v: 1, kind: "rollup", database, scheduled_time_ms: scheduledFrom + run * 300_000 } }]),
        ),
      );
      longestRunSeconds = Math.max(longestRunSeconds, (performance.now() - runStarted) / 1000);
      const after = (await Promise.all(dbs.map(waiting))).reduce((a, b) => a + b, 0);
      perRun.push(before - after);
      if (after === before) throw new Error("a cron run folded nothing in");
    }
    const seconds = (performance.now() - started) / 1000;
    let counted = 0;
    for (const db of dbs) counted += await countedCalls(db);
    const result = { databases, runs: perRun.length, seconds, longestRunSeconds, perRun, counted };
    console.log(`${databases} database(s): ${result.runs} cron runs, ${seconds.toFixed(1)} s, longest run ${longestRunSeconds.toFixed(2)} s, folded per run ${perRun.join(", ")}; counted ${counted}`);
    return result;
  } finally {
    await mf.dispose();
  }
}

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await bundleWorker(workerScript);
  console.log(`bench:databases — ${CALLS} calls, ${MAX_QUERIES} statements per invocation; ${availableParallelism()} CPUs`);
  const one = await measure(1, workerScript);
  const two = await measure(2, workerScript);
  rmSync(tmp, { recursive: true, force: true });
  for (const r of [one, two]) if (r.counted !== CALLS) throw new Error(`counted ${r.counted} of ${CALLS} calls`);
  const firstRun = (r: Result) => r.perRun[0]!;
  const row = (r: Result) =>
    `| ${r.databases} | ${firstRun(r).toLocaleString("en-US")} | ${r.runs} | ${r.seconds.toFixed(1)} s | ${r.longestRunSeconds.toFixed(2)} s |`;
  const md = `## bench:databases

\`npm run bench:databases\` (bench/databases.ts), ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} CPUs shared with other jobs
(timings are noisy; the counts are not). The real worker (bundled) in Miniflare/workerd with two local D1
databases; bench:rollup's workload (${CALLS.toLocaleString("en-US")} calls, 500 per request) seeded all into \`DB\`, or half
into \`DB\` and half into \`DB_2\`. A cron run is one rollup job per database (the worker's \`queue()\`
handler, as the \`mcpulse-rollup\` queue delivers them, each job its own invocation with
${MAX_QUERIES} statements; one run's jobs go concurrently), repeated until no request waits.

| databases | calls folded by the first cron run | cron runs to catch up | wall time | longest run |
|---:|---:|---:|---:|---:|
${row(one)}
${row(two)}

- Calls one cron run folds in: **${(firstRun(two) / firstRun(one)).toFixed(2)}×** with two databases (each job spends its own budget).
- Catch-up: ${one.runs} runs with one database, ${two.runs} with two; wall time ${(two.seconds / one.seconds).toFixed(2)}× — here both
  databases share this machine's ${availableParallelism()} CPUs, while on Cloudflare each database and each invocation runs on its own.
- Every call was counted once (Σ calls of the day rows as reads see them = ${one.counted.toLocaleString("en-US")} and ${two.counted.toLocaleString("en-US")}).`;
  console.log(`\n${md}`);
  writeBenchmarkSection("databases", md);
}

await main();
