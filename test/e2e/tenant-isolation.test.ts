// One tenant must not hurt another (issue: a hostile project at every cap): a project floods the
// worker with startups at SPEC §1.2's caps — 64 agreement fields × 64 tools each, every name
// distinct, 500 tools — and while the rollup folds them, another project's /v1/metrics/tools keeps
// answering with its own figures, while the hostile project is folded in whole. Every rollup
// transaction is bounded in rows (src/worker/rollup/startups.ts, test/worker/rollup/*bound*): the
// rollup's own reports show the fold took one batch per capped startup, so other requests reach
// the database between them. How long a read waits is a timing, measured by `npm run
// bench:fairness` against a quiet baseline (docs/benchmarks.md), never asserted here; nor is how
// many reads fit in. Real worker in Miniflare, real rollup jobs, real D1.
import { afterAll, beforeAll, expect, test } from "vitest";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";
import { startupsWatermarkSql } from "../../src/worker/db/rollup-state.ts";
import { MAX_STARTUP_CHUNK_ROWS, STARTUP_CHUNK_STATEMENTS } from "../../src/worker/rollup/startups.ts";

const FIELDS = 64;
const TOOLS_PER_FIELD = 64;
const STARTUPS = 200;

let worker: RunningWorker;
/** The rollup's report of each job on the first database (its `rollup` log line, rollup-jobs.ts). */
const reports: { queries: number; newStartups: number; caughtUp: boolean }[] = [];

beforeAll(async () => {
  worker = await startWorker({
    onLog(message) {
      let line: { event?: string; database?: string; queries: number; newStartups: number; caughtUp: boolean };
      try {
        line = JSON.parse(message);
      } catch {
        return; // not a structured line
      }
      if (line.event === "rollup" && line.database === "DB") reports.push(line);
    },
  });
});
afterAll(async () => {
  await worker?.stop();
});

/** A startup at every cap, with names no other startup uses (so nothing merges). */
function hostileStartup(s: number): Record<string, unknown> {
  return {
    v: 1,
    type: "startup",
    session_id: `s_${s.toString(16).padStart(12, "0")}`,
    client_name: "flood",
    tools: Array.from({ length: 20 }, (_, t) => ({ name: `t${s}_${t}`, schema_bytes: 100 })),
    agree_declared: Array.from({ length: FIELDS }, (_, f) => ({
      field: `f${s}_${f}`,
      tools: Array.from({ length: TOOLS_PER_FIELD }, (_, t) => `x${s}_${t}`),
    })),
  };
}

/** Waits until the rows of `count` payloads of the project have landed (ingest writes after its 202). */
async function landed(projectId: string, count: number): Promise<void> {
  while ((await storedPayloadRows(worker.db, projectId)) < count) await new Promise((r) => setTimeout(r, 50));
}

async function post(key: string, batch: unknown[]): Promise<void> {
  const res = await fetch(`${worker.url}/v1/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ batch }),
  });
  expect(res.status).toBe(202);
}

test("a hostile project at the caps is folded in whole, one bounded transaction per startup, while another project's /v1/metrics/tools keeps answering with its own figures", async () => {
  const hostile = await createProject(worker, "hostile");
  const victim = await createProject(worker, "victim");

  // The victim's figures, folded before the flood: what every read must keep answering.
  const startedAt = new Date(Date.now() - 60_000).toISOString();
  const victimCalls = Array.from({ length: 12 }, (_, i) => ({
    v: 1, type: "call", session_id: "s_victim_000001", client_name: "claude-ai", tool_name: i < 8 ? "search_orders" : "refund",
    started_at: startedAt, duration_ms: 40 + i, outcome: i % 4 === 3 ? "bad_args" : "ok", response_bytes: 100, is_empty: false, args_hash: "52a4fe5fc814",
  }));
  await post(victim.ingest_key, victimCalls);
  await landed(victim.project_id, victimCalls.length);
  await worker.runRollup(new Date());
  const read = async () => {
    const res = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${victim.read_key}` } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { tools: { tool_name: string; calls: number }[] }).tools;
  };
  const expected = await read();
  expect(expected.map((t) => [t.tool_name, t.calls]).sort()).toEqual([["refund", 4], ["search_orders", 8]]);

  // 20 startups per request keeps each body under 1 MiB.
  for (let s = 0; s < STARTUPS; s += 20) await post(hostile.ingest_key, Array.from({ length: 20 }, (_, i) => hostileStartup(s + i)));
  await landed(hostile.project_id, STARTUPS);
  reports.length = 0;

  // The rollup runs (as many jobs as it takes to fold everything) while the victim reads.
  const pending = async () =>
    (await worker.db.prepare(`SELECT COUNT(*) AS n FROM raw_startups WHERE startup_seq > ${startupsWatermarkSql()}`).first<{ n: number }>())!.n;
  let rolling = true;
  const rollups = (async () => {
    try {
      while ((await pending()) > 0) {
        const before = reports.length;
        await worker.runRollup(new Date());
        // Every job folds something: a job that folded nothing would loop here for ever.
        expect(reports.length).toBe(before + 1);
        expect(reports.at(-1)!.newStartups).toBeGreaterThan(0);
      }
    } finally {
      rolling = false;
    }
  })();
  let reads = 0;
  while (rolling) {
    // Answered, and with the victim's figures, not another project's and not a partial view.
    expect(await read()).toEqual(expected);
    reads += 1;
    await new Promise((r) => setTimeout(r, 20));
  }
  await rollups;
  console.log(JSON.stringify({ event: "tenant_isolation", jobs: reports.length, reads }));

  const declared = await worker.db
    .prepare("SELECT COUNT(*) AS n FROM agreement_declarations WHERE project_id = ?1")
    .bind(hostile.project_id)
    .first<{ n: number }>();
  // Everything was folded: the bound slows the hostile project down, it loses nothing.
  expect(declared?.n).toBe(STARTUPS * FIELDS * TOOLS_PER_FIELD);
  expect(reports.reduce((sum, r) => sum + r.newStartups, 0)).toBe(STARTUPS);
  // A capped startup is 20 tools + 64 × 64 declared names of work, and a startups chunk takes at
  // most MAX_STARTUP_CHUNK_ROWS: one startup per chunk, each its own batch of
  // STARTUP_CHUNK_STATEMENTS. So the fold was 200 transactions over several jobs, and the victim's
  // requests could reach the database between any two of them.
  for (const r of reports) expect(r.queries).toBeGreaterThanOrEqual(STARTUP_CHUNK_STATEMENTS * r.newStartups);
  expect(2 * (20 + FIELDS * TOOLS_PER_FIELD)).toBeGreaterThan(MAX_STARTUP_CHUNK_ROWS);
  expect(reports.length).toBeGreaterThan(1);
  expect(reports.at(-1)!.caughtUp).toBe(true);
}, 300_000);
