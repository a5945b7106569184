// `npm run bench:fairness`: while a noisy project is rolled up — 200,000 calls in 2 sessions, half
// of them lasting the 1-day maximum (SPEC §1.2), and 240 startups at every cap (500 tools, 64
// agreement fields × 64 tools) — a quiet project keeps reading `/v1/metrics/tools` and ingesting
// one call at a time. Prints the quiet project's slowest read and ingest beside a baseline
// measured in the same run with nothing rolling up, and the longest rollup transaction; checks
// that the noisy project is fully counted; replaces the bench:fairness section of docs/benchmarks.md.
//
// The real worker (bundled) runs in Miniflare/workerd with a local D1. ROLLUP_MAX_QUERIES=12 makes
// every cron invocation run one chunk (the run's 4 fixed statements and an 8-statement startups chunk, or
// an 8-statement calls chunk), so the longest invocation is the longest transaction; the quiet project's
// requests go to the same worker and the same database meanwhile.
//
// Env: BENCH_NOISY_CALLS (default 200000), BENCH_STARTUPS (default 240), BENCH_BASELINE_S (default 5).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { durationBucket } from "../src/worker/histogram.ts";
import { migrateToHead } from "../scripts/migrations.ts";
import { startupsWatermarkSql } from "../src/worker/db/rollup-state.ts";
import { dayRowsSourceSql } from "../src/worker/db/day-marks.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "fairness");
const NOISY_CALLS = Number(process.env.BENCH_NOISY_CALLS ?? 200_000);
const STARTUPS = Number(process.env.BENCH_STARTUPS ?? 240);
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 5);
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))![1]!;
const ROLLUP_CRON = "*/5 * * * *";
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const DAY = 86_400_000;
const MAX_QUERIES = 12;

type Db = Awaited<ReturnType<Miniflare["getD1Database"]>>;

// The noisy project's calls: call i of session i % 2, the sessions' calls evenly over the 2 days
// before `?3` (about 2,100 an hour each), in requests of 500 calls of one session, in time order
// with both sessions' requests interleaved; every other call lasts the 1-day maximum.
const DURATIONS = [DAY, 250, DAY, 1_200] as const;
const SEED_SQL = `WITH RECURSIVE n(i) AS (SELECT CAST(?1 AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
INSERT INTO call_batches (project_id, received_at_ms, call_count, calls_json)
SELECT ?4, MAX(received_at_ms), COUNT(*), json_group_array(json(call)) FROM (
  SELECT i, i % 2 AS s, (i / 2) / 500 AS request, json_array('s_noisy_' || (i % 2), 'claude-ai', 'tool_' || ((i * 7919) % 97 % 6),
    ?3 - 2 * ${DAY} + (i / 2) * (2.0 * ${DAY} / (?5 / 2)) + (i % 2) * 7,
    CASE i % 4 ${DURATIONS.map((d, k) => `WHEN ${k} THEN ${d}`).join(" ")} END,
    CASE i % 20 WHEN 0 THEN 'tool_error' ELSE 'ok' END, (i * 101) % 5000, 0, printf('%012x', (i * 31) % 5),
    CASE i % 4 ${DURATIONS.map((d, k) => `WHEN ${k} THEN ${durationBucket(d)}`).join(" ")} END) AS call,
    ?3 + i AS received_at_ms
  FROM n ORDER BY i)
GROUP BY s, request ORDER BY MIN(i)`;

/** A startup at every cap of SPEC §1.2, with names no other startup uses (nothing merges). */
function cappedStartup(s: number) {
  return {
    tools: Array.from({ length: 500 }, (_, t) => ({
      name: `t${s}_${t}`, schema_bytes: 100, schema_hash: "5c01", description_hash: "d001", description_norm: "n", policy: null,
    })),
    agree_declared: Array.from({ length: 64 }, (_, f) => ({ field: `f${s}_${f}`, tools: Array.from({ length: 64 }, (_, t) => `x${s}_${t}`) })),
  };
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
};

