// The alert routes (SPEC §5): every rule field at, under and over its limits; destinations whose URL
// and secret are never answered again; admin token and project isolation.
import { createExecutionContext, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  MAX_ALERT_NAME_CHARS,
  MAX_CALLS_THRESHOLD,
  MAX_FOR_EVALUATIONS,
  MAX_MIN_CALLS,
  MAX_REPEAT_HOURS,
  MAX_RULE_DESTINATIONS,
  MAX_WINDOW_HOURS,
} from "../../../src/worker/alerts/rules.ts";
import { MAX_CLIENT_NAME_CHARS, MAX_DURATION_MS, MAX_TOOL_NAME_CHARS } from "../../../src/shared/limits.ts";
import worker from "../../../src/worker/index.ts";
import { createProject } from "../helpers/projects.ts";
import { admin, createDestination, createRule } from "./helpers.ts";

const base = { metric: "error_rate", op: ">", threshold: 0.1 };

async function ruleStatus(projectId: string, body: Record<string, unknown>): Promise<number> {
  return (await admin("POST", `${projectId}/alert-rules`, body)).status;
}

describe("alert rules: validation", () => {
  it("applies the defaults of SPEC §5", async () => {
    const p = await createProject();
    const rule = await createRule(p.project_id, base);
    expect(rule).toMatchObject({ window_hours: 24, min_calls: 20, tool: null, client: null, for_evaluations: 2, repeat_hours: 24, destinations: [], event: null, states: [] });
    expect(rule.id).toMatch(/^rul_[0-9A-Za-z]{16}$/);
  });

  // [field, at the limit (201), over it (400)], plus under-limit values where the lower bound matters.
  const cases: [string, unknown[], unknown[]][] = [
    ["window_hours", [1, MAX_WINDOW_HOURS], [0, MAX_WINDOW_HOURS + 1, 1.5, "24", null]],
    ["min_calls", [0, MAX_MIN_CALLS], [-1, MAX_MIN_CALLS + 1, 2.5, null]],
    ["for_evaluations", [1, MAX_FOR_EVALUATIONS], [0, MAX_FOR_EVALUATIONS + 1, 1.5]],
    ["repeat_hours", [1, MAX_REPEAT_HOURS], [0, MAX_REPEAT_HOURS + 1, 0.5]],
    ["threshold", [0, 1, 0.5], [-0.0001, 1.0001, "0.1", null, Number.NaN]],
    ["name", ["x", "é".repeat(MAX_ALERT_NAME_CHARS), "😀".repeat(MAX_ALERT_NAME_CHARS), null], ["", "   ", "x".repeat(MAX_ALERT_NAME_CHARS + 1), 5]],
    ["tool", [null, "*", "t".repeat(MAX_TOOL_NAME_CHARS), "😀".repeat(MAX_TOOL_NAME_CHARS)], ["", "t".repeat(MAX_TOOL_NAME_CHARS + 1), 1]],
    ["client", [null, "*", "c".repeat(MAX_CLIENT_NAME_CHARS)], ["", "c".repeat(MAX_CLIENT_NAME_CHARS + 1), []]],
    ["metric", ["first_call_rate", "crash_rate", "bad_args_rate", "empty_rate"], ["latency", "", null]],
    ["op", ["<", ">"], ["<=", "=", null]],
  ];
  for (const [field, ok, bad] of cases) {
    it(`${field}: accepts ${ok.length} values at and inside its limits, refuses ${bad.length} outside`, async () => {
      const p = await createProject();
      for (const value of ok) expect([field, value, await ruleStatus(p.project_id, { ...base, [field]: value })]).toEqual([field, value, 201]);
      for (const value of bad) expect([field, value, await ruleStatus(p.project_id, { ...base, [field]: value })]).toEqual([field, value, 400]);
    });
  }

  it("bounds thresholds per metric: p95_ms up to a day, calls up to 1e9, rates 0..1", async () => {
    const p = await createProject();
    expect(await ruleStatus(p.project_id, { metric: "p95_ms", op: ">", threshold: MAX_DURATION_MS })).toBe(201);
    expect(await ruleStatus(p.project_id, { metric: "p95_ms", op: ">", threshold: MAX_DURATION_MS + 1 })).toBe(400);
    expect(await ruleStatus(p.project_id, { metric: "calls", op: "<", threshold: MAX_CALLS_THRESHOLD })).toBe(201);
    expect(await ruleStatus(p.project_id, { metric: "calls", op: "<", threshold: MAX_CALLS_THRESHOLD + 1 })).toBe(400);
    expect(await ruleStatus(p.project_id, { metric: "error_rate", op: ">", threshold: 2 })).toBe(400);
  });

  it("needs exactly one of metric and event; an event takes no op or threshold and no client split", async () => {
    const p = await createProject();
    expect(await ruleStatus(p.project_id, { event: "dead_tool", tool: "*" })).toBe(201);
    expect(await ruleStatus(p.project_id, { event: "schema_regression", client: "claude-ai" })).toBe(201);
    expect(await ruleStatus(p.project_id, { event: "description_churn" })).toBe(201);
    expect(await ruleStatus(p.project_id, {})).toBe(400);
    expect(await ruleStatus(p.project_id, { ...base, event: "dead_tool" })).toBe(400);
    expect(await ruleStatus(p.project_id, { event: "dead_tool", op: ">", threshold: 1 })).toBe(400);
    expect(await ruleStatus(p.project_id, { event: "dead_tool", client: "*" })).toBe(400);
    expect(await ruleStatus(p.project_id, { event: "description_churn", client: "claude-ai" })).toBe(400);
    expect(await ruleStatus(p.project_id, { metric: "error_rate", op: ">" })).toBe(400);
    expect(await ruleStatus(p.project_id, { metric: "error_rate", threshold: 0.1 })).toBe(400);
    expect(await ruleStatus(p.project_id, { event: "tool_gone" })).toBe(400);
  });

  it("refuses unknown fields, non-JSON bodies, and never echoes the input", async () => {
    const p = await createProject();
    const res = await admin("POST", `${p.project_id}/alert-rules`, { ...base, secret_field_xyz: 1 });
    expect(res.status).toBe(400);
    expect(await res.text()).not.toContain("secret_field_xyz");
    expect((await admin("POST", `${p.project_id}/alert-rules`, "{not json")).status).toBe(400);
  });

  it("destinations: up to 10 of the project's own, no duplicates, none of another project's", async () => {
    const p = await createProject();
    const other = await createProject();
    const mine = [];
    for (let i = 0; i < MAX_RULE_DESTINATIONS + 1; i++) mine.push((await createDestination(p.project_id, { kind: "slack", url: `https://hooks.slack.com/services/T/B/${i}xxxxxxxxxxxxxxx` })).id);
    const theirs = await createDestination(other.project_id, { kind: "discord", url: "https://discord.com/api/webhooks/1/abc" });
    expect(await ruleStatus(p.project_id, { ...base, destinations: mine.slice(0, MAX_RULE_DESTINATIONS) })).toBe(201);
    expect(await ruleStatus(p.project_id, { ...base, destinations: mine })).toBe(400);
    expect(await ruleStatus(p.project_id, { ...base, destinations: [mine[0], mine[0]] })).toBe(400);
    expect(await ruleStatus(p.project_id, { ...base, destinations: [theirs.id] })).toBe(400);
    expect(await ruleStatus(p.project_id, { ...base, destinations: ["dst_0000000000000000"] })).toBe(400);
  });
});

