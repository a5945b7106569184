// `npm run bench:fairness`: while a noisy project's backlog is rolled up, a quiet project keeps
// reading `/v1/metrics/tools` and ingesting one call at a time. Several noisy shapes (bench/
// fairness-shapes.ts: day-long calls in two dense sessions with 240 startups at every cap; 200-
// character names, ~4,000 argument hashes and 1,000-call requests; many sessions of 1-call
// requests; many distinct arguments and tools), each in a fresh database. Per shape: the rows each
// rollup transaction read (the runs' own reports, D1's meta.rows_read), the longest transaction,
// the quiet project's slowest read and ingest beside a baseline measured in the same run with
// nothing rolling up, and a check that the noisy project is fully counted. One shape also runs
// without the pause between transactions (ROLLUP_PAUSE_MS=0), to show what the pause does.
// Replaces the bench:fairness section of docs/benchmarks.md.
//
// The real worker (bundled) runs in Miniflare/workerd with a local D1, the rollup as the cron's
// job for the database (the worker's queue() handler, default budget of 48 statements: several
// transactions an invocation), back to back; the quiet project's requests go to the same worker
// and the same database meanwhile.
//
// Env: BENCH_SHAPES (indexes into FAIRNESS_SHAPES, default all), BENCH_STARTUPS (default 240, with
// the first shape), BENCH_BASELINE_S (default 4), BENCH_NO_PAUSE_SHAPE (default 1; -1 for none).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { FAIRNESS_SHAPES, seedShape, type NoisyShape } from "./fairness-shapes.ts";
import { migrateToHead } from "../scripts/migrations.ts";
import { startupsWatermarkSql } from "../src/worker/db/rollup-state.ts";
import { dayRowsSourceSql } from "../src/worker/db/day-marks.ts";
import { CHUNK_ROWS_READ_BOUND, DEFAULT_ROLLUP_OPTIONS } from "../src/worker/rollup/run.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "fairness");
const STARTUPS = Number(process.env.BENCH_STARTUPS ?? 240);
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 4);
const SHAPES = (process.env.BENCH_SHAPES ?? FAIRNESS_SHAPES.map((_, i) => i).join(",")).split(",").map(Number);
const NO_PAUSE_SHAPE = Number(process.env.BENCH_NO_PAUSE_SHAPE ?? 1);
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))![1]!;
const ROLLUP_QUEUE = "mcpulse-rollup";
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";

type Db = Awaited<ReturnType<Miniflare["getD1Database"]>>;

/** A startup at every cap of SPEC §1.2, with names no other startup uses (nothing merges). */
function cappedStartup(s: number) {
  return {
    tools: Array.from({ length: 500 }, (_, t) => ({
      name: `t${s}_${t}`, schema_bytes: 100, schema_hash: "5c01", description_hash: "d001", description_norm: "n", policy: null,
    })),
    agree_declared: Array.from({ length: 64 }, (_, f) => ({ field: `f${s}_${f}`, tools: Array.from({ length: 64 }, (_, t) => `x${s}_${t}`) })),
  };
}

export const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
};

interface Probes { read: number[]; ingest: number[] }

/** What one shape's run measured. */
interface ShapeResult {
  shape: NoisyShape;
  pauseMs: number;
  startups: number;
  baseline: Probes;
  during: Probes;
  chunkRowsRead: number[];
  longestTransactionMs: number;
  invocations: number;
  rollupSeconds: number;
  counted: number;
}