interface Probes { read: number[]; ingest: number[] }

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await bundleWorker(workerScript);
  const loadBefore = loadavg();
  console.log(`bench:fairness — ${NOISY_CALLS} noisy calls, ${STARTUPS} capped startups; ${availableParallelism()} CPUs (${cpus()[0]?.model ?? "?"}); load ${loadBefore.map((x) => x.toFixed(2)).join(" ")}`);
  const mf = new Miniflare(convertV4MiniflareOptions({
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_compat"],
    modules: true,
    scriptPath: workerScript,
    d1Databases: { DB: "fairness" },
    d1Persist: join(tmp, "d1"),
    durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
    bindings: { ADMIN_TOKEN, RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3", ROLLUP_MAX_QUERIES: String(MAX_QUERIES) },
  }));
  try {
    await mf.ready;
    const db: Db = await mf.getD1Database("DB");
    await migrateToHead(db as unknown as D1Database);
    const admin = async (name: string) => {
      const res = await mf.dispatchFetch("http://bench/v1/admin/projects", {
        method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ name }),
      });
      if (res.status !== 201) throw new Error(`create project: HTTP ${res.status}`);
      return (await res.json()) as { project_id: string; ingest_key: string; read_key: string };
    };
    const quiet = await admin("quiet");
    const noisy = await admin("noisy");

    const now = Date.now();
    const seeded = performance.now();
    for (let lo = 1; lo <= NOISY_CALLS; lo += 100_000) {
      await db.prepare(SEED_SQL).bind(lo, Math.min(NOISY_CALLS, lo + 99_999), now - 60_000, noisy.project_id, NOISY_CALLS).run();
    }
    for (let s = 0; s < STARTUPS; s++) {
      const { tools, agree_declared } = cappedStartup(s);
      await db
        .prepare(`INSERT INTO raw_startups (project_id, session_id, client_name, received_at_ms, tools_json, agree_declared_json)
          VALUES (?1, ?2, 'flood', ?3, ?4, ?5)`)
        .bind(noisy.project_id, `s_start_${s}`, now - 60_000 + s, JSON.stringify(tools), JSON.stringify(agree_declared))
        .run();
    }
    console.log(`seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

    // The quiet project: one read and one ingest of one call after the other, 20 ms apart.
    let probing = true;
    const probe = async (into: Probes) => {
      while (probing) {
        let t = performance.now();
        const r = await mf.dispatchFetch("http://bench/v1/metrics/tools", { headers: { authorization: `Bearer ${quiet.read_key}` } });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`quiet read: HTTP ${r.status}`);
        into.read.push(performance.now() - t);
        t = performance.now();
        const call = { v: 1, type: "call", session_id: "s_quiet_00001", client_name: "claude-ai", tool_name: "search",
          started_at: new Date().toISOString(), duration_ms: 40, outcome: "ok", response_bytes: 100, is_empty: false, args_hash: "52a4fe5fc814" };
        const i = await mf.dispatchFetch("http://bench/v1/ingest", {
          method: "POST", headers: { authorization: `Bearer ${quiet.ingest_key}`, "content-type": "application/json" }, body: JSON.stringify({ batch: [call] }),
        });
        await i.arrayBuffer();
        if (i.status !== 202) throw new Error(`quiet ingest: HTTP ${i.status}`);
        into.ingest.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    const baseline: Probes = { read: [], ingest: [] };
    const baselineRun = probe(baseline);
    await new Promise((r) => setTimeout(r, BASELINE_S * 1000));
    probing = false;
    await baselineRun;

    const worker = await mf.getWorker();
    const during: Probes = { read: [], ingest: [] };
    probing = true;
    const duringRun = probe(during);
    const invocations: number[] = [];
    const started = performance.now();
    const noisyLeft = () =>
      db.prepare(`SELECT (SELECT COUNT(*) FROM call_batches WHERE project_id = ?1)
          + (SELECT COUNT(*) FROM raw_startups WHERE project_id = ?1 AND startup_seq > ${startupsWatermarkSql()}) AS n`)
        .bind(noisy.project_id).first<{ n: number }>();
    try {
      for (let k = 0; ; k++) {
        const t = performance.now();
        await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(now + k * 300_000) });
        invocations.push(performance.now() - t);
        if (process.env.BENCH_VERBOSE) console.log(`invocation ${k}: ${Math.round(performance.now() - t)} ms`);
        if ((await noisyLeft())!.n === 0) break;
        if (k > 20_000) throw new Error("the noisy project was never caught up");
      }
    } finally {
      probing = false;
      await duringRun;
    }
    const rollupSeconds = (performance.now() - started) / 1000;
    const loadAfter = loadavg();

    // Counted as reads count it: day rows plus the hour rows not folded into them yet (db/day-marks.ts).
    const counted = (await db.prepare(`SELECT COALESCE(SUM(calls), 0) AS n FROM ${dayRowsSourceSql(["calls"], "?1", "0", "9e15")}`).bind(noisy.project_id).first<{ n: number }>())!.n;
    const declared = (await db.prepare("SELECT COUNT(*) AS n FROM agreement_declarations WHERE project_id = ?1").bind(noisy.project_id).first<{ n: number }>())!.n;
    if (counted !== NOISY_CALLS) throw new Error(`noisy project counted ${counted} of ${NOISY_CALLS} calls`);
    if (declared !== STARTUPS * 64 * 64) throw new Error(`noisy project declared ${declared} of ${STARTUPS * 64 * 64}`);

    const ms = (x: number) => `${Math.round(x).toLocaleString("en-US")} ms`;
    const line = (name: string, xs: number[]) => `| ${name} | ${xs.length} | ${ms(quantile(xs, 0.5))} | ${ms(quantile(xs, 0.99))} | **${ms(Math.max(...xs))}** |`;
    const slowestRead = Math.max(...during.read);
    const slowestIngest = Math.max(...during.ingest);
    const longest = Math.max(...invocations);
    const verdict = (x: number) => (x < 1_000 ? "under 1 s: met" : "NOT under 1 s");
    const md = `## bench:fairness

\`npm run bench:fairness\` (bench/fairness.ts), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${availableParallelism()} CPUs shared with other
jobs (load average ${loadBefore.map((x) => x.toFixed(1)).join(" / ")} before, ${loadAfter.map((x) => x.toFixed(1)).join(" / ")} after): timings are noisy.

The real worker (bundled) in Miniflare/workerd with one local D1. A noisy project's backlog is
rolled up — ${NOISY_CALLS.toLocaleString("en-US")} calls in 2 sessions over 2 days (about ${Math.round(NOISY_CALLS / 2 / 48).toLocaleString("en-US")} an hour each), every
other call lasting the 1-day maximum, in requests of 500, and ${STARTUPS} startups at every cap
(500 tools, 64 agreement fields × 64 tools) — by cron invocations of one chunk each
(\`ROLLUP_MAX_QUERIES=${MAX_QUERIES}\`, default chunk bounds), back to back, while a quiet project reads
\`/v1/metrics/tools\` and ingests one call, one request after the other, 20 ms apart. Baseline: the same
quiet requests for ${BASELINE_S} s before, with nothing rolling up.

| quiet project | requests | median | p99 | slowest |
|---|---:|---:|---:|---:|
${line("read, baseline", baseline.read)}
${line("read, during the rollup", during.read)}
${line("ingest, baseline", baseline.ingest)}
${line("ingest, during the rollup", during.ingest)}

- Slowest quiet read during the rollup: **${ms(slowestRead)}** (${verdict(slowestRead)}); slowest ingest: **${ms(slowestIngest)}** (${verdict(slowestIngest)}).
- Longest rollup invocation (one transaction, plus the probe and \`as_of\`): **${ms(longest)}**; median ${ms(quantile(invocations, 0.5))}, ${invocations.length} invocations, ${rollupSeconds.toFixed(0)} s in all.
- The noisy project was fully counted: ${counted.toLocaleString("en-US")} calls in its answers (day rows and the hour rows not folded yet), ${declared.toLocaleString("en-US")} declared agreement tools.`;
    console.log(`\n${md}`);
    if (!process.env.BENCH_NO_WRITE) writeBenchmarkSection("fairness", md);
  } finally {
    await mf.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
