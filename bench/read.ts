// `npm run bench:read`: the read API and the dashboard over 90 days of rollup data (50 tools × 5
// clients, one row per tool, client and day, each with a latency histogram), against the same
// requests over one day, in the same run, through the real worker in Miniflare over loopback HTTP.
// Writes its section of docs/benchmarks.md.
import { cpus } from "node:os";
import { writeBenchmarkSection } from "./benchmarks-md.mjs";
import { durationBucket } from "../src/worker/histogram.ts";
import { authenticateKey } from "../src/worker/auth.ts";
import { loadOverview, loadProjectName } from "../src/worker/metrics/page-data.ts";
import { rangeFromDays, type DateRange } from "../src/worker/metrics/query.ts";
import { openReadScope } from "../src/worker/metrics/scope.ts";
import { mulberry32 } from "../test/e2e/dashboard/demo-data.ts";
import { countingDb } from "../test/worker/helpers/counting-d1.ts";
import { createProject, readSessionCookie, startWorker, type RunningWorker } from "../test/e2e/dashboard/start-worker.ts";

const DAYS = 90;
/** Extra older days, so that every cold sample (of both cold cases) reads its own 90-day window: a cache miss. */
const EXTRA_DAYS = 60;
const TOOLS = 50;
const CLIENTS = 5;
/** Registered but never called: dead tools the dashboard lists. */
const DEAD_TOOLS = 5;
const SESSIONS_PER_DAY = 200;
/** Hour rows for the last 2 days: the dashboard charts ranges of ≤ 2 days by hour. */
const HOUR_ROW_DAYS = 2;
const WARMUP = 3;
const RUNS = 25;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

type CounterRow = {
  project_id: string; start_ms: number; tool_name: string; client_name: string; calls: number; ok: number; empty: number;
  bad_args: number; tool_error: number; crashed: number; response_bytes_sum: number; duration_ms_sum: number; retries: number;
  first_call_attempts: number; first_call_ok: number; duration_histogram_json: string;
};

function counterRow(rand: () => number, projectId: string, startMs: number, tool: number, client: number, scale: number): CounterRow {
  const calls = Math.max(1, Math.round((20 + rand() * 180) * scale));
  const bad = Math.floor(calls * rand() * 0.1);
  const toolError = Math.floor(calls * rand() * 0.03);
  const crashed = Math.floor(calls * rand() * 0.01);
  const ok = calls - bad - toolError - crashed;
  const empty = Math.floor(ok * rand() * 0.1);
  const attempts = Math.max(1, calls - Math.floor(calls * 0.05));
  const histogram: Record<string, number> = {};
  const median = 20 + tool * 15;
  let durationSum = 0;
  // A realistic spread: each call's duration log-normal around the tool's median (~30–60 buckets).
  for (let i = 0; i < calls; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
    const d = Math.max(0, Math.round(median * Math.exp(0.7 * z)));
    durationSum += d;
    const b = String(durationBucket(d));
    histogram[b] = (histogram[b] ?? 0) + 1;
  }
  return {
    project_id: projectId, start_ms: startMs, tool_name: `tool_${String(tool).padStart(2, "0")}`, client_name: `client_${client}`,
    calls, ok, empty, bad_args: bad, tool_error: toolError, crashed, response_bytes_sum: calls * (500 + tool * 100),
    duration_ms_sum: durationSum, retries: Math.floor(bad * 0.6), first_call_attempts: attempts,
    first_call_ok: Math.floor(attempts * (0.6 + rand() * 0.35)), duration_histogram_json: JSON.stringify(histogram),
  };
}

const COLUMNS = "calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, duration_histogram_json";
const FROM_JSON = COLUMNS.split(", ").map((c) => `json_extract(value, '$.${c}')`).join(", ");

/** Inserts rows 500 at a time through one JSON parameter (D1 allows 100 bound parameters). */
async function insertCounters(db: D1Database, table: "tool_day_metrics" | "tool_hour_metrics", rows: CounterRow[]): Promise<void> {
  const time = table === "tool_day_metrics" ? "day_start_ms" : "hour_start_ms";
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .prepare(
        `INSERT INTO ${table} (project_id, ${time}, tool_name, client_name, ${COLUMNS}) ` +
          `SELECT json_extract(value, '$.project_id'), json_extract(value, '$.start_ms'), json_extract(value, '$.tool_name'), ` +
          `json_extract(value, '$.client_name'), ${FROM_JSON} FROM json_each(?1)`,
      )
      .bind(JSON.stringify(rows.slice(i, i + 500)))
      .run();
  }
}

