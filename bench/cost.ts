// `npm run bench:cost`: what a tool call costs over its whole life in the units Cloudflare bills.
// The real worker (bundled with bench/cost/metered-worker.ts around it) runs in Miniflare with a
// local D1 and the KeyBudget Durable Object; calls go through POST /v1/ingest and the real crons
// (a rollup every 5 simulated minutes, then retention past the raw window). Four scenarios
// (BENCH_ONLY=low,quiet,shared,high picks some):
//   low    — 6,000 calls a day from 24 SDK processes (one session each, two clients in every third),
//            in bursts, batched as the SDK batches (a flush every 5 s, at most 30 payloads);
//   quiet  — the same calls spread so a flush carries ~1.3 calls, as a quiet server's SDK sends them;
//   shared — one shared HTTP server: 6,000 calls a day in short conversations of several clients,
//            a session and a startup each, one in ten without a session;
//   high   — 400,000 calls a day in 500-item batches (a gateway or a busy server), simulated for
//          BENCH_HIGH_HOURS hours (default 6; per-call figures do not depend on the length).
// Prints rows written and read per call by phase, the top statements, bytes per call in the window
// and kept forever (before and after the hour rows are folded into days, SPEC §7), the longest transaction, and the capacity table; writes the bench:cost section
// of docs/benchmarks.md and the capacity table of docs/scaling.md.
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { bundleWorker } from "./bundle-worker.mjs";
import { migrateToHead } from "../scripts/migrations.ts";
import { AGREEMENT_CHUNK_STATEMENTS } from "../src/worker/rollup/agreements.ts";
import { CALL_CHUNK_STATEMENTS } from "../src/worker/rollup/calls.ts";
import { DEFAULT_ROLLUP_OPTIONS, ROLLUP_FIXED_STATEMENTS } from "../src/worker/rollup/run.ts";
import { STARTUP_CHUNK_STATEMENTS } from "../src/worker/rollup/startups.ts";
import { HOUR_ROWS_KEPT_DAYS } from "../src/worker/time.ts";
import { mulberry32 } from "../test/e2e/dashboard/demo-data.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tmp = join(root, ".bench-tmp", "cost");
const COMPATIBILITY_DATE = /compatibility_date\s*=\s*"([^"]+)"/.exec(readFileSync(join(root, "wrangler.toml"), "utf8"))![1]!;
const ADMIN_TOKEN = "bench-admin-token";
const ROLLUP_CRON = "*/5 * * * *";
const RETENTION_CRON = "30 3 * * *";
const RETENTION_DAYS = 30;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const HIGH_HOURS = Number(process.env.BENCH_HIGH_HOURS ?? 6);
const TOOLS = ["search_orders", "get_order", "update_order", "list_items", "export_report", "refund", "get_customer", "ping"];
const HASHES = ["a1b2c3d4e5f6", "0a0b0c0d0e0f", "ffeeddccbbaa", "123456789abc", "cafebabe0001"];

type Request = { atMs: number; batch: Record<string, unknown>[]; calls: number };

const startup = (session: string, client: string) => ({
  v: 1, type: "startup", session_id: session, client_name: client, sdk: "mcpulse-edge/0.1.0", transport: "http",
  tools: TOOLS.map((name, i) => ({ name, schema_bytes: 300 + i * 40, schema_hash: `5c${i}0aa`, description_hash: `d${i}00bb`, description_norm: `e${i}00cc` })),
});

function call(rand: () => number, session: string, client: string, atMs: number) {
  const r = rand();
  return {
    v: 1, type: "call", session_id: session, client_name: client, tool_name: TOOLS[Math.floor(rand() * rand() * TOOLS.length)]!,
    started_at: new Date(atMs).toISOString(), duration_ms: Math.floor(Math.exp(rand() * 9)),
    outcome: r < 0.85 ? "ok" : r < 0.9 ? "bad_args" : r < 0.95 ? "tool_error" : "crashed",
    response_bytes: Math.floor(rand() * 4000), is_empty: r < 0.1, args_hash: HASHES[Math.floor(rand() * HASHES.length)]!,
  };
}

