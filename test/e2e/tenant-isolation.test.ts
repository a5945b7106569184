// One tenant must not hurt another (issue: a hostile project at every cap): a project floods the
// worker with startups at SPEC §1.2's caps — 64 agreement fields × 64 tools each, every name
// distinct, 500 tools — and while the rollup folds them, another project's /v1/metrics/tools keeps
// answering, every time, while the hostile project is folded in whole. Every rollup transaction is
// bounded in rows (src/worker/rollup/startups.ts, test/worker/rollup/*bound*), so no read waits
// behind one for long; how long is a timing, measured by `npm run bench:fairness` against a quiet
// baseline (docs/benchmarks.md), never asserted here. Real worker in Miniflare, real cron, real D1.
import { afterAll, beforeAll, expect, test } from "vitest";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";
import { storedPayloadRows } from "./helpers/stored-rows.ts";
import { startupsWatermarkSql } from "../../src/worker/db/rollup-state.ts";

const FIELDS = 64;
const TOOLS_PER_FIELD = 64;
const STARTUPS = 200;

let worker: RunningWorker;

beforeAll(async () => {
  worker = await startWorker();
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

test("a hostile project at the caps is folded in whole while another project's /v1/metrics/tools keeps answering", async () => {
  const hostile = await createProject(worker, "hostile");
  const victim = await createProject(worker, "victim");
  // 20 startups per request keeps each body under 1 MiB.
  for (let s = 0; s < STARTUPS; s += 20) {
    const batch = Array.from({ length: 20 }, (_, i) => hostileStartup(s + i));
    const res = await fetch(`${worker.url}/v1/ingest`, {
      method: "POST",
      headers: { authorization: `Bearer ${hostile.ingest_key}`, "content-type": "application/json" },
      body: JSON.stringify({ batch }),
    });
    expect(res.status).toBe(202);
  }
  const deadline = Date.now() + 60_000;
  while ((await storedPayloadRows(worker.db, hostile.project_id)) < STARTUPS) {
    if (Date.now() > deadline) throw new Error("the hostile startups did not land");
    await new Promise((r) => setTimeout(r, 50));
  }

  const read = async () => {
    const started = performance.now();
    const res = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${victim.read_key}` } });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    return performance.now() - started;
  };
  await read();
  const idle = await read();

  // The rollup runs (as many cron runs as it takes to fold everything) while the victim reads.
  let rolling = true;
  const rollups = (async () => {
    try {
      for (let run = 0; run < 40; run++) {
        await worker.runRollup(new Date());
        const pending = await worker.db
          .prepare(`SELECT COUNT(*) AS n FROM raw_startups WHERE startup_seq > ${startupsWatermarkSql()}`)
          .first<{ n: number }>();
        if (pending?.n === 0) break;
      }
    } finally {
      rolling = false;
    }
  })();
  const delays: number[] = [];
  while (rolling) {
    delays.push(await read());
    await new Promise((r) => setTimeout(r, 20));
  }
  await rollups;

  const worst = Math.max(...delays);
  console.log(JSON.stringify({ event: "tenant_isolation", idle_ms: Math.round(idle), reads: delays.length, worst_read_ms: Math.round(worst) }));
  const declared = await worker.db
    .prepare("SELECT COUNT(*) AS n FROM agreement_declarations WHERE project_id = ?1")
    .bind(hostile.project_id)
    .first<{ n: number }>();
  // Everything was folded: the bound slows the hostile project down, it loses nothing.
  expect(declared?.n).toBe(STARTUPS * FIELDS * TOOLS_PER_FIELD);
  // The victim was answered between the hostile project's transactions, not only after them.
  expect(delays.length).toBeGreaterThan(3);
}, 300_000);
