// `npm run bench:fairness:dev`: bench:fairness against a real `npm run dev` (wrangler dev with its
// local D1, queues and cron), one noisy shape (BENCH_SHAPE, default 1: 200-character names, ~4,000
// argument hashes, 1,000-call requests, day-long calls). wrangler dev is started with `setsid` in
// the background (its own process group, killed as a whole afterwards) on a private port and local
// state directory:
//   1. start it, create the quiet and the noisy project through the admin API, stop it;
//   2. seed the noisy project's calls straight into that local D1's SQLite file (node:sqlite);
//   3. start it again, measure the quiet project's reads and ingests (baseline), then keep asking
//      `/__scheduled` for the rollup cron every few seconds — that only queues the database's rollup
//      job, as in production; a job started while another still runs finds the lease held — until
//      the noisy project is fully counted, measuring the quiet project meanwhile.
// The rows read per transaction and the longest transaction come from the rollup jobs' log lines.
// Adds its figures to the bench:fairness section's dev part of docs/benchmarks.md.
//
// Env: BENCH_SHAPE (default 1), BENCH_BASELINE_S (default 4), BENCH_DEV_PORT (default 8799).
import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { FAIRNESS_SHAPES, seedShape } from "./fairness-shapes.ts";
import { probeQuiet, quantile } from "./fairness.ts";
import { CHUNK_ROWS_READ_BOUND, DEFAULT_ROLLUP_OPTIONS } from "../src/worker/rollup/run.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "fairness-dev");
const persist = join(tmp, "state");
const PORT = Number(process.env.BENCH_DEV_PORT ?? 8799);
const BASE = `http://127.0.0.1:${PORT}`;
const SHAPE = FAIRNESS_SHAPES[Number(process.env.BENCH_SHAPE ?? 1)]!;
const BASELINE_S = Number(process.env.BENCH_BASELINE_S ?? 4);
const TRIGGER_EVERY_MS = 3_000;

interface Dev { pid: number; log: string }

