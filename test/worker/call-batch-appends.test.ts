// A project's requests between two rollup runs share one call_batches row (migration 0025): appended
// in receive order up to APPEND_LIMIT_CHARS, closed by the run before it takes rows, emptied when
// folded in. Driven through the ingest write (persistBatch) and the rollup, on the real schema.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { APPEND_LIMIT_CHARS, persistBatch, type BatchTuples } from "../../src/worker/db/raw-writes.ts";
import { rollupCallChunk } from "../../src/worker/rollup/calls.ts";
import { DEFAULT_ROLLUP_OPTIONS, runRollup } from "../../src/worker/rollup/index.ts";
import worker from "../../src/worker/index.ts";
import { resetDb, snapshot } from "./rollup/fixtures.ts";
import { postIngest, startupPayload } from "./helpers/ingest.ts";
import { adminHeaders, createProject } from "./helpers/projects.ts";
import { runCron } from "./helpers/cron.ts";
import { startupsWatermarkSql } from "../../src/worker/db/rollup-state.ts";

const db = env.DB;
const T0 = Date.UTC(2026, 10, 20, 12, 0);

/** A call tuple as ingest stores it (db/tuples.ts CALL_BATCH_CALL), its tool name `tool`. */
const tuple = (tool: string, startedAtMs: number) => ["s1", "claude-ai", tool, startedAtMs, 10, "ok", 5, 0, "a1b2c3d4e5f6", 0];

let ids = 0;
async function write(project: string, calls: unknown[][], receivedAtMs: number): Promise<void> {
  const tuples: BatchTuples = { calls, startups: [], agreements: [] };
  const id = `req-${++ids}`;
  const r = await persistBatch(db, { projectId: project, receivedAtMs, requestId: id, batchId: id, resendGuard: false, tuples });
  expect(r.stored).toBe(true);
}

type Row = { project_id: string; call_count: number; chars: number; calls_json: string; batch_ids: string };
const rows = async () =>
  (await db.prepare("SELECT project_id, call_count, chars, calls_json, batch_ids FROM call_batches ORDER BY batch_seq").all<Row>()).results;

beforeEach(async () => {
  ids = 0;
  await resetDb(db);
});

describe("call_batches appends", () => {
  it("a project's requests share one row in receive order; another project has its own", async () => {
    await write("p1", [tuple("a", T0)], T0 + 1);
    await write("p2", [tuple("x", T0)], T0 + 2);
    await write("p1", [tuple("b", T0 + 1), tuple("c", T0 + 2)], T0 + 3);
    const [p1, p2] = await rows();
    expect(p1).toMatchObject({ project_id: "p1", call_count: 3, batch_ids: " req-1 req-3 " });
    expect((JSON.parse(p1!.calls_json) as unknown[][]).map((c) => c[2])).toEqual(["a", "b", "c"]);
    expect(p1!.chars).toBe(p1!.calls_json.length);
    expect(p2).toMatchObject({ project_id: "p2", call_count: 1, batch_ids: " req-2 " });
  });

  it("appends while the row stays within APPEND_LIMIT_CHARS, and starts a row one character over", async () => {
    for (const over of [-1, 0, 1]) {
      await resetDb(db);
      const first = [tuple("a", T0)];
      const firstChars = JSON.stringify(first).length;
      // The second request's JSON: the row's length after an append is firstChars + its length − 1.
      const base = JSON.stringify([tuple("", T0 + 1)]).length;
      const second = [tuple("b".repeat(APPEND_LIMIT_CHARS + 1 + over - firstChars - base), T0 + 1)];
      expect(firstChars + JSON.stringify(second).length - 1).toBe(APPEND_LIMIT_CHARS + over);
      await write("p1", first, T0 + 1);
      await write("p1", second, T0 + 2);
      const stored = await rows();
      expect(stored.map((r) => r.call_count), `${over} over the limit`).toEqual(over > 0 ? [1, 1] : [2]);
      expect(stored.every((r) => r.chars === r.calls_json.length)).toBe(true);
    }
  });

  it("a calls chunk never takes a row that can still be appended to; the run closes it first", async () => {
    await write("p1", [tuple("a", T0)], T0 + 1);
    expect((await rollupCallChunk(db, DEFAULT_ROLLUP_OPTIONS)).calls).toBe(0);
    await write("p1", [tuple("b", T0 + 1)], T0 + 2);
    expect(await rows()).toMatchObject([{ call_count: 2 }]);

    await runRollup(db, T0 + 300_000);
    // Emptied, not deleted: its batch ids stay for the Idempotency-Key window.
    expect(await rows()).toMatchObject([{ call_count: 0, calls_json: "[]", chars: 2, batch_ids: " req-1 req-2 " }]);
    // A request after the run opens a new row rather than reopening the emptied one.
    await write("p1", [tuple("c", T0 + 2)], T0 + 300_001);
    expect((await rows()).map((r) => r.call_count)).toEqual([0, 1]);
    await runRollup(db, T0 + 600_000);
    const tools = ((await snapshot(db)).hours as { tool_name: string; calls: number }[]).map((h) => h.tool_name).sort();
    expect(tools).toEqual(["a", "b", "c"]);
  });
});

describe("startup and verdict numbers (migration 0026)", () => {
  const deleteProject = (id: string) => exports.default.fetch(`http://worker/v1/admin/projects/${id}`, { method: "DELETE", headers: adminHeaders() });
  const rollup = (ms: number) => runCron(ms);
  const registered = async (projectId: string) =>
    (await env.DB.prepare("SELECT tool_name FROM registered_tools WHERE project_id = ?1").bind(projectId).all<{ tool_name: string }>()).results.map((r) => r.tool_name);

  it("a startup after the rows above the watermark were deleted is numbered above it and folded in", async () => {
    const a = await createProject();
    const b = await createProject();
    const c = await createProject();
    const startup = (tool: string) => ({ batch: [{ ...startupPayload(), tools: [{ name: tool, schema_bytes: 10 }] }] });
    expect((await postIngest(startup("first"), { key: a.ingest_key })).status).toBe(202);
    await rollup(Date.now());
    // B's startup is numbered next and never folded in: its project is deleted with it.
    expect((await postIngest(startup("doomed"), { key: b.ingest_key })).status).toBe(202);
    expect((await deleteProject(b.project_id)).status).toBe(204);
    const top = await env.DB.prepare("SELECT MAX(startup_seq) AS n FROM raw_startups").first<{ n: number }>();
    const watermark = await env.DB.prepare(`SELECT ${startupsWatermarkSql()} AS value`).first<{ value: number }>();
    expect(top!.n).toBe(watermark!.value);
    await rollup(Date.now());
    // …then every row is gone (retention, a deleted project): the next number is still above the watermark.
    await env.DB.prepare("DELETE FROM raw_startups").run();
    expect((await postIngest(startup("later"), { key: c.ingest_key })).status).toBe(202);
    const seq = await env.DB.prepare("SELECT startup_seq FROM raw_startups WHERE project_id = ?1").bind(c.project_id).first<{ startup_seq: number }>();
    expect(seq!.startup_seq).toBe(watermark!.value + 1);
    await rollup(Date.now());
    expect(await registered(a.project_id)).toEqual(["first"]);
    expect(await registered(c.project_id)).toEqual(["later"]);
  });
});