/** Low traffic: 24 SDK processes a day, 250 calls each in bursts, flushed every 5 s (at most 30 a request). */
function lowTraffic(t0: number): Request[] {
  const rand = mulberry32(7);
  const requests: Request[] = [];
  for (let p = 0; p < 24; p++) {
    const session = `s_${(0xa00000000000 + p).toString(16)}`;
    const clients = p % 3 === 0 ? ["cursor", "claude-ai"] : ["claude-ai"];
    let t = t0 + p * HOUR + Math.floor(rand() * 10 * MINUTE);
    const payloads: { atMs: number; payload: Record<string, unknown> }[] = clients.map((c) => ({ atMs: t, payload: startup(session, c) }));
    for (let n = 0; n < 250; ) {
      const burst = 5 + Math.floor(rand() * 11);
      for (let i = 0; i < burst && n < 250; i++, n++) {
        t += 1_000 + Math.floor(rand() * 3_000);
        payloads.push({ atMs: t, payload: call(rand, session, clients[Math.floor(rand() * clients.length)]!, t) });
      }
      t += 2 * MINUTE + Math.floor(rand() * 3 * MINUTE);
    }
    requests.push(...sdkRequests(payloads));
  }
  return requests.sort((a, b) => a.atMs - b.atMs);
}

/** The SDK's buffer: a flush every 5 s of whatever is pending, at most 30 payloads per request. */
function sdkRequests(payloads: { atMs: number; payload: Record<string, unknown> }[]): Request[] {
  payloads.sort((a, b) => a.atMs - b.atMs);
  const requests: Request[] = [];
  let tick = Math.ceil(payloads[0]!.atMs / 5_000) * 5_000;
  let i = 0;
  while (i < payloads.length) {
    const batch: Record<string, unknown>[] = [];
    while (i < payloads.length && payloads[i]!.atMs <= tick && batch.length < 30) batch.push(payloads[i++]!.payload);
    if (batch.length > 0) requests.push({ atMs: tick, batch, calls: batch.filter((b) => b.type === "call").length });
    tick = Math.max(tick + 5_000, Math.ceil((payloads[i]?.atMs ?? 0) / 5_000) * 5_000);
  }
  return requests;
}

/**
 * A quiet server: the low scenario's 24 processes and 6,000 calls a day, but calls 1–6 s apart
 * within a burst, so a 5-second flush carries ~1.3 calls (what an SDK on a quiet server sends).
 */
function quietTraffic(t0: number): Request[] {
  const rand = mulberry32(13);
  const requests: Request[] = [];
  for (let p = 0; p < 24; p++) {
    const session = `s_${(0xc00000000000 + p).toString(16)}`;
    let t = t0 + p * HOUR + Math.floor(rand() * 10 * MINUTE);
    const payloads: { atMs: number; payload: Record<string, unknown> }[] = [{ atMs: t, payload: startup(session, "claude-ai") }];
    for (let n = 0; n < 250; ) {
      const burst = 3 + Math.floor(rand() * 6);
      for (let i = 0; i < burst && n < 250; i++, n++) {
        t += 1_000 + Math.floor(rand() * 5_000);
        payloads.push({ atMs: t, payload: call(rand, session, "claude-ai", t) });
      }
      t += 2 * MINUTE + Math.floor(rand() * 3 * MINUTE);
    }
    requests.push(...sdkRequests(payloads));
  }
  return requests.sort((a, b) => a.atMs - b.atMs);
}

/**
 * A shared HTTP server (SPEC §4 "Sessions are conversations"): one process serving 6,000 calls a
 * day in short conversations of 2–8 calls of several clients at once, each conversation its own
 * session with its own startup (the SDK sends one per new session), some of them without a session
 * (a stateless client: session_id ""); one SDK buffer for the whole process.
 */
