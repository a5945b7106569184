// Projects have a lifecycle (SPEC §3): list projects, list a project's keys (never a key or its
// hash), and delete a project with every row stored for it — while another project keeps all of its.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/worker/index.ts";
import { tablesWithProjectRows } from "../../src/worker/db/projects.ts";
import { agreementPayload, callPayload, postIngest, startupPayload } from "./helpers/ingest.ts";
import { adminHeaders, createKey, createProject, revokeKey, type TestProject } from "./helpers/projects.ts";
import { runCron } from "./helpers/cron.ts";

const admin = (path: string, init: RequestInit = {}) =>
  exports.default.fetch(`http://worker/v1/admin${path}`, { ...init, headers: { ...adminHeaders(), ...(init.headers ?? {}) } });
const readTools = (key: string) => exports.default.fetch("http://worker/v1/metrics/tools", { headers: { authorization: `Bearer ${key}` } });

/** Rows of `projectId` in every table that has a project_id column. */
async function rowsPerTable(projectId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of await tablesWithProjectRows(env.DB)) {
    const row = await env.DB.prepare(`SELECT COUNT(*) AS n FROM "${table}" WHERE project_id = ?1`).bind(projectId).first<{ n: number }>();
    counts[table] = row!.n;
  }
  return counts;
}

/** A project with data in every stage: raw rows, rolled-up counters, sessions, registrations, verdicts. */
async function filledProject(name: string): Promise<TestProject> {
  const p = await createProject(name);
  const t = Date.now() - 3_600_000;
  const iso = (ms: number) => new Date(ms).toISOString();
  const batch = [
    callPayload({ started_at: iso(t), outcome: "bad_args", args_hash: "aaaaaaaaaaaa" }),
    callPayload({ started_at: iso(t + 1_000), args_hash: "bbbbbbbbbbbb" }),
    callPayload({ started_at: iso(t + 5_000), tool_name: "get_order" }),
    startupPayload(),
    agreementPayload({ agreed: false }),
  ];
  expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
  await runCron(Date.now());
  // More raw rows the rollup has not taken in yet.
  expect((await postIngest({ batch: [callPayload({ started_at: iso(t + 9_000) })] }, { key: p.ingest_key })).status).toBe(202);
  return p;
}

describe("project lifecycle", () => {
  it("lists projects with their name, creation time and budget", async () => {
    const p = await createProject("listed");
    const res = await admin("/projects");
    expect(res.status).toBe(200);
    const { projects } = await res.json<{ projects: Record<string, unknown>[] }>();
    const mine = projects.find((x) => x.project_id === p.project_id);
    expect(mine).toEqual({ project_id: p.project_id, name: "listed", database: "DB", created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), payload_budget_per_minute: 10_000 });
    expect(JSON.stringify(projects)).not.toContain("mp_");
  });

  it("lists a project's keys with kind and dates, never a key or its hash; 404 for an unknown project", async () => {
    const p = await createProject("keys");
    const extra = await createKey(p.project_id, "read");
    await revokeKey(extra.key_id);
    const res = await admin(`/projects/${p.project_id}/keys`);
    expect(res.status).toBe(200);
    const { keys } = await res.json<{ keys: { key_id: string; kind: string; created_at: string; revoked_at: string | null }[] }>();
    expect(keys.map((k) => k.kind).sort()).toEqual(["ingest", "read", "read"]);
    for (const k of keys) expect(Object.keys(k).sort()).toEqual(["created_at", "key_id", "kind", "revoked_at"]);
    expect(keys.find((k) => k.key_id === extra.key_id)?.revoked_at).toMatch(/Z$/);
    expect(keys.filter((k) => k.revoked_at === null)).toHaveLength(2);
    const text = JSON.stringify(keys);
    for (const secret of [p.ingest_key, p.read_key, extra.key]) expect(text).not.toContain(secret.slice(16));
    const hashes = await env.DB.prepare("SELECT key_sha256 FROM api_keys WHERE project_id = ?1").bind(p.project_id).all<{ key_sha256: string }>();
    for (const { key_sha256 } of hashes.results) expect(text).not.toContain(key_sha256);
    expect((await admin("/projects/prj_nope/keys")).status).toBe(404);
  });

  it("deletes a project with every row stored for it; its keys answer 401 at once; another project is untouched", async () => {
    const doomed = await filledProject("doomed");
    const kept = await filledProject("kept");
    const before = await rowsPerTable(doomed.project_id);
    const keptBefore = await rowsPerTable(kept.project_id);
    const keptTools = await (await readTools(kept.read_key)).json();
    // The data reached every stage, so the deletion has something to delete everywhere it matters.
    for (const table of ["projects", "api_keys", "call_state", "raw_startups", "raw_agreements", "sessions", "tool_hour_metrics", "day_marks", "registered_tools"]) {
      if (table in before) expect(before[table], table).toBeGreaterThan(0);
    }
    expect((await readTools(doomed.read_key)).status).toBe(200);

    const res = await admin(`/projects/${doomed.project_id}`, { method: "DELETE" });
    expect(res.status).toBe(204);

    const after = await rowsPerTable(doomed.project_id);
    expect(Object.values(after).every((n) => n === 0), JSON.stringify(after)).toBe(true);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    expect((await readTools(doomed.read_key)).status).toBe(401);
    expect((await postIngest({ batch: [callPayload()] }, { key: doomed.ingest_key })).status).toBe(401);
    expect((await admin(`/projects/${doomed.project_id}/keys`)).status).toBe(404);
    expect((await admin(`/projects/${doomed.project_id}`, { method: "DELETE" })).status).toBe(404);

    expect(await rowsPerTable(kept.project_id)).toEqual(keptBefore);
    expect(await (await readTools(kept.read_key)).json()).toEqual(keptTools);
  });

  it("finds every table holding project rows, from the schema itself", async () => {
    const tables = await tablesWithProjectRows(env.DB);
    const { results } = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%project_id%'").all<{ name: string }>();
    expect(tables.sort()).toEqual(results.map((r) => r.name).sort());
    expect(tables).toContain("tool_day_metrics");
  });

  it("needs the admin token", async () => {
    for (const [method, path] of [["GET", "/projects"], ["GET", "/projects/x/keys"], ["DELETE", "/projects/x"]] as const) {
      const res = await exports.default.fetch(`http://worker/v1/admin${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });
});
