// Two databases end to end (SPEC §7), in the real worker in Miniflare with wrangler.toml's bindings:
// the cron's scheduled handler sends one rollup job per database to the mcpulse-rollup queue, the
// queue delivers each to the worker's queue() handler, and projects in either database are folded
// in and answer the same for the same calls.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;
beforeAll(async () => {
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
});

const admin = async (path: string) => (await fetch(`${worker.url}${path}`, { headers: { authorization: `Bearer ${worker.adminToken}` } })).json();

function calls(nowMs: number): unknown[] {
  return Array.from({ length: 12 }, (_, i) => ({
    v: 1, type: "call", session_id: `s_e2e_${i % 3}`, client_name: i % 2 ? "cursor" : "claude-ai", tool_name: ["search", "fetch"][i % 2],
    started_at: new Date(nowMs - 10 * 60_000 + i * 1_000).toISOString(), duration_ms: 20 + i, outcome: i % 4 ? "ok" : "tool_error",
    response_bytes: 50 * i, is_empty: false, args_hash: `${i % 3}aaaaaaaaaaa`,
  }));
}

describe("two databases in the running worker", () => {
  it("rolls each database up through its own queued job; the same calls answer the same in either", async () => {
    expect(Object.keys(worker.dbs)).toEqual(["DB", "DB_2"]);
    const first = await createProject(worker, "first", "DB");
    const second = await createProject(worker, "second", "DB_2");
    const nowMs = Date.now();
    for (const p of [first, second]) {
      const res = await fetch(`${worker.url}/v1/ingest`, {
        method: "POST",
        headers: { authorization: `Bearer ${p.ingest_key}`, "content-type": "application/json" },
        body: JSON.stringify({ batch: calls(nowMs) }),
      });
      expect(res.status).toBe(202);
    }
    const tools = async (readKey: string) => {
      const body = (await (await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${readKey}` } })).json()) as { as_of: string | null; tools: { calls: number }[] };
      return body;
    };
    // The real cron: scheduled() only sends the jobs; Miniflare's queue delivers them. Until both
    // projects' calls are folded in (the ingest writes run after the 202, the jobs after the cron).
    const mf = await worker.mf.getWorker();
    const deadline = Date.now() + 60_000;
    let done = false;
    while (!done && Date.now() < deadline) {
      await mf.scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const [a, b] = await Promise.all([tools(first.read_key), tools(second.read_key)]);
      done = [a, b].every((t) => t.tools.reduce((n, x) => n + x.calls, 0) === 12);
    }
    expect(done).toBe(true);
    const [a, b] = await Promise.all([tools(first.read_key), tools(second.read_key)]);
    expect(b.tools).toEqual(a.tools);
    // Each database's rows stay in it.
    const rowsIn = async (db: D1Database, projectId: string) =>
      (await db.prepare("SELECT COUNT(*) AS n FROM tool_hour_metrics WHERE project_id = ?1").bind(projectId).first<{ n: number }>())!.n;
    expect(await rowsIn(worker.dbs.DB!, second.project_id)).toBe(0);
    expect(await rowsIn(worker.dbs.DB_2!, second.project_id)).toBeGreaterThan(0);
    expect(await rowsIn(worker.dbs.DB_2!, first.project_id)).toBe(0);

    const health = (await admin("/v1/admin/health")) as { databases: { name: string; state: string; rollup_as_of: string | null }[] };
    expect(health.databases.map((d) => [d.name, d.state])).toEqual([["DB", "ok"], ["DB_2", "ok"]]);
    for (const d of health.databases) expect(d.rollup_as_of).not.toBeNull();
    const databases = (await admin("/v1/admin/databases")) as { databases: { name: string; projects: number; bytes: number }[] };
    expect(databases.databases.map((d) => [d.name, d.projects])).toEqual([["DB", 1], ["DB_2", 1]]);
  });
});