function sharedTraffic(t0: number): Request[] {
  const rand = mulberry32(17);
  const payloads: { atMs: number; payload: Record<string, unknown> }[] = [];
  const clients = ["claude-ai", "claude-ai", "chatgpt", "chatgpt", "cursor"];
  let calls = 0;
  for (let c = 0; calls < 6_000; c++) {
    const client = clients[c % clients.length]!;
    const sessionless = c % 10 === 9;
    const session = sessionless ? "" : `s_${(0xd00000000000 + c).toString(16)}`;
    // Conversations start through the day, several at once.
    let t = t0 + Math.floor(rand() * DAY);
    if (!sessionless) payloads.push({ atMs: t, payload: startup(session, client) });
    const length = 2 + Math.floor(rand() * 7);
    for (let i = 0; i < length && calls < 6_000; i++, calls++) {
      t += 2_000 + Math.floor(rand() * 18_000);
      payloads.push({ atMs: t, payload: call(rand, session, client, t) });
    }
  }
  return sdkRequests(payloads);
}

/** High traffic: 400,000 calls a day from 200 concurrent sessions, sent in 500-item batches. */
function highTraffic(t0: number, hours: number): Request[] {
  const rand = mulberry32(11);
  const perMs = 400_000 / DAY;
  const total = Math.round(400_000 * (hours / 24));
  const sessions = Array.from({ length: 200 }, (_, i) => `s_${(0xb00000000000 + i).toString(16)}`);
  const requests: Request[] = [];
  let batch: Record<string, unknown>[] = sessions.flatMap((s) => [startup(s, "claude-ai")]);
  for (let n = 0; n < total; n++) {
    const at = t0 + Math.floor(n / perMs);
    const s = Math.floor(rand() * sessions.length);
    batch.push(call(rand, sessions[s]!, s % 4 === 0 ? "cursor" : "claude-ai", at));
    if (batch.length === 500 || n === total - 1) {
      requests.push({ atMs: at, batch, calls: batch.filter((b) => b.type === "call").length });
      batch = [];
    }
  }
  return requests;
}

type Meter = {
  phases: Record<string, { invocations: number; statements: number; rows_written: number; rows_read: number; longest_batch_ms: number; longest_batch_rows_written: number }>;
  statements: { phase: string; sql: string; runs: number; rows_written: number; rows_read: number }[];
  durable: { requests: number; rows_written: number; rows_read: number };
  analytics_points: number;
  size_after: number;
};

const PHASE_ZERO = { invocations: 0, statements: 0, rows_written: 0, rows_read: 0, longest_batch_ms: 0, longest_batch_rows_written: 0 };

/** What happened between two meter readings. */
function delta(a: Meter, b: Meter) {
  const phases: Meter["phases"] = {};
  for (const [name, p] of Object.entries(b.phases)) {
    const q = a.phases[name] ?? PHASE_ZERO;
    phases[name] = { ...p, invocations: p.invocations - q.invocations, statements: p.statements - q.statements, rows_written: p.rows_written - q.rows_written, rows_read: p.rows_read - q.rows_read };
  }
  const before = new Map(a.statements.map((s) => [`${s.phase}\u0000${s.sql}`, s]));
  const statements = b.statements.map((s) => {
    const q = before.get(`${s.phase}\u0000${s.sql}`);
    return { ...s, runs: s.runs - (q?.runs ?? 0), rows_written: s.rows_written - (q?.rows_written ?? 0), rows_read: s.rows_read - (q?.rows_read ?? 0) };
  });
  return {
    phases, statements,
    durable: { requests: b.durable.requests - a.durable.requests, rows_written: b.durable.rows_written - a.durable.rows_written, rows_read: b.durable.rows_read - a.durable.rows_read },
    analytics_points: b.analytics_points - a.analytics_points,
  };
}

