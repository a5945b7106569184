// More than one database (SPEC §7): the list of databases, the directory, placement, the admin
// answers, and every path with a project in the second database — the same workload in either
// database gives the same answers. Faults are injected at the binding (helpers/faults.ts).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/worker/index.ts";
import { databases, placeNewProject, summarizeDatabases } from "../../src/worker/databases.ts";
import { tablesWithProjectRows } from "../../src/worker/db/projects.ts";
import type { Env } from "../../src/worker/env.ts";
import { createDestination, createRule, runCron } from "./alerts/helpers.ts";
import { capturingQueue, failingD1 } from "./helpers/faults.ts";
import { agreementPayload, callPayload, postIngest, startupPayload } from "./helpers/ingest.ts";
import { pageHtml } from "./helpers/pages.ts";
import { adminHeaders, createProject, type TestProject } from "./helpers/projects.ts";
import { createMessageBatch, getQueueResult } from "cloudflare:test";
import { ROLLUP_QUEUE_NAME } from "../../src/worker/queues/rollup-jobs.ts";
import { INGEST_QUEUE_NAME, messagesOf } from "../../src/worker/queues/ingest-writes.ts";
import { batchTuples } from "../../src/worker/db/raw-writes.ts";
import { parseBatch } from "../../src/shared/index.ts";

const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function admin(path: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(`http://worker/v1/admin${path}`, { ...init, headers: adminHeaders() });
}

/** The directory's own tables (first database): the project, its keys, its database, its sessions. */
const DIRECTORY_TABLES = ["projects", "api_keys", "project_databases", "dashboard_sessions"];

/** Rows of the project in each database, over every table with a project_id (`data`: the directory's tables left out). */
async function rowsOf(projectId: string, which: "all" | "data" = "data"): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const d of databases(env)) {
    let n = 0;
    for (const table of await tablesWithProjectRows(d.db)) {
      if (which === "data" && DIRECTORY_TABLES.includes(table)) continue;
      const row = await d.db.prepare(`SELECT COUNT(*) AS n FROM "${table}" WHERE project_id = ?1`).bind(projectId).first<{ n: number }>();
      n += row?.n ?? 0;
    }
    out[d.name] = n;
  }
  return out;
}

/** A mixed workload: startups, agreements and calls of several tools, sessions and outcomes. */
function workload(t: number): Record<string, unknown>[] {
  const outcomes = ["ok", "ok", "tool_error", "ok", "crashed", "bad_args", "ok"];
  return [
    startupPayload({ session_id: "s_aaaaaaaaaaaa" }),
    startupPayload({ session_id: "s_bbbbbbbbbbbb", client_name: "cursor" }),
    agreementPayload({ session_id: "s_aaaaaaaaaaaa", checked_at: iso(t - 20 * MINUTE) }),
    agreementPayload({ session_id: "s_bbbbbbbbbbbb", agreed: false, checked_at: iso(t - 19 * MINUTE) }),
    ...Array.from({ length: 28 }, (_, i) =>
      callPayload({
        session_id: i % 2 ? "s_aaaaaaaaaaaa" : "s_bbbbbbbbbbbb",
        client_name: i % 2 ? "claude-ai" : "cursor",
        tool_name: ["search_orders", "get_order", "delete_order"][i % 3],
        started_at: iso(t - 30 * MINUTE + i * 20_000),
        duration_ms: 10 + i,
        outcome: outcomes[i % outcomes.length],
        args_hash: ((i % 4).toString(16) + "00000000000").slice(0, 12),
        response_bytes: 100 * i,
        is_empty: i % 5 === 0 && outcomes[i % outcomes.length] === "ok",
      }),
    ),
  ];
}