describe("alert rules: update and delete", () => {
  it("PATCH checks the merged rule, keeps states for a rename, resets them for a new threshold; DELETE answers 204 then 404", async () => {
    const p = await createProject();
    const rule = await createRule(p.project_id, base);
    await env.DB.prepare(
      `INSERT INTO alert_states (rule_id, scope_key, project_id, scope_tool, scope_client, state, breaches, since_ms, value, last_evaluated_ms, last_notified_ms, revision, eval_id)
       VALUES (?1, '[null,null]', ?2, NULL, NULL, 'firing', 3, 0, 0.5, 0, 0, 3, 'x')`,
    ).bind(rule.id, p.project_id).run();
    const rename = await admin("PATCH", `${p.project_id}/alert-rules/${rule.id}`, { name: "errors" });
    expect(rename.status).toBe(200);
    expect(await rename.json()).toMatchObject({ name: "errors", threshold: 0.1, states: [{ state: "firing", scope: { tool: null, client: null } }] });
    expect((await admin("PATCH", `${p.project_id}/alert-rules/${rule.id}`, { threshold: 5 })).status).toBe(400);
    expect((await admin("PATCH", `${p.project_id}/alert-rules/${rule.id}`, { event: "dead_tool" })).status).toBe(400);
    const moved = await admin("PATCH", `${p.project_id}/alert-rules/${rule.id}`, { threshold: 0.2 });
    expect(await moved.json()).toMatchObject({ threshold: 0.2, states: [] });
    const toEvent = await admin("PATCH", `${p.project_id}/alert-rules/${rule.id}`, { metric: null, op: null, threshold: null, event: "dead_tool" });
    expect(toEvent.status).toBe(200);
    expect((await admin("DELETE", `${p.project_id}/alert-rules/${rule.id}`)).status).toBe(204);
    expect((await admin("DELETE", `${p.project_id}/alert-rules/${rule.id}`)).status).toBe(404);
    expect((await admin("GET", `${p.project_id}/alert-rules/${rule.id}`)).status).toBe(404);
  });
});