async function startMetered(script: string, name: string) {
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      host: "127.0.0.1", port: 0, compatibilityDate: COMPATIBILITY_DATE, modules: true, scriptPath: script,
      compatibilityFlags: ["nodejs_compat"],
      d1Databases: { DB: `cost-${name}` },
      durableObjects: { KEY_BUDGET: { className: "KeyBudget", useSQLite: true }, INGEST_HEALTH: { className: "IngestHealth", useSQLite: true }, SIGN_IN_THROTTLE: { className: "SignInThrottle", useSQLite: true } },
      queueProducers: { INGEST_QUEUE: { queueName: "mcpulse-ingest" } },
      analyticsEngineDatasets: { CALLS_AE: { dataset: "bench_calls" } },
      bindings: { ADMIN_TOKEN, RAW_RETENTION_DAYS: String(RETENTION_DAYS), PRICE_PER_MILLION_TOKENS_USD: "3" },
      d1Persist: join(tmp, name, "d1"), durableObjectsPersist: join(tmp, name, "do"),
    } as Parameters<typeof convertV4MiniflareOptions>[0]),
  );
  const url = (await mf.ready).toString().replace(/\/$/, "");
  const db = (await mf.getD1Database("DB")) as unknown as D1Database;
  await migrateToHead(db);
  return { mf, url, db };
}