/** The read API's answers over a project, `as_of` aside. */
async function answers(p: TestProject, t: number): Promise<Record<string, unknown>> {
  const from = iso(t - 86_400_000).slice(0, 10);
  const to = iso(t).slice(0, 10);
  const out: Record<string, unknown> = {};
  for (const path of ["tools", "clients", "pairs", "sessions", "timeseries", "descriptions", "agreement", "insights", "schema-regressions", "alerts"]) {
    const range = path === "descriptions" || path === "schema-regressions" || path === "alerts" ? "" : `?from=${from}&to=${to}`;
    const res = await exports.default.fetch(`http://worker/v1/metrics/${path}${range}`, { headers: { authorization: `Bearer ${p.read_key}` } });
    expect(res.status, path).toBe(200);
    const body = await res.json<Record<string, unknown>>();
    delete body.as_of;
    out[path] = body;
  }
  return out;
}

describe("the databases of a deployment", () => {
  it("are DB first, then every DB_<suffix> D1 binding by name; other bindings are not databases", () => {
    expect(databases(env).map((d) => d.name)).toEqual(["DB", "DB_2"]);
    const fake = { ...env, DB_10: env.DB_2, DB_3: env.DB_2, DB_X: "not a database", DBX: env.DB_2, CALLS_AE: env.CALLS_AE } as unknown as Env;
    expect(databases(fake).map((d) => d.name)).toEqual(["DB", "DB_2", "DB_3", "DB_10"]);
  });

  it("places a new project on the database with the fewest stored bytes, the first on a tie", () => {
    expect(placeNewProject([{ name: "DB", projects: 0, bytes: 10 }, { name: "DB_2", projects: 5, bytes: 9 }])).toBe("DB_2");
    expect(placeNewProject([{ name: "DB", projects: 9, bytes: 10 }, { name: "DB_2", projects: 0, bytes: 10 }])).toBe("DB");
    expect(placeNewProject([{ name: "DB", projects: 0, bytes: 8 }, { name: "DB_2", projects: 0, bytes: 9 }, { name: "DB_3", projects: 0, bytes: 7 }])).toBe("DB_3");
  });

  it("POST /v1/admin/projects without a database uses placement, measured by D1's own size", async () => {
    // A database that reports itself 1 GB larger than it is: the other one gets the project.
    const larger = (inner: D1Database): D1Database =>
      new Proxy(inner, {
        get(target, prop) {
          if (prop === "prepare") {
            return (sql: string) => {
              const stmt = target.prepare(sql);
              return new Proxy(stmt, {
                get(s, p) {
                  if (p === "run") return async () => { const r = await s.run(); return { ...r, meta: { ...r.meta, size_after: r.meta.size_after + 1e9 } }; };
                  const v = Reflect.get(s, p, s);
                  return typeof v === "function" ? v.bind(s) : v;
                },
              });
            };
          }
          const v = Reflect.get(target, prop, target);
          return typeof v === "function" ? v.bind(target) : v;
        },
      });
    const create = async (bindings: Env) => {
      const ctx = createExecutionContext();
      const res = await worker.fetch!(new Request("http://worker/v1/admin/projects", { method: "POST", headers: adminHeaders(), body: JSON.stringify({ name: "placed" }) }) as never, bindings, ctx);
      await waitOnExecutionContext(ctx);
      expect(res.status).toBe(201);
      return (await res.json<{ database: string }>()).database;
    };
    expect(await create({ ...env, DB: larger(env.DB) })).toBe("DB_2");
    expect(await create({ ...env, DB_2: larger(env.DB_2!) })).toBe("DB");
    // Unfaked, the answer is what the summary says.
    const expected = placeNewProject(await summarizeDatabases(env));
    expect(await create(env)).toBe(expected);
  });

  it("creates a project in the database named; an unknown name is a 400 that never echoes it", async () => {
    const p = await createProject("second", "DB_2");
    expect(p.database).toBe("DB_2");
    const dir = await env.DB.prepare("SELECT database_name FROM project_databases WHERE project_id = ?1").bind(p.project_id).first<{ database_name: string }>();
    expect(dir?.database_name).toBe("DB_2");
    // The project's row in its database (its rows' writes check it); keys only in the directory.
    expect(await env.DB_2!.prepare("SELECT name FROM projects WHERE project_id = ?1").bind(p.project_id).first()).toEqual({ name: "second" });
    expect((await env.DB_2!.prepare("SELECT COUNT(*) AS n FROM api_keys").first<{ n: number }>())?.n).toBe(0);

    for (const database of ["DB_3", "db_2", "x".repeat(64)]) {
      const res = await admin("/projects", { method: "POST", body: JSON.stringify({ name: "nowhere", database }) });
      expect(res.status).toBe(400);
      const body = await res.json<{ error: string; code: string }>();
      expect(body).toEqual({ error: "database must be one of: DB, DB_2", code: "BAD_REQUEST", request_id: res.headers.get("x-request-id") });
    }
    // Over the name's limit, and empty: the body validator's 400.
    for (const database of ["x".repeat(65), ""]) {
      const res = await admin("/projects", { method: "POST", body: JSON.stringify({ name: "nowhere", database }) });
      expect(res.status).toBe(400);
      expect(await res.text()).not.toContain("xxxx");
    }
  });

  it("a creation the directory cannot commit leaves no row of the project in its database", async () => {
    const directory = failingD1(env.DB);
    directory.failNextBatches = 1;
    const before = (await env.DB_2!.prepare("SELECT COUNT(*) AS n FROM projects").first<{ n: number }>())!.n;
    const ctx = createExecutionContext();
    const res = await worker.fetch!(new Request("http://worker/v1/admin/projects", { method: "POST", headers: adminHeaders(), body: JSON.stringify({ name: "never", database: "DB_2" }) }) as never, { ...env, DB: directory.db }, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(500);
    expect(directory.batches).toBe(1);
    expect((await env.DB_2!.prepare("SELECT COUNT(*) AS n FROM projects").first<{ n: number }>())!.n).toBe(before);
    expect(await env.DB.prepare("SELECT 1 FROM projects WHERE name = 'never'").first()).toBeNull();
  });

  it("GET /v1/admin/databases counts projects and bytes per database; project rows carry their database", async () => {
    const before = (await (await admin("/databases")).json<{ databases: { name: string; projects: number; bytes: number }[] }>()).databases;
    expect(before.map((d) => d.name)).toEqual(["DB", "DB_2"]);
    for (const d of before) expect(d.bytes).toBeGreaterThan(0);
    const a = await createProject("in first", "DB");
    const b = await createProject("in second", "DB_2");
    const after = (await (await admin("/databases")).json<{ databases: { name: string; projects: number; bytes: number }[] }>()).databases;
    expect(after.map((d) => d.projects)).toEqual([before[0]!.projects + 1, before[1]!.projects + 1]);
    const listed = (await (await admin("/projects")).json<{ projects: { project_id: string; database: string }[] }>()).projects;
    expect(listed.find((p) => p.project_id === a.project_id)?.database).toBe("DB");
    expect(listed.find((p) => p.project_id === b.project_id)?.database).toBe("DB_2");
  });

  it("a project without a directory row (made before the directory) lives in the first database", async () => {
    const p = await createProject("legacy", "DB");
    await env.DB.prepare("DELETE FROM project_databases WHERE project_id = ?1").bind(p.project_id).run();
    const t = Date.now();
    expect((await postIngest({ batch: workload(t) }, { key: p.ingest_key })).status).toBe(202);
    expect((await rowsOf(p.project_id)).DB_2).toBe(0);
    await runCron(t);
    const listed = (await (await admin("/projects")).json<{ projects: { project_id: string; database: string }[] }>()).projects;
    expect(listed.find((x) => x.project_id === p.project_id)?.database).toBe("DB");
    const tools = (await answers(p, t)).tools as { tools: { tool_name: string; calls: number }[] };
    expect(tools.tools.reduce((n, x) => n + x.calls, 0)).toBe(28);
  });
});

describe("a project in the second database", () => {
  it("gives the same answers as the same workload in the first: ingest, rollup, read API, /mcp, dashboard", async () => {
    const first = await createProject("twin", "DB");
    const second = await createProject("twin", "DB_2");
    const t = Date.now();
    for (const p of [first, second]) expect((await postIngest({ batch: workload(t) }, { key: p.ingest_key })).status).toBe(202);
    // Rows only where each project lives.
    expect((await rowsOf(second.project_id)).DB).toBe(0);
    expect((await rowsOf(second.project_id)).DB_2).toBeGreaterThan(0);
    expect((await rowsOf(first.project_id)).DB_2).toBe(0);
    await runCron(t);
    const a = await answers(first, t);
    const b = await answers(second, t);
    expect(b).toEqual(a);
    expect((a.tools as { tools: unknown[] }).tools.length).toBe(3);

    // /mcp: the same tool answer for either project.
    const mcp = async (p: TestProject) => {
      const res = await exports.default.fetch("http://worker/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${p.read_key}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_tools_health", arguments: {} } }),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      const json = text.startsWith("{") ? text : text.split("\n").find((l) => l.startsWith("data: "))!.slice(6);
      const body = JSON.parse(json) as { result: { structuredContent: Record<string, unknown> } };
      delete body.result.structuredContent.as_of;
      return body.result.structuredContent;
    };
    const mcpSecond = await mcp(second);
    expect(mcpSecond).toEqual(await mcp(first));
    expect(JSON.stringify(mcpSecond)).toContain("search_orders");

    // The dashboard, signed in with the second project's read key.
    const html = await pageHtml("/", second.read_key);
    expect(html).toContain("search_orders");
    expect(html).toContain("twin");
  });

  it("ingest routes by the key's Durable Object state: no directory read on the hot path, even while the directory fails", async () => {
    const p = await createProject("hot path", "DB_2");
    const t = Date.now();
    // The first use: the key's object reads the key, its project and its database from the directory.
    expect((await postIngest({ batch: [callPayload({ started_at: iso(t - 5 * MINUTE) })] }, { key: p.ingest_key })).status).toBe(202);
    const directory = failingD1(env.DB);
    directory.failing = true;
    const res = await postIngest({ batch: [callPayload({ started_at: iso(t - 4 * MINUTE), tool_name: "while_directory_down" })] }, { key: p.ingest_key, env: { ...env, DB: directory.db } });
    expect(res.status).toBe(202);
    expect(directory.statements + directory.batches).toBe(0);
    const stored = await env.DB_2!.prepare("SELECT COALESCE(SUM(call_count), 0) AS n FROM call_batches WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    expect(stored?.n).toBe(2);
  });

  it("alerts: its rules are evaluated by its database's job, and its notifications queued there", async () => {
    const p = await createProject("alerting", "DB_2");
    const hook = await createDestination(p.project_id, { kind: "webhook", url: "https://hooks.example.com/hook" });
    await createRule(p.project_id, { metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [hook.id] });
    const listed = await exports.default.fetch(`http://worker/v1/admin/projects/${p.project_id}/alert-rules`, { headers: adminHeaders() });
    expect((await listed.json<{ rules: unknown[] }>()).rules).toHaveLength(1);
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM alert_rules WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>())?.n).toBe(0);
    const t = Date.now();
    expect((await postIngest({ batch: workload(t) }, { key: p.ingest_key })).status).toBe(202);
    await runCron(t);
    const states = await env.DB_2!.prepare("SELECT state FROM alert_states WHERE project_id = ?1").bind(p.project_id).all<{ state: string }>();
    expect(states.results.map((s) => s.state)).toContain("firing");
    const outbox = await env.DB_2!.prepare("SELECT kind FROM alert_outbox WHERE project_id = ?1").bind(p.project_id).all<{ kind: string }>();
    expect(outbox.results.map((o) => o.kind)).toContain("firing");
    const report = await exports.default.fetch("http://worker/v1/metrics/alerts", { headers: { authorization: `Bearer ${p.read_key}` } });
    expect(JSON.stringify(await report.json())).toContain("firing");
  });

  it("the ingest queue's consumer writes a part to the project's database", async () => {
    const p = await createProject("queued", "DB_2");
    const t = Date.now();
    const parsed = parseBatch({ batch: workload(t) }, t);
    if (!parsed.ok) throw new Error("workload does not parse");
    const messages = messagesOf({ projectId: p.project_id, receivedAtMs: t, requestId: "req-second-db", batchId: "req-second-db", resendGuard: true, tuples: batchTuples(parsed.payloads) });
    const batch = createMessageBatch(INGEST_QUEUE_NAME, messages.map((body, i) => ({ id: `m${i}`, timestamp: new Date(t), attempts: 1, body })));
    await worker.queue!(batch as never, env);
    const rows = await rowsOf(p.project_id);
    expect(rows.DB).toBe(0);
    expect(rows.DB_2).toBeGreaterThan(0);
    expect((await env.DB_2!.prepare("SELECT COUNT(*) AS n FROM ingest_receipts WHERE batch_id LIKE 'req-second-db#%'").first<{ n: number }>())?.n).toBe(messages.length);
  });

  it("deletion leaves no row of it in any database, and its keys answer 401", async () => {
    const p = await createProject("deleted", "DB_2");
    const t = Date.now();
    await postIngest({ batch: workload(t) }, { key: p.ingest_key });
    await runCron(t);
    const before = await rowsOf(p.project_id, "all");
    expect(before.DB).toBe(4); // its row, its directory row, its two keys
    expect(before.DB_2).toBeGreaterThan(0);
    expect((await admin(`/projects/${p.project_id}`, { method: "DELETE" })).status).toBe(204);
    expect(await rowsOf(p.project_id, "all")).toEqual({ DB: 0, DB_2: 0 });
    expect((await postIngest({ batch: [callPayload()] }, { key: p.ingest_key })).status).toBe(401);
    expect((await admin(`/projects/${p.project_id}`, { method: "DELETE" })).status).toBe(404);
  });

  it("deletion that fails in its database leaves the project whole, and a second DELETE finishes it", async () => {
    const p = await createProject("half deleted", "DB_2");
    await postIngest({ batch: workload(Date.now()) }, { key: p.ingest_key });
    const broken = failingD1(env.DB_2!);
    broken.failing = true;
    const ctx = createExecutionContext();
    const res = await worker.fetch!(new Request(`http://worker/v1/admin/projects/${p.project_id}`, { method: "DELETE", headers: adminHeaders() }) as never, { ...env, DB_2: broken.db }, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(500);
    const rows = await rowsOf(p.project_id, "all");
    expect(rows.DB).toBe(4);
    expect(rows.DB_2).toBeGreaterThan(0);
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    expect((await admin(`/projects/${p.project_id}`, { method: "DELETE" })).status).toBe(204);
    expect(await rowsOf(p.project_id, "all")).toEqual({ DB: 0, DB_2: 0 });
  });
});