/** The quiet project's probe: one read and one ingest of one call after the other, 20 ms apart, while `going()`. */
export async function probeQuiet(
  send: (path: string, init?: RequestInit) => Promise<Response>, quiet: { read_key: string; ingest_key: string }, into: Probes, going: () => boolean,
): Promise<void> {
  while (going()) {
    let t = performance.now();
    const r = await send("/v1/metrics/tools", { headers: { authorization: `Bearer ${quiet.read_key}` } });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`quiet read: HTTP ${r.status}`);
    into.read.push(performance.now() - t);
    t = performance.now();
    const call = { v: 1, type: "call", session_id: "s_quiet_00001", client_name: "claude-ai", tool_name: "search",
      started_at: new Date().toISOString(), duration_ms: 40, outcome: "ok", response_bytes: 100, is_empty: false, args_hash: "52a4fe5fc814" };
    const i = await send("/v1/ingest", {
      method: "POST", headers: { authorization: `Bearer ${quiet.ingest_key}`, "content-type": "application/json" }, body: JSON.stringify({ batch: [call] }),
    });
    await i.arrayBuffer();
    if (i.status !== 202) throw new Error(`quiet ingest: HTTP ${i.status}`);
    into.ingest.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function runShape(workerScript: string, shape: NoisyShape, pauseMs: number, startups: number, k: number): Promise<ShapeResult> {
  const reports: { chunkRowsRead: number[]; longestTransactionMs: number }[] = [];
  const mf = new Miniflare(convertV4MiniflareOptions({
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_compat"],
    modules: true,
    scriptPath: workerScript,
    d1Databases: { DB: `fairness-${k}` },
    d1Persist: join(tmp, `d1-${k}`),
    durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
    bindings: { ADMIN_TOKEN, RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3", ROLLUP_PAUSE_MS: String(pauseMs) },
    // The rollup job logs its report (queues/rollup-jobs.ts): the rows each chunk read, the longest transaction.
    handleStructuredLogs: (log: { message: string }) => {
      const at = log.message.indexOf('{"event":"rollup"');
      if (at >= 0) reports.push(JSON.parse(log.message.slice(at)));
    },
  }));
  try {
    await mf.ready;
    const db: Db = await mf.getD1Database("DB");
    await migrateToHead(db as unknown as D1Database);
    const send = (path: string, init?: RequestInit) => mf.dispatchFetch(`http://bench${path}`, init as never) as unknown as Promise<Response>;
    const admin = async (name: string) => {
      const res = await send("/v1/admin/projects", {
        method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ name }),
      });
      if (res.status !== 201) throw new Error(`create project: HTTP ${res.status}`);
      return (await res.json()) as { project_id: string; ingest_key: string; read_key: string };
    };
    const quiet = await admin("quiet");
    const noisy = await admin("noisy");
    const now = Date.now();
    await seedShape(db as unknown as D1Database, shape, noisy.project_id, now - 60_000);
    for (let s = 0; s < startups; s++) {
      const { tools, agree_declared } = cappedStartup(s);
      await db
        .prepare(`INSERT INTO raw_startups (project_id, session_id, client_name, received_at_ms, tools_json, agree_declared_json)
          VALUES (?1, ?2, 'flood', ?3, ?4, ?5)`)
        .bind(noisy.project_id, `s_start_${s}`, now - 60_000 + s, JSON.stringify(tools), JSON.stringify(agree_declared))
        .run();
    }

    let probing = true;
    const baseline: Probes = { read: [], ingest: [] };
    const baselineRun = probeQuiet(send, quiet, baseline, () => probing);
    await new Promise((r) => setTimeout(r, BASELINE_S * 1000));
    probing = false;
    await baselineRun;

    const worker = await mf.getWorker();
    const during: Probes = { read: [], ingest: [] };
    probing = true;
    const duringRun = probeQuiet(send, quiet, during, () => probing);
    const started = performance.now();
    let invocations = 0;
    const noisyLeft = () =>
      db.prepare(`SELECT (SELECT COUNT(*) FROM call_batches WHERE project_id = ?1)
          + (SELECT COUNT(*) FROM raw_startups WHERE project_id = ?1 AND startup_seq > ${startupsWatermarkSql()}) AS n`)
        .bind(noisy.project_id).first<{ n: number }>();
    try {
      for (;;) {
        // One cron run of a one-database deployment: its rollup job, as the mcpulse-rollup queue delivers it.
        const body = { v: 1, kind: "rollup", database: "DB", scheduled_time_ms: now + invocations * 300_000 };
        await worker.queue(ROLLUP_QUEUE, [{ id: `run-${invocations}`, timestamp: new Date(), attempts: 1, body }]);
        invocations += 1;
        if ((await noisyLeft())!.n === 0) break;
        if (invocations > 20_000) throw new Error("the noisy project was never caught up");
      }
    } finally {
      probing = false;
      await duringRun;
    }
    const rollupSeconds = (performance.now() - started) / 1000;
    // Counted as reads count it: day rows plus the hour rows not folded into them yet (db/day-marks.ts).
    const counted = (await db.prepare(`SELECT COALESCE(SUM(calls), 0) AS n FROM ${dayRowsSourceSql(["calls"], "?1", "0", "9e15")}`).bind(noisy.project_id).first<{ n: number }>())!.n;
    if (counted !== shape.calls) throw new Error(`${shape.name}: noisy project counted ${counted} of ${shape.calls} calls`);
    if (startups) {
      const declared = (await db.prepare("SELECT COUNT(*) AS n FROM agreement_declarations WHERE project_id = ?1").bind(noisy.project_id).first<{ n: number }>())!.n;
      if (declared !== startups * 64 * 64) throw new Error(`noisy project declared ${declared} of ${startups * 64 * 64}`);
    }
    if (reports.length < invocations) throw new Error(`${reports.length} rollup reports logged for ${invocations} invocations`);
    return {
      shape, pauseMs, startups, baseline, during, invocations, rollupSeconds, counted,
      chunkRowsRead: reports.flatMap((r) => r.chunkRowsRead), longestTransactionMs: Math.max(...reports.map((r) => r.longestTransactionMs)),
    };
  } finally {
    await mf.dispose();
  }
}