/** Bytes the database's rows take: every table's rows copied into a fresh database at head, its size after. */
async function storedBytes(from: D1Database, scratch: string): Promise<number> {
  const { mf, db } = await startMetered(join(tmp, "plain.js"), scratch);
  try {
    const empty = (await db.prepare("SELECT 1").run()).meta.size_after ?? 0;
    const tables = (await from.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'").all<{ name: string }>()).results;
    let size = empty;
    for (const { name } of tables) {
      const cols = (await from.prepare(`SELECT name FROM pragma_table_info('${name}')`).all<{ name: string }>()).results.map((c) => c.name);
      for (let offset = 0; ; offset += 5_000) {
        const rows = (await from.prepare(`SELECT ${cols.join(", ")} FROM ${name} LIMIT 5000 OFFSET ${offset}`).raw()) as unknown[][];
        if (rows.length === 0) break;
        const r = await db.prepare(`INSERT OR REPLACE INTO ${name} (${cols.join(", ")}) SELECT ${cols.map((_, i) => `value ->> ${i}`).join(", ")} FROM json_each(?1)`).bind(JSON.stringify(rows)).run();
        size = r.meta.size_after ?? size;
        if (rows.length < 5_000) break;
      }
    }
    return size - empty;
  } finally {
    await mf.dispose();
  }
}

async function scenario(name: string, script: string, build: (t0: number) => Request[]) {
  const { mf, url, db } = await startMetered(script, name);
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
  const project = (await (await fetch(`${url}/v1/admin/projects`, { method: "POST", headers: admin, body: '{"name":"bench"}' })).json()) as { project_id: string; ingest_key: string };
  // The bench sends a day in seconds: the budget must not refuse what a real day spreads out.
  await db.prepare("UPDATE projects SET payload_budget_per_minute = 100000000 WHERE project_id = ?1").bind(project.project_id).run();
  const headers = { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" };
  const worker = await mf.getWorker();
  const keyId = project.ingest_key.slice(0, 16);
  const meter = async () => (await (await fetch(`${url}/__meter?key_id=${keyId}`)).json()) as Meter;

  // Simulated time ends 10 minutes before the real clock, so ingest accepts every started_at.
  const requests0 = build(0);
  const span = requests0[requests0.length - 1]!.atMs;
  const t0 = Date.now() - 10 * MINUTE - span;
  const requests = build(t0);
  const calls = requests.reduce((n, r) => n + r.calls, 0);
  const start = await meter();
  let i = 0;
  let runs = 0;
  for (let step = Math.ceil(t0 / (5 * MINUTE)) * 5 * MINUTE; i < requests.length; step += 5 * MINUTE) {
    const sends: Promise<Response>[] = [];
    while (i < requests.length && requests[i]!.atMs <= step) {
      const r = requests[i++]!;
      // Each request carries an Idempotency-Key, as the SDK sends one per batch (SPEC §1.1, §4).
      sends.push(fetch(`${url}/v1/ingest`, { method: "POST", headers: { ...headers, "idempotency-key": `bench-${name}-${i}`, "x-bench-received-at": String(r.atMs) }, body: JSON.stringify({ batch: r.batch }) }));
      // Receive order matters for ties (SPEC §2.2): a few requests in flight at most.
      if (sends.length >= 4) for (const res of sends.splice(0)) if ((await res).status !== 202) throw new Error(`ingest answered ${(await res).status}`);
    }
    for (const res of sends) if ((await res).status !== 202) throw new Error(`ingest answered ${(await res).status}`);
    await meter(); // every write has landed
    await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(step) });
    runs++;
  }
  // The runs of the hour after the last request belong to the calls' life: they delete the rows
  // emptied during the Idempotency-Key window (migration 0025).
  const lastStep = Math.ceil(Date.now() / (5 * MINUTE)) * 5 * MINUTE;
  for (let k = 1; k <= 13; k++) await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(lastStep + k * 5 * MINUTE) });
  // So does the first run after the UTC midnight that ends the calls' last day: it folds that day's
  // hour rows into day rows (migration 0029; the day before it was folded at the midnight inside the traffic).
  const lastDayEnd = Math.ceil((lastStep + 13 * 5 * MINUTE) / DAY) * DAY;
  await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(lastDayEnd + 5 * MINUTE) });
  const afterWindow = await meter();
  // Then an hour of idle runs: nothing new, what does a run cost?
  for (let k = 1; k <= 12; k++) await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(lastDayEnd + 5 * MINUTE + k * 5 * MINUTE) });
  const afterIdle = await meter();
  const windowBytes = await storedBytes(db, `${name}-window`);

  // Retention past the window: the rollup has kept up (as_of fresh), then the daily cron deletes.
  const retentionAt = Date.now() + (RETENTION_DAYS + 2) * DAY;
  await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(retentionAt - 5 * MINUTE) });
  const beforeRetention = await meter();
  const retentionRollups: ReturnType<typeof delta>[] = [];
  // Daily runs until nothing is left to delete (each run is bounded in statements); the rollup
  // keeps running between them, as the 5-minute cron would (its idle runs are not retention's cost).
  for (let k = 0; k < 5; k++) {
    const before = await meter();
    await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(retentionAt + k * DAY - 5 * MINUTE) });
    retentionRollups.push(delta(before, await meter()));
    await worker.scheduled({ cron: RETENTION_CRON, scheduledTime: new Date(retentionAt + k * DAY) });
  }
  const foreverBytes = await storedBytes(db, `${name}-forever`);
  // Past the hour rows' horizon (SPEC §7): the daily cron folds the hour rows into their day rows.
  const foldAt = Date.now() + (HOUR_ROWS_KEPT_DAYS + 2) * DAY;
  for (let k = 0; k < 2; k++) {
    await worker.scheduled({ cron: ROLLUP_CRON, scheduledTime: new Date(foldAt + k * DAY - 5 * MINUTE) });
    await worker.scheduled({ cron: RETENTION_CRON, scheduledTime: new Date(foldAt + k * DAY) });
  }
  const afterRetention = await meter();
  const foldedBytes = await storedBytes(db, `${name}-folded`);
  await mf.dispose();

  const life = delta(start, afterWindow);
  const idle = delta(afterWindow, afterIdle);
  // Retention's own statements (raw deletes and the fold); the rollup runs between them are not its cost.
  const retention = delta(beforeRetention, afterRetention);
  return { name, calls, requests: requests.length, runs, life, idle, retention, windowBytes, foreverBytes, foldedBytes, idleRuns: 12 };
}