describe("rollups per database", () => {
  it("the cron sends one job per database, and a failing database never stops the other's rollup", async () => {
    const first = await createProject("healthy", "DB");
    const second = await createProject("on a failing database", "DB_2");
    const t = Date.now();
    for (const p of [first, second]) expect((await postIngest({ batch: workload(t) }, { key: p.ingest_key })).status).toBe(202);
    const broken = failingD1(env.DB_2!);
    broken.failing = true;
    const jobs = await runCron(t, "*/5 * * * *", { ...env, DB_2: broken.db });
    expect(jobs.map((j) => j.database)).toEqual(["DB", "DB_2"]);
    const rolled = async (db: D1Database, projectId: string) =>
      (await db.prepare("SELECT COALESCE(SUM(calls), 0) AS n FROM tool_hour_metrics WHERE project_id = ?1").bind(projectId).first<{ n: number }>())?.n;
    expect(await rolled(env.DB, first.project_id)).toBe(28);
    expect(await rolled(env.DB_2!, second.project_id)).toBe(0);
    // Health says which database is down, and still answers for the other.
    const health = await worker.fetch!(new Request("http://worker/v1/admin/health", { headers: adminHeaders() }) as never, { ...env, DB_2: broken.db }, createExecutionContext());
    const body = await health.json<{ database: string; databases: { name: string; state: string; rollup_as_of: string | null }[] }>();
    expect(body.database).toBe("unavailable");
    expect(body.databases.map((d) => [d.name, d.state])).toEqual([["DB", "ok"], ["DB_2", "unavailable"]]);
    expect(body.databases[0]!.rollup_as_of).toBe(iso(t));
    // Once it is well, its own job catches it up.
    await runCron(t + 5 * MINUTE);
    expect(await rolled(env.DB_2!, second.project_id)).toBe(28);
    const well = await (await admin("/health")).json<{ database: string; databases: { name: string; state: string; rollup_as_of: string }[] }>();
    expect(well.databases.map((d) => [d.name, d.state, d.rollup_as_of])).toEqual([["DB", "ok", iso(t + 5 * MINUTE)], ["DB_2", "ok", iso(t + 5 * MINUTE)]]);
  });

  it("when the rollup queue refuses, the cron runs every database's job itself, a failure not stopping the next", async () => {
    const p = await createProject("inline", "DB_2");
    const t = Date.now();
    await postIngest({ batch: workload(t) }, { key: p.ingest_key });
    const queue = capturingQueue();
    queue.refuse = true;
    const broken = failingD1(env.DB);
    broken.failing = true;
    const { createScheduledController } = await import("cloudflare:test");
    await worker.scheduled!(createScheduledController({ scheduledTime: t, cron: "*/5 * * * *" }), { ...env, DB: broken.db, ROLLUP_QUEUE: queue.queue });
    const n = await env.DB_2!.prepare("SELECT COALESCE(SUM(calls), 0) AS n FROM tool_hour_metrics WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    expect(n?.n).toBe(28);
  });

  it("a job message that does not parse, or names no database of the deployment, is acknowledged and runs nothing", async () => {
    const p = await createProject("untouched", "DB_2");
    const t = Date.now();
    await postIngest({ batch: workload(t) }, { key: p.ingest_key });
    const bodies = [
      { v: 1, kind: "rollup", database: "DB_9", scheduled_time_ms: t },
      { v: 2, kind: "rollup", database: "DB_2", scheduled_time_ms: t },
      { v: 1, kind: "vacuum", database: "DB_2", scheduled_time_ms: t },
      { v: 1, kind: "rollup", database: "DB_2", scheduled_time_ms: -1 },
      "not an object",
    ];
    const batch = createMessageBatch(ROLLUP_QUEUE_NAME, bodies.map((body, i) => ({ id: `bad-${i}`, timestamp: new Date(t), attempts: 1, body })));
    const ctx = createExecutionContext();
    await worker.queue!(batch as never, env);
    await waitOnExecutionContext(ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks.sort()).toEqual(bodies.map((_, i) => `bad-${i}`).sort());
    const n = await env.DB_2!.prepare("SELECT COALESCE(SUM(calls), 0) AS n FROM tool_hour_metrics WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    expect(n?.n).toBe(0);
    // The same job, well formed, folds the calls in.
    const good = createMessageBatch(ROLLUP_QUEUE_NAME, [{ id: "good", timestamp: new Date(t), attempts: 1, body: { v: 1, kind: "rollup", database: "DB_2", scheduled_time_ms: t } }]);
    await worker.queue!(good as never, env);
    const m = await env.DB_2!.prepare("SELECT COALESCE(SUM(calls), 0) AS n FROM tool_hour_metrics WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    expect(m?.n).toBe(28);
  });
});
