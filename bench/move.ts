// `npm run bench:move`: what moving a project between databases costs (SPEC §7, docs/scaling.md
// "Moving a project"). The real worker (bundled) runs in Miniflare/workerd with two local D1
// databases; a project of BENCH_CALLS calls (default 20,000) spread over three days, in sessions,
// is folded in by the worker's own rollup jobs, then moved from DB to DB_2 by the move's own steps
// (moves/steps.ts, one step per call, called from here through Miniflare's D1 bindings, so every
// statement also crosses from Node into workerd: the step times are upper bounds). Waits (the
// settle and grace periods) are skipped by the move's clock, not slept. Prints the steps, the
// slowest step and the total, and replaces the bench:move section of docs/benchmarks.md.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { migrateToHead } from "../scripts/migrations.ts";
import { seedCallBatchesSql, seedDurations, type Db } from "./rollup-seed.ts";
import type { Env } from "../src/worker/env.ts";
import { startMove } from "../src/worker/moves/start.ts";
import { MOVE_PAGE_ROWS, runMoveSteps } from "../src/worker/moves/steps.ts";
import { findMove } from "../src/worker/db/moves.ts";
import { tablesWithProjectRows } from "../src/worker/db/projects.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "move");
const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))![1]!;
const DAY_MS = 86_400_000;
const T0 = Date.UTC(2026, 10, 1);
/** Three days of calls, evenly spread. */
const SPACING_MS = Math.floor((3 * DAY_MS) / CALLS);

// 100 sessions of 200 calls per 20,000 calls, 8 tools, 3 clients, outcomes 85 % ok (bench:rollup's mix), 500 calls a request.
const SEED_SQL = seedCallBatchesSql({
  numbers: "SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1",
  project: "'moved'",
  session: "'s_' || (i % 100 + 100 * (i / 20000))",
  client: "CASE (i % 100) % 3 WHEN 0 THEN 'claude-ai' WHEN 1 THEN 'cursor' ELSE 'vscode' END",
  startedAt: `?2 + i * ${SPACING_MS}`,
  receivedAt: `?2 + i * ${SPACING_MS} + 1000`,
});

async function rowsOf(db: Db, projectId: string): Promise<number> {
  let n = 0;
  for (const table of await tablesWithProjectRows(db as unknown as D1Database)) {
    if (["api_keys", "project_databases", "dashboard_sessions", "moves", "projects"].includes(table)) continue;
    n += (await db.prepare(`SELECT COUNT(*) AS n FROM "${table}" WHERE project_id = ?1`).bind(projectId).first<{ n: number }>())!.n;
  }
  return n;
}

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const workerScript = join(tmp, "worker.js");
  await bundleWorker(workerScript);
  const mf = new Miniflare(convertV4MiniflareOptions({
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ["nodejs_compat"],
    modules: true,
    scriptPath: workerScript,
    d1Databases: { DB: "move-a", DB_2: "move-b" },
    d1Persist: join(tmp, "d1"),
    durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
    bindings: { RAW_RETENTION_DAYS: "30", PRICE_PER_MILLION_TOKENS_USD: "3", ROLLUP_MAX_QUERIES: "1000" },
  }));
  try {
    await mf.ready;
    const db = await mf.getD1Database("DB");
    const db2 = await mf.getD1Database("DB_2");
    for (const d of [db, db2]) await migrateToHead(d as unknown as D1Database);
    await db.prepare("INSERT INTO projects (project_id, name, created_at_ms) VALUES ('moved', 'moved', 0)").run();
    await seedDurations(db);
    await db.prepare(SEED_SQL).bind(CALLS, T0).run();
    const worker = await mf.getWorker();
    const scheduled = T0 + 3 * DAY_MS + 600_000;
    for (let run = 0; run < 50; run++) {
      const waiting = (await db.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches").first<{ n: number }>())!.n;
      if (waiting === 0) break;
      await worker.queue("mcpulse-rollup", [{ id: `r${run}`, timestamp: new Date(), attempts: 1, body: { v: 1, kind: "rollup", database: "DB", scheduled_time_ms: scheduled + run } }]);
    }
    const counted = (await db.prepare("SELECT COALESCE(SUM(calls), 0) AS n FROM tool_hour_metrics WHERE project_id = 'moved'").first<{ n: number }>())!.n;
    if (counted !== CALLS) throw new Error(`the seed folded ${counted} of ${CALLS} calls`);
    const rowsBefore = await rowsOf(db, "moved");

    const env = { DB: db, DB_2: db2, KEY_BUDGET: await mf.getDurableObjectNamespace("KEY_BUDGET") } as unknown as Env;
    const move = await startMove(env, "moved", "DB_2", scheduled);
    let clock = scheduled;
    const load = loadavg()[0]!;
    const times: number[] = [];
    const started = performance.now();
    for (;;) {
      const t = performance.now();
      const r = await runMoveSteps(env, move.move_id, clock, { maxSteps: 1 });
      times.push(performance.now() - t);
      if (r.finished) break;
      clock = r.waitUntilMs ?? clock + 1_000;
    }
    const totalSeconds = (performance.now() - started) / 1000;
    const done = (await findMove(db as unknown as D1Database, move.move_id))!;
    if (done.state !== "done") throw new Error(`the move ended ${done.state}: ${done.error}`);
    const left = await rowsOf(db, "moved");
    const moved = await rowsOf(db2, "moved");
    const countedAfter = (await db2.prepare("SELECT COALESCE(SUM(calls), 0) AS n FROM tool_hour_metrics WHERE project_id = 'moved'").first<{ n: number }>())!.n;
    if (left !== 0 || countedAfter !== CALLS) throw new Error(`after the move: ${left} rows left in the source, ${countedAfter} calls counted in the target`);
    const sorted = [...times].sort((a, b) => a - b);
    const slowest = sorted.at(-1)!;
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const md = `## bench:move

\`npm run bench:move\` (bench/move.ts), ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} CPUs shared with other jobs (load average ${load.toFixed(1)}
when the move started; timings are noisy, the counts are not). The real worker (bundled) in Miniflare/workerd with two
local D1 databases; a project of ${CALLS.toLocaleString("en-US")} calls over three days (100 sessions, 8 tools, 3 clients), folded in by
the worker's rollup jobs, then moved from \`DB\` to \`DB_2\` by the move's own steps, one at a time (pages of ${MOVE_PAGE_ROWS}
rows; each step called from Node through Miniflare's bindings, so every statement also crosses into workerd: upper bounds).
The settle and grace waits are skipped by the move's clock.

| calls | rows of the project (source) | steps | slowest step | median step | total (waits aside) |
|---:|---:|---:|---:|---:|---:|
| ${CALLS.toLocaleString("en-US")} | ${rowsBefore.toLocaleString("en-US")} | ${done.steps} | ${slowest.toFixed(0)} ms | ${median.toFixed(0)} ms | ${totalSeconds.toFixed(1)} s |

- Most rows one step wrote or deleted: ${done.max_step_rows}. Rows copied per table: ${Object.entries(JSON.parse(done.counts_json) as Record<string, number>).map(([t, n]) => `${t} ${n}`).join(", ")}.
- After the move: ${moved.toLocaleString("en-US")} rows of the project in \`DB_2\`, none left in \`DB\`; Σ calls of tool_hour_metrics = ${countedAfter.toLocaleString("en-US")}.`;
    console.log(`\n${md}`);
    writeBenchmarkSection("move", md);
  } finally {
    await mf.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
