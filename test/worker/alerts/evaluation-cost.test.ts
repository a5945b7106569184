// Evaluation cost and failure isolation (SPEC §5): the statements one evaluation makes do not grow
// with the number of rules, overlapping evaluations never queue twice, and a failing alert step
// never fails the rollup.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { evaluateAlerts } from "../../../src/worker/alerts/evaluate.ts";
import { runAlertStep } from "../../../src/worker/alerts/index.ts";
import { runDatabaseJob } from "../../../src/worker/queues/rollup-jobs.ts";
import worker from "../../../src/worker/index.ts";
import { createScheduledController } from "cloudflare:test";
import { callPayload, postIngest } from "../helpers/ingest.ts";
import { createProject } from "../helpers/projects.ts";
import { createRule, outboxOf } from "./helpers.ts";
import { runCron } from "../helpers/cron.ts";

const iso = (ms: number) => new Date(ms).toISOString();

async function clearRules() {
  await env.DB.batch([env.DB.prepare("DELETE FROM alert_rules"), env.DB.prepare("DELETE FROM alert_states"), env.DB.prepare("DELETE FROM alert_outbox")]);
}

describe("evaluation cost", () => {
  it("spends the same number of statements for 1 and 100 rules of every kind", async () => {
    await clearRules();
    const p = await createProject();
    const t = Date.now();
    await postIngest({ batch: Array.from({ length: 30 }, (_, i) => callPayload({ started_at: iso(t - 60_000 - i), tool_name: `tool_${i % 5}`, outcome: i % 3 ? "ok" : "crashed", args_hash: "aaaaaaaaaaaa", session_id: `s_${i}` })) }, { key: p.ingest_key });
    await runCron(t);
    const kinds = [
      { metric: "crash_rate", op: ">", threshold: 0.1, tool: "*" },
      { metric: "p95_ms", op: ">", threshold: 10, client: "*" },
      { metric: "calls", op: "<", threshold: 1000 },
      { event: "dead_tool", tool: "*" },
      { event: "schema_regression" },
      { event: "description_churn", tool: "*" },
    ];
    await createRule(p.project_id, kinds[0]!);
    const one = await evaluateAlerts(env.DB, t, { maxStatements: 50 });
    // 99 more over two projects (at most 100 rules per project).
    const second = await createProject();
    for (let i = 1; i < 100; i++) await createRule(i < 60 ? p.project_id : second.project_id, kinds[i % kinds.length]!);
    const many = await evaluateAlerts(env.DB, t + 300_000, { maxStatements: 50 });
    expect(many.rules).toBe(100);
    expect(one.statements).toBe(10);
    // The schema-regression read is spent only when a tool has changed its schema (none here).
    expect(many.statements).toBe(one.statements);
    expect(many.scopes).toBeGreaterThan(one.scopes);
  }, 60_000); // 100 rules created one request each: seconds on a loaded machine

  it("stops before the budget: fewer statements than an evaluation needs skip it", async () => {
    const r = await evaluateAlerts(env.DB, Date.now(), { maxStatements: 5 });
    expect(r).toMatchObject({ statements: 0, skipped: "budget" });
  });

  it("two evaluations from the same reads queue each notification once", async () => {
    await clearRules();
    const p = await createProject();
    await createRule(p.project_id, { metric: "calls", op: "<", threshold: 5, for_evaluations: 1, destinations: [] });
    // Destinations are needed for outbox rows: add one directly.
    await env.DB.prepare("INSERT INTO alert_destinations VALUES ('dst_AAAAAAAAAAAAAAAA', ?1, 'webhook', NULL, 'https://hooks.example.com/', 'x', 's', 0)").bind(p.project_id).run();
    await env.DB.prepare("UPDATE alert_rules SET destinations_json = '[\"dst_AAAAAAAAAAAAAAAA\"]' WHERE project_id = ?1").bind(p.project_id).run();
    const t = Date.now();
    // Both read the empty state before either writes (D1 serialises each batch, not the pair).
    const [a, b] = await Promise.all([
      evaluateAlerts(env.DB, t, { maxStatements: 50, evalId: "a" }),
      evaluateAlerts(env.DB, t, { maxStatements: 50, evalId: "b" }),
    ]);
    // When they did overlap, both tried to queue; either way one row landed.
    expect(a.notifications + b.notifications).toBeGreaterThanOrEqual(1);
    const outbox = await outboxOf(p.project_id);
    expect(outbox.map((o) => o.kind)).toEqual(["firing"]);
  });
});

describe("failure isolation", () => {
  it("a failing alert step is reported, never thrown, and the rollup's work stays", async () => {
    const p = await createProject();
    const t = Date.now();
    await postIngest({ batch: [callPayload({ started_at: iso(t - 60_000) })] }, { key: p.ingest_key });
    await createRule(p.project_id, { metric: "calls", op: "<", threshold: 5 });
    const broken = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare") return (sql: string) => {
          if (sql.includes("alert_")) throw new Error("alert tables unavailable: https://secret.example/hook");
          return target.prepare(sql);
        };
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const brokenEnv = { ...env, DB: broken as D1Database };
    await runDatabaseJob(brokenEnv, { kind: "rollup", database: "DB", scheduledTimeMs: t });
    const rolled = await env.DB.prepare("SELECT SUM(calls) AS n FROM tool_hour_metrics WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    expect(rolled?.n).toBe(1);
    const report = await runAlertStep(brokenEnv, brokenEnv.DB, t, { queries: 2, caughtUp: true });
    expect(report.error).toBe("Error");
    expect(JSON.stringify(report)).not.toContain("secret.example");
  });

  it("does not evaluate when the rollup left work for the next run (incomplete counters)", async () => {
    const report = await runAlertStep(env, env.DB, Date.now(), { queries: 48, caughtUp: false });
    expect(report.evaluation).toBeNull();
    // 2 statements left of 50: delivery (3) waits too.
    expect(report.delivery).toMatchObject({ skipped: "budget" });
  });
});