type Result = Awaited<ReturnType<typeof scenario>>;

const per = (n: number, calls: number, digits = 2) => (n / calls).toFixed(digits);

function figures(r: Result) {
  const ingest = r.life.phases.ingest?.rows_written ?? 0;
  const rollup = r.life.phases.rollup?.rows_written ?? 0;
  const retention = r.retention.phases.retention?.rows_written ?? 0;
  const durable = r.life.durable.rows_written;
  const total = ingest + rollup + retention + durable;
  const read = (r.life.phases.ingest?.rows_read ?? 0) + (r.life.phases.rollup?.rows_read ?? 0) + (r.retention.phases.retention?.rows_read ?? 0) + r.life.durable.rows_read;
  return {
    ingest: ingest / r.calls, durable: durable / r.calls, rollup: rollup / r.calls, retention: retention / r.calls, total: total / r.calls,
    read: read / r.calls,
    idleRowsPerRun: (r.idle.phases.rollup?.rows_written ?? 0) / r.idleRuns,
    idleReadPerRun: (r.idle.phases.rollup?.rows_read ?? 0) / r.idleRuns,
    windowBytes: r.windowBytes / r.calls, foreverBytes: r.foreverBytes / r.calls, foldedBytes: r.foldedBytes / r.calls,
    requestsPerCall: r.requests / r.calls, doRequestsPerCall: r.life.durable.requests / r.calls, aePerCall: r.life.analytics_points / r.calls,
    longestMs: Math.max(r.life.phases.rollup?.longest_batch_ms ?? 0, r.retention.phases.retention?.longest_batch_ms ?? 0),
    longestRows: Math.max(r.life.phases.rollup?.longest_batch_rows_written ?? 0, r.retention.phases.retention?.longest_batch_rows_written ?? 0),
  };
}

function capacity(f: ReturnType<typeof figures>) {
  const limits = [
    ["D1 + Durable Object rows written (100,000 a day each; counted together)", 100_000 / f.total],
    ["D1 rows read (5,000,000 a day)", 5_000_000 / f.read],
    ["D1 storage (500 MB per database, 30 days of raw rows)", 500e6 / (RETENTION_DAYS * f.windowBytes)],
    ["Worker requests (100,000 a day)", 100_000 / f.requestsPerCall],
    ["Durable Object requests (100,000 a day)", f.doRequestsPerCall > 0 ? 100_000 / f.doRequestsPerCall : Infinity],
    ["Analytics Engine data points (100,000 a day)", f.aePerCall > 0 ? 100_000 / f.aePerCall : Infinity],
  ] as const;
  const binding = limits.reduce((a, b) => (b[1] < a[1] ? b : a));
  // Paid: $1.00 per million rows written (D1 and SQLite Durable Objects), $0.001 per million read,
  // $0.30 per million Worker requests, $0.15 per million DO requests, $0.25 per million AE points.
  const dollars = f.total * 1.0 + f.read * 0.001 + f.requestsPerCall * 0.3 + f.doRequestsPerCall * 0.15 + f.aePerCall * 0.25;
  // A year of history: its last 90 days with their hour rows, the 275 days before folded into days.
  const yearBytes = HOUR_ROWS_KEPT_DAYS * f.foreverBytes + (365 - HOUR_ROWS_KEPT_DAYS) * f.foldedBytes;
  const tenGbCallsPerDay = 10e9 / (RETENTION_DAYS * f.windowBytes + yearBytes);
  const tenGbCallsPerDayUnfolded = 10e9 / (RETENTION_DAYS * f.windowBytes + 365 * f.foreverBytes);
  return { limits, binding, dollarsRows: f.total * 1.0, dollars, tenGbCallsPerDay, tenGbCallsPerDayUnfolded, yearBytes };
}