describe("alert destinations", () => {
  it("answers the webhook secret once; lists show a url_hint, never the URL or the secret", async () => {
    const p = await createProject();
    const url = "https://hooks.slack.com/services/T0001/B0002/SECRETTOKENabcd1234";
    const slack = await createDestination(p.project_id, { kind: "slack", url, name: "ops" });
    expect(slack).toEqual({ id: expect.stringMatching(/^dst_/), kind: "slack", name: "ops", url_hint: "https://hooks.slack.com/…1234" });
    const hook = await createDestination(p.project_id, { kind: "webhook", url: "https://example.com/mcpulse" });
    expect(hook.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/);
    const list = await admin("GET", `${p.project_id}/alert-destinations`);
    const text = await list.text();
    expect(text).not.toContain("SECRETTOKEN");
    expect(text).not.toContain(hook.secret!);
    expect(JSON.parse(text).destinations.map((d: { kind: string }) => d.kind)).toEqual(["slack", "webhook"]);
    // The read side shows rules and deliveries, never a URL.
    await createRule(p.project_id, { ...base, destinations: [slack.id] });
    const read = await exports.default.fetch("http://worker/v1/metrics/alerts", { headers: { authorization: `Bearer ${p.read_key}` } });
    expect(read.status).toBe(200);
    const readText = await read.text();
    expect(readText).not.toContain("SECRETTOKEN");
    expect(readText).not.toContain("hooks.slack.com");
  });

  it("https only; http://127.0.0.1, localhost and [::1] only when LOCAL_DEV is true", async () => {
    const p = await createProject();
    for (const url of ["http://example.com/h", "ftp://example.com/h", "not a url", "https://user:pw@example.com/h", "http://127.0.0.1:8080/h", "http://localhost/h", "http://[::1]/h", "http://10.0.0.1/h"]) {
      expect([url, (await admin("POST", `${p.project_id}/alert-destinations`, { kind: "webhook", url })).status]).toEqual([url, 400]);
    }
    const local = { ...env, LOCAL_DEV: "true" };
    for (const [url, status] of [["http://127.0.0.1:8080/h", 201], ["http://localhost/h", 201], ["http://[::1]:9/h", 201], ["https://example.com/h", 201], ["http://10.0.0.1/h", 400], ["http://127.0.0.2/h", 400], ["http://localhost.example.com/h", 400]] as const) {
      const req = new Request(`http://worker/v1/admin/projects/${p.project_id}/alert-destinations`, {
        method: "POST",
        headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ kind: "webhook", url }),
      });
      const res = await worker.fetch(req as never, local, createExecutionContext());
      expect([url, res.status]).toEqual([url, status]);
    }
  });

  it("refuses private, loopback, link-local and metadata hosts in any spelling, and says why without the URL", async () => {
    const p = await createProject();
    for (const url of ["https://169.254.169.254/latest/meta-data/", "https://10.0.0.1/h", "https://192.168.1.1/h", "https://172.16.0.1/h", "https://[fd00::1]/h", "https://0x7f000001/h", "https://2130706433/h", "https://0177.0.0.1/h", "https://127.1/h", "https://[::ffff:127.0.0.1]/h", "https://metadata.google.internal/h", "https://localhost./h", "https://100.64.0.1/h"]) {
      const res = await admin("POST", `${p.project_id}/alert-destinations`, { kind: "webhook", url });
      expect([url, res.status, await res.json()]).toEqual([url, 400, { error: "url must point at a public host", code: "BAD_REQUEST", request_id: res.headers.get("x-request-id") }]);
    }
    expect((await admin("GET", `${p.project_id}/alert-destinations`)).status).toBe(200);
    expect(((await (await admin("GET", `${p.project_id}/alert-destinations`)).json()) as { destinations: unknown[] }).destinations).toEqual([]);
    // The neighbours of those ranges are public.
    for (const url of ["https://172.32.0.1/h", "https://100.128.0.1/h", "https://hooks.example.com/h"]) {
      expect([url, (await admin("POST", `${p.project_id}/alert-destinations`, { kind: "webhook", url })).status]).toEqual([url, 201]);
    }
  });

  it("a destination a rule uses cannot be deleted (409); an unused one can (204)", async () => {
    const p = await createProject();
    const d = await createDestination(p.project_id, { kind: "discord", url: "https://discord.com/api/webhooks/1/abcdefghijklmnop" });
    const rule = await createRule(p.project_id, { ...base, destinations: [d.id] });
    expect((await admin("DELETE", `${p.project_id}/alert-destinations/${d.id}`)).status).toBe(409);
    await admin("DELETE", `${p.project_id}/alert-rules/${rule.id}`);
    expect((await admin("DELETE", `${p.project_id}/alert-destinations/${d.id}`)).status).toBe(204);
  });

  it("a test notification is queued (202) for the project's own destination only", async () => {
    const p = await createProject();
    const other = await createProject();
    const d = await createDestination(p.project_id, { kind: "webhook", url: "https://example.com/h" });
    expect((await admin("POST", `${other.project_id}/alert-destinations/${d.id}/test`)).status).toBe(404);
    const res = await admin("POST", `${p.project_id}/alert-destinations/${d.id}/test`);
    expect(res.status).toBe(202);
    const row = await env.DB.prepare("SELECT kind, status, rule_id FROM alert_outbox WHERE project_id = ?1").bind(p.project_id).first();
    expect(row).toEqual({ kind: "test", status: "pending", rule_id: null });
  });
});

