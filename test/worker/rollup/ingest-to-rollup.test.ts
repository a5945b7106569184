// End to end through the real worker: POST /v1/ingest, then the 5-minute cron, then the rollup
// tables and the read API (SPEC §1, §2).
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import worker from "../../../src/worker/index.ts";
import { agreementPayload, callPayload, postIngest, startupPayload } from "../helpers/ingest.ts";
import { createProject } from "../helpers/projects.ts";
import { snapshot } from "./fixtures.ts";
import { runCron } from "../helpers/cron.ts";

const iso = (ms: number) => new Date(ms).toISOString();

it("rolls up what ingest stored: retries, first-call success, pairs, sessions, registered tools, agreement", async () => {
  const project = await createProject("rollup e2e");
  const t = Date.now() - 3_600_000;
  // search_orders: a (bad_args) → b (different hash, 2 s after a ended: a retry) → c (same hash as b: a repeat).
  // get_order in between, so the session's pairs are search→get, get→search.
  const batch = [
    callPayload({ started_at: iso(t), duration_ms: 100, outcome: "bad_args", args_hash: "aaaaaaaaaaaa" }),
    callPayload({ started_at: iso(t + 2_100), duration_ms: 100, args_hash: "bbbbbbbbbbbb" }),
    callPayload({ started_at: iso(t + 5_000), duration_ms: 10, tool_name: "get_order", args_hash: "cccccccccccc" }),
    callPayload({ started_at: iso(t + 10_000), duration_ms: 100, args_hash: "bbbbbbbbbbbb", is_empty: true, response_bytes: 2 }),
    startupPayload(),
    agreementPayload({ agreed: false }),
  ];
  const res = await postIngest({ batch }, { key: project.ingest_key });
  expect(res.status).toBe(202);
  const stored = await env.DB.prepare("SELECT (SELECT COALESCE(SUM(call_count), 0) FROM call_state WHERE project_id = ?1) + (SELECT COALESCE(SUM(call_count), 0) FROM call_batches WHERE project_id = ?1) AS n").bind(project.project_id).first<{ n: number }>();
  expect(stored?.n).toBe(4);

  await runCron(Date.now());

  const snap = await snapshot(env.DB);
  const mine = <T extends { project_id: string }>(rows: T[]) => rows.filter((r) => r.project_id === project.project_id);
  const search = mine(snap.hours).filter((r) => r.tool_name === "search_orders");
  const total = (k: "calls" | "retries" | "first_call_attempts" | "first_call_ok" | "empty" | "bad_args") => search.reduce((a, r) => a + r[k], 0);
  expect([total("calls"), total("retries"), total("first_call_attempts"), total("first_call_ok"), total("empty"), total("bad_args")])
    .toEqual([3, 1, 2, 0, 1, 1]);
  expect(mine(snap.pairs).map((p) => [p.from_tool, p.to_tool, p.pair_count]).sort()).toEqual([
    ["get_order", "search_orders", 1],
    ["search_orders", "get_order", 1],
  ]);
  // The session row is the rollup's: first seen at the first call, last seen at the startup's receipt.
  const sessions = mine(snap.sessions);
  expect(sessions).toEqual([
    { project_id: project.project_id, session_id: "s_0123456789ab", first_seen_ms: t, last_seen_ms: sessions[0]!.last_seen_ms,
      client_name: "claude-ai", calls: 4, response_bytes_sum: 1200 * 3 + 2, schema_bytes_sum: 680 },
  ]);
  expect(sessions[0]!.last_seen_ms).toBeGreaterThanOrEqual(t + 3_600_000 - 60_000);
  expect(mine(snap.registered as { project_id: string; tool_name: string }[]).map((r) => r.tool_name)).toEqual(["delete_order", "search_orders"]);
  expect(mine(snap.agreementDays as { project_id: string; checks: number; disagreements: number }[]).map((r) => [r.checks, r.disagreements])).toEqual([[1, 1]]);

  // The read API serves these rows with as_of set (its own tests cover its arithmetic).
  const read = await exports.default.fetch("http://worker/v1/metrics/tools", { headers: { authorization: `Bearer ${project.read_key}` } });
  expect(read.status).toBe(200);
  const body = await read.json<{ as_of: string | null; tools: { tool_name: string; retries: number; first_call_attempts: number }[] }>();
  expect(body.as_of).not.toBeNull();
  expect(body.tools.find((r) => r.tool_name === "search_orders")).toMatchObject({ retries: 1, first_call_attempts: 2 });
});