const fmt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "unbounded");

function report(results: Result[], label: string) {
  const lines: string[] = [];
  lines.push(`| scenario | calls | requests | ingest | KeyBudget DO | rollup | retention | **whole life** | rows read | idle run (rows written / read) | B/call in window | B/call kept forever (first 90 days) | B/call kept forever (after 90 days, hours folded) | longest transaction |`);
  lines.push(`|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|`);
  for (const r of results) {
    const f = figures(r);
    lines.push(`| ${r.name} | ${r.calls.toLocaleString("en-US")} | ${r.requests.toLocaleString("en-US")} | ${f.ingest.toFixed(2)} | ${f.durable.toFixed(2)} | ${f.rollup.toFixed(2)} | ${f.retention.toFixed(2)} | **${f.total.toFixed(2)}** | ${f.read.toFixed(1)} | ${f.idleRowsPerRun.toFixed(1)} / ${f.idleReadPerRun.toFixed(0)} | ${f.windowBytes.toFixed(0)} | ${f.foreverBytes.toFixed(0)} | ${f.foldedBytes.toFixed(1)} | ${f.longestMs} ms, ${f.longestRows.toLocaleString("en-US")} rows |`);
  }
  lines.push("", `Rows written per call, ${label}. Top statements by rows written (per call):`, "");
  for (const r of results) {
    lines.push(`- **${r.name}**:`);
    const all = [...r.life.statements, ...r.retention.statements.filter((s) => s.phase === "retention")].filter((s) => s.rows_written > 0);
    all.sort((a, b) => b.rows_written - a.rows_written);
    for (const s of all.slice(0, Number(process.env.BENCH_TOP ?? 8))) lines.push(`  - ${s.phase}: ${per(s.rows_written, r.calls)} — \`${s.sql.replace(/\|/g, "\\|")}…\``);
  }
  lines.push("", `Rows read per call, ${label}. Top statements by rows read (per call):`, "");
  for (const r of results) {
    lines.push(`- **${r.name}**:`);
    const all = [...r.life.statements, ...r.retention.statements.filter((s) => s.phase === "retention")].filter((s) => s.rows_read > 0);
    all.sort((a, b) => b.rows_read - a.rows_read);
    for (const s of all.slice(0, 6)) lines.push(`  - ${s.phase}: ${per(s.rows_read, r.calls, 1)} — \`${s.sql.replace(/\|/g, "\\|")}…\``);
  }
  return lines.join("\n");
}

function capacityTable(results: Result[]) {
  const lines = [`| | ${results.map((r) => r.name).join(" | ")} |`, `|---|${results.map(() => "---:").join("|")}|`];
  const caps = results.map((r) => capacity(figures(r)));
  for (let i = 0; i < caps[0]!.limits.length; i++) lines.push(`| free plan, calls/day by ${caps[0]!.limits[i]![0]} | ${caps.map((c) => fmt(c.limits[i]![1])).join(" | ")} |`);
  lines.push(`| **free plan, calls/day (the binding limit)** | ${caps.map((c) => `**${fmt(c.binding[1])}** (${c.binding[0].split(" (")[0]})`).join(" | ")} |`);
  lines.push(`| B/call kept, averaged over a year of history (the last 90 days with hour rows, the 275 before folded; every hour kept: the "first 90 days" column) | ${caps.map((c) => (c.yearBytes / 365).toFixed(1)).join(" | ")} |`);
  lines.push(`| one 10 GB database, calls/day (30-day window + a year kept forever, hours folded after 90 days) | ${caps.map((c) => fmt(c.tenGbCallsPerDay)).join(" | ")} |`);
  lines.push(`| same, had every hour row been kept for the year | ${caps.map((c) => fmt(c.tenGbCallsPerDayUnfolded)).join(" | ")} |`);
  // What one 5-minute rollup run folds in under each plan's statement budget (the probe and as_of,
  // a startups and a verdicts chunk pending, then as many calls chunks as fit), per second.
  const fresh = (maxQueries: number) => {
    const chunks = Math.floor((maxQueries - ROLLUP_FIXED_STATEMENTS - STARTUP_CHUNK_STATEMENTS - AGREEMENT_CHUNK_STATEMENTS) / CALL_CHUNK_STATEMENTS);
    return `${fmt((chunks * DEFAULT_ROLLUP_OPTIONS.chunkCalls) / 300)} calls/s (${chunks} chunks of ${DEFAULT_ROLLUP_OPTIONS.chunkCalls.toLocaleString("en-US")} a run)`;
  };
  lines.push(`| free plan (48 statements a run), sustained calls kept fresh within 5 minutes, startups and verdicts pending | ${results.map(() => fresh(48)).join(" | ")} |`);
  lines.push(`| paid plan (1,000 statements a run), same | ${results.map(() => fresh(1000)).join(" | ")} |`);
  lines.push(`| paid plan, $ per million calls (rows written only) | ${caps.map((c) => `$${c.dollarsRows.toFixed(2)}`).join(" | ")} |`);
  lines.push(`| paid plan, $ per million calls (rows, reads, Worker and DO requests, AE points) | ${caps.map((c) => `$${c.dollars.toFixed(2)}`).join(" | ")} |`);
  return lines.join("\n");
}