async function seed(worker: RunningWorker, projectId: string, todayMs: number): Promise<Record<string, number>> {
  const rand = mulberry32(90);
  const db = worker.db;
  const dayRows: CounterRow[] = [];
  // The days with hour rows get their day rows from them (the trigger of migration 0013).
  for (let d = HOUR_ROW_DAYS; d < DAYS + EXTRA_DAYS; d++) {
    for (let t = 0; t < TOOLS; t++) for (let c = 0; c < CLIENTS; c++) dayRows.push(counterRow(rand, projectId, todayMs - d * DAY_MS, t, c, 1));
  }
  await insertCounters(db, "tool_day_metrics", dayRows);
  const hourRows: CounterRow[] = [];
  for (let h = 0; h < HOUR_ROW_DAYS * 24; h++) {
    for (let t = 0; t < TOOLS; t++) for (let c = 0; c < CLIENTS; c++) hourRows.push(counterRow(rand, projectId, todayMs - (HOUR_ROW_DAYS - 1) * DAY_MS + h * HOUR_MS, t, c, 1 / 24));
  }
  await insertCounters(db, "tool_hour_metrics", hourRows);
  const registered = Array.from({ length: TOOLS + DEAD_TOOLS }, (_, t) => ({ t, bytes: 300 + ((t * 137) % 2000) }));
  await db
    .prepare(
      "INSERT INTO registered_tools (project_id, tool_name, schema_bytes, schema_hash, description_hash, description_norm, startup_seq) " +
        "SELECT ?1, printf('tool_%02d', json_extract(value, '$.t')), json_extract(value, '$.bytes'), 'aaaaaaaaaaaa', 'dddddddddddd', " +
        "printf('%012d', json_extract(value, '$.t')), 1 FROM json_each(?2)",
    )
    .bind(projectId, JSON.stringify(registered))
    .run();
  const pairs: unknown[] = [];
  for (let d = 0; d < DAYS; d++) for (let t = 0; t < TOOLS; t++) pairs.push({ d: todayMs - d * DAY_MS, c: `client_${t % CLIENTS}`, a: t, b: (t * 7 + 3) % TOOLS, n: 1 + (t % 9) });
  for (let i = 0; i < pairs.length; i += 1000) {
    await db
      .prepare(
        // One row per (day, client), its pairs a JSON object (migration 0019).
        "INSERT INTO pair_days (project_id, day_start_ms, client_name, pairs_json) SELECT ?1, json_extract(value, '$.d'), json_extract(value, '$.c'), " +
          "json_group_object(json_array(printf('tool_%02d', json_extract(value, '$.a')), printf('tool_%02d', json_extract(value, '$.b'))), json_extract(value, '$.n')) " +
          "FROM json_each(?2) GROUP BY json_extract(value, '$.d'), json_extract(value, '$.c') " +
          "ON CONFLICT (project_id, day_start_ms, client_name) DO UPDATE SET pairs_json = json_patch(pairs_json, excluded.pairs_json)",
      )
      .bind(projectId, JSON.stringify(pairs.slice(i, i + 1000)))
      .run();
  }
  const sessions: unknown[] = [];
  for (let d = 0; d < DAYS; d++) {
    for (let s = 0; s < SESSIONS_PER_DAY; s++) sessions.push({ id: `s_${d}_${s}`, t: todayMs - d * DAY_MS + Math.floor(rand() * DAY_MS), c: `client_${s % CLIENTS}`, n: 1 + (s % 20) });
  }
  for (let i = 0; i < sessions.length; i += 1000) {
    await db
      .prepare(
        "INSERT INTO sessions (project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum, schema_bytes_sum) " +
          "SELECT ?1, json_extract(value, '$.id'), json_extract(value, '$.t'), json_extract(value, '$.t') + 60000, json_extract(value, '$.c'), " +
          "json_extract(value, '$.n'), json_extract(value, '$.n') * 1500, 40000 FROM json_each(?2)",
      )
      .bind(projectId, JSON.stringify(sessions.slice(i, i + 1000)))
      .run();
  }
  await db.prepare("INSERT OR REPLACE INTO rollup_state (name, value) VALUES ('as_of_ms', ?1)").bind(Date.now()).run();
  const buckets = dayRows.reduce((n, r) => n + Object.keys(JSON.parse(r.duration_histogram_json)).length, 0);
  return { dayRows: dayRows.length, hourRows: hourRows.length, pairRows: pairs.length, sessions: sessions.length, avgBucketsPerRow: Math.round(buckets / dayRows.length) };
}