/** Starts `npm run dev` in a session of its own (setsid: pid = process group id) with its output in a log file. */
async function startDev(name: string): Promise<Dev> {
  const log = join(tmp, `${name}.log`);
  const fd = openSync(log, "w");
  // Not detached: setsid then makes the child itself the session and group leader, so its pid names the group.
  const child = spawn("setsid", ["npm", "run", "dev", "--", "--port", String(PORT), "--persist-to", persist], {
    cwd: root, stdio: ["ignore", fd, fd], env: { ...process.env, MCPULSE_DEV_URL_FILE: join(tmp, "dev-url") },
  });
  closeSync(fd);
  const dev = { pid: child.pid!, log };
  for (let i = 0; i < 240; i++) {
    try {
      await fetch(`${BASE}/`);
      return dev;
    } catch {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  stopDev(dev);
  throw new Error(`wrangler dev did not start (see ${log})`);
}

function stopDev(dev: Dev): void {
  try {
    process.kill(-dev.pid, "SIGTERM");
  } catch {
    // Already gone.
  }
}

/** Waits until every process of the group has exited (workerd writes its SQLite files back as it closes them). */
async function waitStopped(dev: Dev): Promise<void> {
  for (let i = 0; i < 120; i++) {
    try {
      process.kill(-dev.pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  process.kill(-dev.pid, "SIGKILL");
  throw new Error("wrangler dev did not stop");
}

/** A request from the client's own address (CF-Connecting-IP, which wrangler dev lets the client set). */
const send = (path: string, init: RequestInit = {}) =>
  fetch(`${BASE}${path}`, { ...init, headers: { "cf-connecting-ip": "203.0.113.7", ...(init.headers as Record<string, string> | undefined) } });

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const loadBefore = loadavg();
  const adminToken = () => /^ADMIN_TOKEN\s*=\s*"?([^"\n]+)"?/m.exec(readFileSync(join(root, ".dev.vars"), "utf8"))![1]!;

  // 1. The projects.
  let dev = await startDev("setup");
  let projects: Record<"quiet" | "noisy", { project_id: string; ingest_key: string; read_key: string }>;
  try {
    const create = async (name: string) => {
      const res = await send("/v1/admin/projects", {
        method: "POST", headers: { authorization: `Bearer ${adminToken()}`, "content-type": "application/json" }, body: JSON.stringify({ name }),
      });
      if (res.status !== 201) throw new Error(`create project: HTTP ${res.status}`);
      return (await res.json()) as { project_id: string; ingest_key: string; read_key: string };
    };
    projects = { quiet: await create("quiet"), noisy: await create("noisy") };
  } finally {
    stopDev(dev);
  }
  await waitStopped(dev);

  // 2. The noisy backlog, written into the same local D1 file wrangler dev uses (the one holding
  // the noisy project; wrangler dev is stopped, so nothing else has it open).
  const now = Date.now();
  const dir = join(persist, "v3", "d1", "miniflare-D1DatabaseObject");
  const file = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite").find((f) => {
    const db = new DatabaseSync(join(dir, f));
    try {
      return db.prepare("SELECT 1 FROM projects WHERE project_id = ?1").get(projects.noisy.project_id) !== undefined;
    } catch {
      return false;
    } finally {
      db.close();
    }
  });
  if (!file) throw new Error("the noisy project's local D1 was not found");
  const sqlite = new DatabaseSync(join(dir, file));
  try {
    // The little of D1's API seedShape uses.
    const db = { prepare: (sql: string) => ({ bind: (...args: unknown[]) => ({ run: async () => sqlite.prepare(sql).run(...(args as never[])) }) }) };
    await seedShape(db as unknown as D1Database, SHAPE, projects.noisy.project_id, now - 60_000);
    const waiting = sqlite.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches WHERE project_id = ?1").get(projects.noisy.project_id) as { n: number };
    if (waiting.n !== SHAPE.calls) throw new Error(`seeded ${waiting.n} of ${SHAPE.calls} calls`);
  } finally {
    sqlite.close();
  }

  // 3. The measurement.
  dev = await startDev("run");
  const baseline = { read: [] as number[], ingest: [] as number[] };
  const during = { read: [] as number[], ingest: [] as number[] };
  let counted = 0;
  let triggers = 0;
  const started = performance.now();
  try {
    let probing = true;
    const b = probeQuiet(send, projects.quiet, baseline, () => probing);
    await new Promise((r) => setTimeout(r, BASELINE_S * 1000));
    probing = false;
    await b;
    probing = true;
    const d = probeQuiet(send, projects.quiet, during, () => probing);
    try {
      const deadline = Date.now() + 30 * 60_000;
      for (;;) {
        const t = await send("/__scheduled?cron=*/5+*+*+*+*");
        await t.arrayBuffer();
        triggers += 1;
        await new Promise((r) => setTimeout(r, TRIGGER_EVERY_MS));
        const res = await send("/v1/metrics/tools", { headers: { authorization: `Bearer ${projects.noisy.read_key}` } });
        const body = (await res.json()) as { tools: { calls: number }[] };
        counted = body.tools.reduce((n, t) => n + t.calls, 0);
        if (counted >= SHAPE.calls) break;
        if (Date.now() > deadline) throw new Error(`the noisy project was not caught up in 30 minutes (${counted} of ${SHAPE.calls})`);
      }
    } finally {
      probing = false;
      await d;
    }
  } finally {
    stopDev(dev);
  }
  const rollupSeconds = (performance.now() - started) / 1000;
  await waitStopped(dev);
  if (counted !== SHAPE.calls) throw new Error(`noisy project counted ${counted} of ${SHAPE.calls}`);

  const lines = readFileSync(dev.log, "utf8").split("\n");
  const reports = lines.flatMap((l) => {
    const at = l.indexOf('{"event":"rollup"');
    return at >= 0 ? [JSON.parse(l.slice(at, l.lastIndexOf("}") + 1)) as { chunkRowsRead: number[]; longestTransactionMs: number }] : [];
  });
  const held = lines.filter((l) => l.includes('"event":"rollup_lease_held"')).length;
  const rows = reports.flatMap((r) => r.chunkRowsRead);
  const longest = Math.max(...reports.map((r) => r.longestTransactionMs));
  const loadAfter = loadavg();
  const ms = (x: number) => `${Math.round(x).toLocaleString("en-US")} ms`;
  const n = (x: number) => Math.round(x).toLocaleString("en-US");
  const verdict = (x: number) => (x < 1_000 ? "under 1 s" : "**over 1 s**");
  const read = Math.max(...during.read);
  const ingest = Math.max(...during.ingest);
  const md = `### Against \`npm run dev\` (bench:fairness:dev)

\`npm run bench:fairness:dev\` (bench/fairness-dev.ts), ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, ${availableParallelism()} CPUs shared with other
jobs (load average ${loadBefore.map((x) => x.toFixed(1)).join(" / ")} before, ${loadAfter.map((x) => x.toFixed(1)).join(" / ")} after). A real \`npm run dev\`
(wrangler dev, its local D1, queue and cron): the noisy shape *${SHAPE.name}* seeded into its local D1, then
\`/__scheduled\` asked every ${TRIGGER_EVERY_MS / 1000} s (it queues the database's rollup job; ${held} of the jobs found another one
holding the lease and did nothing) until the noisy project's ${n(SHAPE.calls)} calls were all counted in its
\`/v1/metrics/tools\`, while the quiet project read and ingested as above (pause between transactions ${DEFAULT_ROLLUP_OPTIONS.pauseMs} ms).

| figure | value |
|---|---:|
| rows read per calls transaction: max / p50 (chunks) | ${n(Math.max(...rows))} / ${n(quantile(rows, 0.5))} (${rows.length}; bound ${n(CHUNK_ROWS_READ_BOUND)}) |
| longest transaction | ${ms(longest)} |
| quiet read, slowest: baseline → during (median during) | ${ms(Math.max(...baseline.read))} → **${ms(read)}** (${verdict(read)}; ${ms(quantile(during.read, 0.5))}) |
| quiet ingest, slowest: baseline → during (median during) | ${ms(Math.max(...baseline.ingest))} → **${ms(ingest)}** (${verdict(ingest)}; ${ms(quantile(during.ingest, 0.5))}) |
| rollup jobs run / cron triggers, time | ${reports.length} / ${triggers}, ${rollupSeconds.toFixed(0)} s |
| noisy project counted | ${n(counted)} of ${n(SHAPE.calls)} ✓ |`;
  console.log(`\n${md}`);
  if (!process.env.BENCH_NO_WRITE) writeBenchmarkSection("fairness-dev", md);
  rmSync(tmp, { recursive: true, force: true });
}

await main();
