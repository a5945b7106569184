// The seeded workload of bench:rollup and bench:databases: raw calls as ingest stores them (one
// call_batches row of 500 calls per request), written straight into a project's database.
import type { Miniflare } from "miniflare";
import { dayRowsSourceSql } from "../src/worker/db/day-marks.ts";
import { durationBucket } from "../src/worker/histogram.ts";

// Calls start 50 ms apart overall (20 calls/s, 72k per hour) from this time on.
export const T0 = Date.UTC(2026, 10, 1);
export const SPACING_MS = 50;
const SEED_CHUNK = 100_000;

export type Db = Awaited<ReturnType<Miniflare["getD1Database"]>>;

/**
 * The seeded calls as ingest stores them: call_batches rows of 500 calls, numbered `i` by the
 * recursive `n(i)` (`numbers` is its body), each call's durations from `bench_durations`; the
 * session, client, start and receive time are SQL over `i`. Tools, outcomes, sizes, empties and
 * argument hashes are the mix below, the same for every bench that seeds calls.
 */
export function seedCallBatchesSql(o: { numbers: string; project: string; session: string; client: string; startedAt: string; receivedAt: string }): string {
  return `WITH RECURSIVE n(i) AS (${o.numbers})
INSERT INTO call_batches (project_id, received_at_ms, call_count, calls_json)
SELECT ${o.project}, MAX(received_at_ms), COUNT(*), json_group_array(json(call)) FROM (
SELECT i, json_array(${o.session},
  ${o.client},
  'tool_' || ((i * 7919) % 97 % 8),
  ${o.startedAt},
  d.duration_ms,
  CASE i % 20 WHEN 0 THEN 'bad_args' WHEN 1 THEN 'tool_error' WHEN 2 THEN 'crashed' ELSE 'ok' END,
  (i * 101) % 5000,
  CASE WHEN i % 20 > 2 AND i % 17 = 0 THEN 1 ELSE 0 END,
  printf('%012x', (i * 31 + i / 2000) % 5),
  d.duration_bucket) AS call,
  ${o.receivedAt} AS received_at_ms
FROM n JOIN bench_durations d ON d.idx = (i * 37) % 500 ORDER BY i)
GROUP BY (i - 1) / 500 ORDER BY MIN(i)`;
}

// Realistic sessions: 50 concurrent sessions of 200 calls each per block of 10,000 calls, so a
// session calls every 2.5 s; 8 tools (a tool's next call in its session is ~20 s later); 5
// argument hashes, a session's changing every 40 of its calls (so ~3 % of calls are retries); 3
// clients; outcomes 85 % ok; latencies log-spread 1 ms–30 s; every 100th call arrives 10 minutes
// late (its started_at is 10 minutes back).
const SEED_SQL = seedCallBatchesSql({
  numbers: "SELECT CAST(?1 AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < ?2",
  project: "'bench'",
  session: "'s_' || (i % 50 + 50 * (i / 10000))",
  client: "CASE (i % 50 + i / 10000) % 3 WHEN 0 THEN 'claude-ai' WHEN 1 THEN 'cursor' ELSE 'vscode' END",
  startedAt: `?3 + i * ${SPACING_MS} + (i * 13) % 40 - CASE WHEN i % 100 = 0 THEN 600000 ELSE 0 END`,
  receivedAt: `?3 + i * ${SPACING_MS} + 1000`,
});

/**
 * The seeded project's calls as every read counts them: its day rows plus the hour rows not folded
 * into one yet (the day of a still-open day lives in its hour rows only).
 */
export async function countedCalls(db: Db): Promise<number> {
  return (await db.prepare(`SELECT COALESCE(SUM(calls), 0) AS n FROM ${dayRowsSourceSql(["calls"], "'bench'", "0", "9e15")}`).first<{ n: number }>())!.n;
}

export async function seed(db: Db, from: number, to: number): Promise<void> {
  for (let lo = from; lo <= to; lo += SEED_CHUNK) {
    const hi = Math.min(to, lo + SEED_CHUNK - 1);
    await db.prepare(SEED_SQL).bind(lo, hi, T0).run();
  }
}

/** The 500 log-spread latencies the seed draws from (a helper table of the bench database). */
export async function seedDurations(db: Db): Promise<void> {
  const durations = Array.from({ length: 500 }, (_, k) => Math.round(Math.exp((k / 499) * Math.log(30_000))));
  await db.prepare("CREATE TABLE bench_durations (idx INTEGER PRIMARY KEY, duration_ms INTEGER, duration_bucket INTEGER)").run();
  await db
    .prepare("INSERT INTO bench_durations SELECT key, value, NULL FROM json_each(?1)")
    .bind(JSON.stringify(durations))
    .run();
  await db
    .prepare("UPDATE bench_durations SET duration_bucket = json_extract(?1, '$[' || idx || ']')")
    .bind(JSON.stringify(durations.map(durationBucket)))
    .run();
}