/** The worst pages at the caps (SPEC §3: bounded pages): this many tools called, dead, and clients of one tool. */
const CAP_TOOLS = 5_000;
const CAP_DEAD_TOOLS = 2_000;
const CAP_CLIENTS = 2_000;
const CAP_DAYS = 7;
const CAP_RUNS = 5;

/**
 * A second project at the caps: CAP_TOOLS tools called every day of the default 7-day range, one
 * tool called by CAP_CLIENTS clients, CAP_DEAD_TOOLS more registered and never called, every tool
 * with the same description (one converged group of all of them).
 */
async function seedCaps(worker: RunningWorker, projectId: string, todayMs: number): Promise<void> {
  const rand = mulberry32(7);
  const rows: CounterRow[] = [];
  for (let d = 0; d < CAP_DAYS; d++) {
    for (let t = 0; t < CAP_TOOLS; t++) rows.push({ ...counterRow(rand, projectId, todayMs - d * DAY_MS, t % 50, 0, 0.05), tool_name: `cap_tool_${String(t).padStart(4, "0")}` });
  }
  for (let c = 0; c < CAP_CLIENTS; c++) rows.push({ ...counterRow(rand, projectId, todayMs, 7, 0, 0.05), tool_name: "cap_shared", client_name: `cap_client_${String(c).padStart(4, "0")}` });
  await insertCounters(worker.db, "tool_day_metrics", rows);
  await worker.db
    .prepare(
      "INSERT INTO registered_tools (project_id, tool_name, schema_bytes, schema_hash, description_hash, description_norm, startup_seq) " +
        "SELECT ?1, printf('cap_tool_%04d', value), 300 + value % 2000, 'aaaaaaaaaaaa', 'dddddddddddd', 'same words', 1 FROM json_each(?2)",
    )
    .bind(projectId, JSON.stringify(Array.from({ length: CAP_TOOLS + CAP_DEAD_TOOLS }, (_, i) => i)))
    .run();
}

type Timing = { median: number; p95: number; min: number; bytes: number };

async function time(urlOf: (i: number) => string, headers: Record<string, string>, warmup: number): Promise<Timing> {
  return timeRuns(urlOf, headers, warmup, RUNS);
}