describe("alert routes: security", () => {
  it("every admin alert route needs the admin token", async () => {
    const p = await createProject();
    for (const [method, path] of [["GET", "alert-rules"], ["POST", "alert-rules"], ["GET", "alert-destinations"], ["POST", "alert-destinations"], ["PATCH", "alert-rules/rul_x"], ["DELETE", "alert-rules/rul_x"], ["POST", "alert-destinations/dst_x/test"], ["DELETE", "alert-destinations/dst_x"]]) {
      for (const auth of [undefined, "Bearer wrong", `Bearer ${p.read_key}`]) {
        const res = await exports.default.fetch(`http://worker/v1/admin/projects/${p.project_id}/${path}`, {
          method,
          headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
          body: method === "GET" || method === "DELETE" ? undefined : JSON.stringify(base),
        });
        expect([method, path, auth, res.status]).toEqual([method, path, auth, 401]);
      }
    }
  });

  it("a read key of project B never sees project A's rules; another project's rule is 404 to the admin path of B", async () => {
    const a = await createProject();
    const b = await createProject();
    const rule = await createRule(a.project_id, { ...base, name: "a-only" });
    const read = await exports.default.fetch("http://worker/v1/metrics/alerts", { headers: { authorization: `Bearer ${b.read_key}` } });
    const body = await read.json<{ rules: unknown[]; deliveries: unknown[] }>();
    expect(body.rules).toEqual([]);
    expect(body.deliveries).toEqual([]);
    expect((await admin("GET", `${b.project_id}/alert-rules/${rule.id}`)).status).toBe(404);
    expect((await admin("PATCH", `${b.project_id}/alert-rules/${rule.id}`, { name: "x" })).status).toBe(404);
    expect((await admin("DELETE", `${b.project_id}/alert-rules/${rule.id}`)).status).toBe(404);
    expect((await exports.default.fetch("http://worker/v1/metrics/alerts", { headers: { authorization: `Bearer ${a.ingest_key}` } })).status).toBe(401);
  });

  it("deleting a project deletes its rules, destinations, states and outbox", async () => {
    const p = await createProject();
    const d = await createDestination(p.project_id, { kind: "webhook", url: "https://example.com/h" });
    await createRule(p.project_id, { ...base, destinations: [d.id] });
    await admin("POST", `${p.project_id}/alert-destinations/${d.id}/test`);
    expect((await admin("DELETE", p.project_id)).status).toBe(204);
    for (const table of ["alert_rules", "alert_destinations", "alert_states", "alert_outbox", "alert_delivery_attempts"]) {
      const row = await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE project_id = ?1`).bind(p.project_id).first<{ n: number }>();
      expect([table, row?.n]).toEqual([table, 0]);
    }
  });
});