const ms = (x: number) => `${Math.round(x).toLocaleString("en-US")} ms`;
const n = (x: number) => Math.round(x).toLocaleString("en-US");

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await bundleWorker(workerScript);
  const loadBefore = loadavg();
  console.log(`bench:fairness — shapes ${SHAPES.join(", ")}; ${availableParallelism()} CPUs (${cpus()[0]?.model ?? "?"}); load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`);
  const runs: [NoisyShape, number, number][] = SHAPES.map((i, k) => [FAIRNESS_SHAPES[i]!, DEFAULT_ROLLUP_OPTIONS.pauseMs, k === 0 && i === 0 ? STARTUPS : 0]);
  if (NO_PAUSE_SHAPE >= 0) runs.push([FAIRNESS_SHAPES[NO_PAUSE_SHAPE]!, 0, 0]);
  const results: ShapeResult[] = [];
  try {
    for (const [k, [shape, pauseMs, startups]] of runs.entries()) {
      const r = await runShape(workerScript, shape, pauseMs, startups, k);
      results.push(r);
      console.log(`${shape.name}, pause ${pauseMs} ms: rows read per transaction max ${n(Math.max(...r.chunkRowsRead))} p50 ${n(quantile(r.chunkRowsRead, 0.5))}; longest transaction ${ms(r.longestTransactionMs)}; quiet read ${ms(Math.max(...r.baseline.read))} → ${ms(Math.max(...r.during.read))}, ingest ${ms(Math.max(...r.baseline.ingest))} → ${ms(Math.max(...r.during.ingest))}; ${r.invocations} invocations, ${r.rollupSeconds.toFixed(0)} s`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  const loadAfter = loadavg();
  const verdict = (x: number) => (x < 1_000 ? "under 1 s" : "**over 1 s**");
  const rows = results.map((r) => {
    const read = Math.max(...r.during.read);
    const ingest = Math.max(...r.during.ingest);
    return `| ${r.shape.name}${r.startups ? ` + ${r.startups} capped startups` : ""} | ${r.pauseMs} ms | ${n(r.shape.calls)} | ${n(Math.max(...r.chunkRowsRead))} / ${n(quantile(r.chunkRowsRead, 0.5))} (${r.chunkRowsRead.length}) | ${ms(r.longestTransactionMs)} | ${ms(Math.max(...r.baseline.read))} → **${ms(read)}** (${verdict(read)}) | ${ms(Math.max(...r.baseline.ingest))} → **${ms(ingest)}** (${verdict(ingest)}) | ${r.invocations}, ${r.rollupSeconds.toFixed(0)} s | ${n(r.counted)} ✓ |`;
  });
  const md = `## bench:fairness

\`npm run bench:fairness\` (bench/fairness.ts), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${availableParallelism()} CPUs shared with other
jobs (load average ${loadBefore.map((x) => x.toFixed(1)).join(" / ")} before, ${loadAfter.map((x) => x.toFixed(1)).join(" / ")} after): timings are noisy.

The real worker (bundled) in Miniflare/workerd with one local D1 per shape. A noisy project's backlog
(bench/fairness-shapes.ts) is rolled up by the cron's job for the database (the worker's \`queue()\`
handler, the default 48 statements: up to 5 calls chunks an invocation, with the pause between
transactions shown), invocations back to back, while a quiet project reads \`/v1/metrics/tools\` and
ingests one call, one request after the other, 20 ms apart. Baseline: the same quiet requests for
${BASELINE_S} s before, with nothing rolling up. Rows read are the sum of D1's \`meta.rows_read\` over a
calls chunk's statements, as the runs report them (bound ${n(CHUNK_ROWS_READ_BOUND)}, rollup/run.ts); the longest
transaction is the wall time of the longest chunk or step inside the worker.

| noisy shape | pause | calls | rows read per calls transaction: max / p50 (chunks) | longest transaction | quiet read, slowest: baseline → during | quiet ingest, slowest: baseline → during | invocations, time | counted |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

${FAIRNESS_SHAPES.map((s) => `- *${s.name}*: ${s.about}; ${n(s.calls)} calls in ${n(s.sessions)} sessions over ${s.hours} h, ${s.tools} tools of ${s.toolNameChars} characters, ${n(s.argsHashes)} argument hashes, ${n(s.requestCalls)} calls a request, durations ${s.durationsMs.map((d) => n(d)).join(" / ")} ms in turn.`).join("\n")}`;
  console.log(`\n${md}`);
  if (!process.env.BENCH_NO_WRITE) writeBenchmarkSection("fairness", md);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
