// Regression (found by test/e2e/metrics-conformance.test.ts): a startup that lists one tool name
// twice used to be dropped at ingest, although SPEC §1.2 drops a startup only for an invalid entry.
// It is now stored and rolled up: the last entry of the name is the registered one, and the
// session's schema bytes are the sum over the whole list (SPEC §2.4, docs/metrics.md).
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import worker from "../../../src/worker/index.ts";
import { postIngest, startupPayload } from "../helpers/ingest.ts";
import { createProject } from "../helpers/projects.ts";
import { runCron } from "../helpers/cron.ts";

it("keeps a startup naming a tool twice: the last entry registers, the session counts both", async () => {
  const project = await createProject("duplicate tool names");
  const tools = [
    { name: "search_orders", schema_bytes: 100, schema_hash: "aaaa11112222", description_hash: "d0d0d0d0d0d0", policy: null },
    { name: "get_order", schema_bytes: 40, schema_hash: "bbbb33334444", description_hash: "d1d1d1d1d1d1", policy: null },
    {
      name: "search_orders", schema_bytes: 300, schema_hash: "aaaa11112222", description_hash: "d2d2d2d2d2d2",
      policy: { requires_authorization: true, requires_verified_identity: false },
    },
  ];
  const res = await postIngest({ batch: [startupPayload({ session_id: "s_dup000000001", tools })] }, { key: project.ingest_key });
  expect(res.status).toBe(202);
  const stored = await env.DB.prepare("SELECT COUNT(*) AS n FROM raw_startups WHERE project_id = ?1").bind(project.project_id).first<{ n: number }>();
  expect(stored?.n).toBe(1);

  await runCron(Date.now());

  const read = await exports.default.fetch("http://worker/v1/metrics/tools", { headers: { authorization: `Bearer ${project.read_key}` } });
  const body = await read.json<{ tools: { tool_name: string; schema_bytes: number | null; dead: boolean; policy: unknown }[] }>();
  expect(body.tools.map((t) => [t.tool_name, t.schema_bytes, t.dead, t.policy]).sort()).toEqual([
    ["get_order", 40, true, null],
    ["search_orders", 300, false, { requires_authorization: true, requires_verified_identity: false }],
  ]);
  const session = await env.DB.prepare("SELECT schema_bytes_sum FROM sessions WHERE project_id = ?1 AND session_id = 's_dup000000001'")
    .bind(project.project_id)
    .first<{ schema_bytes_sum: number }>();
  expect(session?.schema_bytes_sum).toBe(440);
});