async function main() {
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const script = join(tmp, "worker.js");
  await bundleWorker(script, join(root, "bench/cost/metered-worker.ts"));
  writeFileSync(join(tmp, "plain.js"), `export default { fetch() { return new Response(null) } }; export class KeyBudget {}; export class IngestHealth {}; export class SignInThrottle {}`);
  const results: Result[] = [];
  const scenarios: [string, string, (t0: number) => Request[]][] = [
    ["low", "low: 6k calls/day, SDK batching", lowTraffic],
    ["quiet", "low, quiet server: 6k calls/day, ~1.3 calls a request", quietTraffic],
    ["shared", "low, shared HTTP server: 6k calls/day in short conversations, a startup each", sharedTraffic],
    ["high", `high: 400k calls/day, 500-item batches (${HIGH_HOURS} h simulated)`, (t0: number) => highTraffic(t0, HIGH_HOURS)],
  ];
  for (const [short, name, build] of scenarios) {
    if (process.env.BENCH_ONLY && !process.env.BENCH_ONLY.split(",").includes(short)) continue;
    console.log(`running ${name}…`);
    const started = Date.now();
    const result = await scenario(short, script, build);
    result.name = name;
    results.push(result);
    console.log(`  ${((Date.now() - started) / 1000).toFixed(0)} s, ${(result.calls / result.requests).toFixed(2)} payloads' calls per request`);
  }
  const label = process.env.BENCH_LABEL ?? "this tree";
  const table = report(results, label);
  const caps = capacityTable(results);
  console.log(table + "\n\n" + caps);
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(results.map((r) => ({ name: r.name, ...figures(r) })), null, 2));
  if (process.env.BENCH_WRITE !== "0") {
    writeBenchmarkSection("cost", `## bench:cost — rows written and bytes per tool call over its whole life\n\n${process.env.BENCH_PREAMBLE ?? ""}\n\n${table}\n\nCapacity:\n\n${caps}`);
    // docs/scaling.md holds the capacity table between its own markers.
    const scaling = join(root, "docs", "scaling.md");
    const doc = readFileSync(scaling, "utf8");
    const [start, end] = ["<!-- bench:cost:capacity:start -->", "<!-- bench:cost:capacity:end -->"];
    if (doc.includes(start) && doc.includes(end)) {
      writeFileSync(scaling, doc.slice(0, doc.indexOf(start) + start.length) + `\n${caps}\n` + doc.slice(doc.indexOf(end)));
    }
  }
  rmSync(tmp, { recursive: true, force: true });
}

await main();