async function timeRuns(urlOf: (i: number) => string, headers: Record<string, string>, warmup: number, runs: number): Promise<Timing> {
  const samples: number[] = [];
  let bytes = 0;
  for (let i = 0; i < warmup + runs; i++) {
    const url = urlOf(i);
    const t0 = performance.now();
    const res = await fetch(url, { headers });
    const body = await res.arrayBuffer();
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status} ${new TextDecoder().decode(body).slice(0, 200)}`);
    bytes = body.byteLength;
    if (i >= warmup) samples.push(ms);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)] ?? NaN;
  return { median: at(0.5), p95: at(0.95), min: samples[0] ?? NaN, bytes };
}

/**
 * D1 statements of one GET / (the steps of routes/dashboard.tsx: the key, then the page), counted
 * in this process over the same database; its final-day cache starts empty, so the first call is cold.
 */
async function overviewStatements(db: D1Database, readKey: string, range: DateRange): Promise<number> {
  const counted = countingDb(db);
  const auth = await authenticateKey(counted.db, readKey, "read");
  if (!auth) throw new Error("bench read key not accepted");
  const scope = openReadScope(counted.db, auth.project_id);
  await Promise.all([loadProjectName(scope), loadOverview(scope, { range, client: undefined, search: undefined, page: 1 }, 3)]);
  return counted.statements.length;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

const worker = await startWorker();
try {
  const project = await createProject(worker, "bench");
  const todayMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const seedStart = performance.now();
  const counts = await seed(worker, project.project_id, todayMs);
  console.log(`seeded ${JSON.stringify(counts)} in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
  const today = iso(todayMs);
  const from90 = iso(todayMs - (DAYS - 1) * DAY_MS);
  const bearer = { authorization: `Bearer ${project.read_key}` };
  const cookie = { cookie: await readSessionCookie(worker, project.read_key) };
  // Warm: the same request repeated (days before as_of − 8 days come from the isolate's cache after
  // the first read). Cold: each sample a different 90-day window, so every one misses the cache and
  // reads all 90 days of rows from D1.
  const window90 = (shift: number) => `from=${iso(todayMs - (DAYS - 1 + shift) * DAY_MS)}&to=${iso(todayMs - shift * DAY_MS)}`;
  /** target: ms the median must stay under; null for a baseline; -1 for a figure shown for information. */
  type Case = { name: string; range: string; urlOf: (i: number) => string; headers: Record<string, string>; target: number | null; warmup: number };
  const cases: Case[] = [
    { name: "GET /v1/metrics/tools", range: "1 day", urlOf: () => `/v1/metrics/tools?from=${today}&to=${today}`, headers: bearer, target: null, warmup: WARMUP },
    { name: "GET /v1/metrics/tools", range: "90 days", urlOf: () => `/v1/metrics/tools?from=${from90}&to=${today}`, headers: bearer, target: 150, warmup: WARMUP },
    { name: "GET /v1/metrics/tools", range: "90 days, cold", urlOf: (i) => `/v1/metrics/tools?${window90(i + 1)}`, headers: bearer, target: 150, warmup: 0 },
    { name: "GET / (dashboard)", range: "1 day", urlOf: () => `/?from=${today}&to=${today}`, headers: cookie, target: null, warmup: WARMUP },
    { name: "GET / (dashboard)", range: "90 days", urlOf: () => `/?from=${from90}&to=${today}`, headers: cookie, target: 300, warmup: WARMUP },
    { name: "GET / (dashboard)", range: "90 days, cold", urlOf: (i) => `/?${window90(i + 1 + RUNS)}`, headers: cookie, target: 300, warmup: 0 },
    { name: "GET /tool?name= (tool page)", range: "1 day", urlOf: () => `/tool?name=tool_07&from=${today}&to=${today}`, headers: cookie, target: null, warmup: WARMUP },
    { name: "GET /tool?name= (tool page)", range: "90 days", urlOf: () => `/tool?name=tool_07&from=${from90}&to=${today}`, headers: cookie, target: -1, warmup: WARMUP },
  ];
  const results: { name: string; range: string; timing: Timing; target: number | null }[] = [];
  // The worst pages at the caps, after the seeded project's cases (its own project, so they share nothing).
  const caps = await createProject(worker, "bench at the caps");
  await seedCaps(worker, caps.project_id, todayMs);
  const capsCookie = { cookie: await readSessionCookie(worker, caps.read_key) };
  const capCases = [
    { name: "GET / (dashboard)", what: `${CAP_TOOLS + CAP_DEAD_TOOLS + 1} tools, ${CAP_CLIENTS + 1} clients`, path: "/" },
    { name: "GET /tool?name= (tool page)", what: `a tool of ${CAP_CLIENTS} clients`, path: "/tool?name=cap_shared" },
    { name: "GET /v1/metrics/tools", what: `${CAP_TOOLS + CAP_DEAD_TOOLS + 1} tools (for comparison)`, path: "/v1/metrics/tools" },
  ];
  const capResults: { name: string; what: string; timing: Timing }[] = [];
  for (const c of capCases) {
    const headers = c.path.startsWith("/v1/") ? { authorization: `Bearer ${caps.read_key}` } : capsCookie;
    const timing = await timeRuns(() => `${worker.url}${c.path}`, headers, 1, CAP_RUNS);
    capResults.push({ ...c, timing });
    console.log(`at the caps: ${c.name.padEnd(30)} ${c.what.padEnd(30)} median ${timing.median.toFixed(1)} ms  p95 ${timing.p95.toFixed(1)} ms  (${(timing.bytes / 1024).toFixed(1)} KiB)`);
  }
  for (const c of cases) {
    const timing = await time((i) => `${worker.url}${c.urlOf(i)}`, c.headers, c.warmup);
    results.push({ name: c.name, range: c.range, timing, target: c.target });
    console.log(`${c.name.padEnd(30)} ${c.range.padEnd(14)} median ${timing.median.toFixed(1)} ms  p95 ${timing.p95.toFixed(1)} ms  (${timing.bytes} bytes)`);
  }

  const statements = {
    cold90: await overviewStatements(worker.db, project.read_key, rangeFromDays(todayMs - (DAYS - 1) * DAY_MS, todayMs)),
    warm90: await overviewStatements(worker.db, project.read_key, rangeFromDays(todayMs - (DAYS - 1) * DAY_MS, todayMs)),
    day1: await overviewStatements(worker.db, project.read_key, rangeFromDays(todayMs, todayMs)),
  };
  console.log(`GET / (dashboard) D1 statements: 90 days cold ${statements.cold90}, warm ${statements.warm90}; 1 day ${statements.day1} (at most 12)`);

  const stamp = new Date().toISOString().slice(0, 16).replace("T", " ");
  const rows = results.map((r) => {
    const verdict =
      r.target === null ? "baseline" : r.target < 0 ? "for information" : r.timing.median <= r.target ? `≤ ${r.target} ms: met` : `≤ ${r.target} ms: MISSED`;
    return `| ${r.name} | ${r.range} | ${r.timing.median.toFixed(1)} | ${r.timing.p95.toFixed(1)} | ${r.timing.min.toFixed(1)} | ${(r.timing.bytes / 1024).toFixed(1)} | ${verdict} |`;
  });
  const median = (name: string, range: string) => results.find((r) => r.name === name && r.range === range)?.timing.median ?? NaN;
  const ratio = (name: string, range: string) => (median(name, range) / median(name, "1 day")).toFixed(1);
  const section = `## Read API and dashboard (\`npm run bench:read\`)

Measured ${stamp} UTC on ${cpus().length} shared CPUs. The real worker (wrangler's bundle) runs in Miniflare; requests go over
loopback HTTP one at a time (${WARMUP} warm-up, then ${RUNS} timed, median and p95 of those). Rollup data seeded directly:
${counts.dayRows!.toLocaleString("en-US")} day rows (${DAYS} days × ${TOOLS} tools × ${CLIENTS} clients, plus ${EXTRA_DAYS} older days so each cold sample has its own window;
≈ ${counts.avgBucketsPerRow} latency buckets per row, so 90 days of one tool's histograms are ~${Math.round((counts.avgBucketsPerRow! * 9 * CLIENTS * DAYS) / 1024)} KiB of JSON),
${counts.hourRows!.toLocaleString("en-US")} hour rows (the last ${HOUR_ROW_DAYS} days, which the one-day dashboard charts by hour),
${counts.pairRows!.toLocaleString("en-US")} pair rows, ${counts.sessions!.toLocaleString("en-US")} sessions, ${TOOLS + DEAD_TOOLS} registered tools (${DEAD_TOOLS} dead).
The one-day request of each kind is the baseline for its 90-day request, measured in the same run.

- **warm** (the target rows): the same request again. Rollup rows of days that can no longer change
  (before \`as_of\` − 8 days − 1 hour: payloads arrive at most 7 days late and a retry starts at most a day and 30 s
  after its call) are summed once per request shape and kept in the isolate's memory
  (\`src/worker/metrics/final-days.ts\`, 64 entries); only the last ~9 days are read from D1 each time.
- **cold**: every sample a different 90-day window, so each misses that cache and reads all 90 days:
  what the first visitor of a range waits after an isolate starts.
- The dashboard page runs ${statements.cold90} D1 statements on a cold 90-day range (${statements.warm90} warm, ${statements.day1} for one day; at most 12):
  the key, the project name, \`as_of\` (read once), the counter sums as UNION ALL statements of at most 5 terms (tools with
  their histograms, the previous period's totals, the calls series, the clients), registered tools, sessions of both
  periods in one statement, pairs, tool versions, agreement and its declarations — in parallel — and renders the HTML on the server.

90 days against 1 day, warm: tools ${ratio("GET /v1/metrics/tools", "90 days")}×, dashboard ${ratio("GET / (dashboard)", "90 days")}×;
cold: tools ${ratio("GET /v1/metrics/tools", "90 days, cold")}×, dashboard ${ratio("GET / (dashboard)", "90 days, cold")}×.
A cold 90-day read is dominated by moving the rows' histogram JSON out of D1 (summing it with SQLite's \`json_each\`
instead took over a second); a coarser rollup (e.g. per tool, client and month) would bound it.

| request | range | median ms | p95 ms | min ms | answer KiB | target |
|---|---|---|---|---|---|---|
${rows.join("\n")}

### The worst pages at the caps

A second project: ${CAP_TOOLS.toLocaleString("en-US")} tools called on each of the last ${CAP_DAYS} days, ${CAP_DEAD_TOOLS.toLocaleString("en-US")} more registered and
never called, one tool called by ${CAP_CLIENTS.toLocaleString("en-US")} clients, every tool with the same description; the default
7-day range, ${CAP_RUNS} timed requests after one warm-up. Every page is bounded (SPEC §3): the main list 100 rows a page
(\`?page=\`), the other lists their top 20 with a count, one search box (\`?q=\`) over the names, the client picker
the 50 busiest clients. Before the bound (commit 2085a4b, the same project shape, measured once by hand) the
overview was 8,240 KiB (median 867 ms) and this tool page 688 KiB (121 ms).

| request | project | median ms | p95 ms | answer KiB |
|---|---|---|---|---|
${capResults.map((c) => `| ${c.name} | ${c.what} | ${c.timing.median.toFixed(1)} | ${c.timing.p95.toFixed(1)} | ${(c.timing.bytes / 1024).toFixed(1)} |`).join("\n")}`;
  writeBenchmarkSection("read", section);
} finally {
  await worker.stop();
}
