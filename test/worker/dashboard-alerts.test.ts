// The dashboard's alerts page (SPEC §5): rules with their states and the delivery log, read only,
// for the key's own project; an insight's "alert me on this" opens it with a rule the admin API
// accepts as it stands.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CreateRuleBody } from "../../src/worker/alerts/rules.ts";
import { ruleForInsight } from "../../src/worker/alerts/suggest.ts";
import { INSIGHT_KINDS } from "../../src/worker/metrics/insights.ts";
import { SCOPES_SHOWN, notEvaluated, shownStates } from "../../src/worker/dashboard/alerts-page.tsx";
import type { AlertsReport } from "../../src/worker/alerts/report.ts";
import { createDestination, createRule, runCron } from "./alerts/helpers.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { pageHtml } from "./helpers/pages.ts";
import { adminHeaders, createProject, readSessionCookie } from "./helpers/projects.ts";

const page = async (path: string, key?: string) =>
  exports.default.fetch(`http://worker${path}`, { headers: key ? { cookie: await readSessionCookie(key) } : {}, redirect: "manual" });
const admin = (path: string, body: unknown) =>
  exports.default.fetch(`http://worker/v1/admin${path}`, { method: "POST", headers: adminHeaders(), body: JSON.stringify(body) });

async function projectWithRule(name: string) {
  const p = await createProject(name);
  const dest = await admin(`/projects/${p.project_id}/alert-destinations`, { kind: "webhook", url: "https://hooks.example/secret-path", name: "ops" });
  expect(dest.status).toBe(201);
  const { id } = await dest.json<{ id: string }>();
  const rule = await admin(`/projects/${p.project_id}/alert-rules`, { name: `rule of ${name}`, metric: "error_rate", op: ">", threshold: 0.2, tool: "*", destinations: [id] });
  expect(rule.status).toBe(201);
  return { p, ruleId: (await rule.json<{ id: string }>()).id };
}

describe("the alerts page", () => {
  it("shows the project's rules, read only, and never a destination's URL; another project's key sees none", async () => {
    const { p, ruleId } = await projectWithRule("alerting");
    const other = await createProject("other");
    const res = await page("/alerts", p.read_key);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`data-rule="${ruleId}"`);
    expect(html).toContain("error_rate &gt; 0.2");
    expect(html).toContain("not evaluated yet");
    expect(html).not.toContain("secret-path");
    // Read only: no form on it but sign-out.
    expect(html.match(/<form/g)?.length).toBe(1);
    const theirs = await (await page("/alerts", other.read_key)).text();
    expect(theirs).not.toContain(ruleId);
    expect(theirs).toContain("No alert rules yet");
    expect((await page("/alerts")).status).toBe(401);
  });

  it("names rules, destinations and tools in the delivery log, and says when a scope was not evaluated", async () => {
    const p = await createProject("named log");
    const slack = await createDestination(p.project_id, { kind: "slack", url: "https://hooks.slack.com/services/T0/B0/abcdefgh", name: "#ops-alerts" });
    const discord = await createDestination(p.project_id, { kind: "discord", url: "https://discord.com/api/webhooks/1/abc", name: "on-call" });
    const hook = await createDestination(p.project_id, { kind: "webhook", url: "https://hooks.example/x" });
    const rule = await createRule(p.project_id, {
      name: "tools failing", metric: "error_rate", op: ">", threshold: 0.1, tool: "*", min_calls: 5, for_evaluations: 1, destinations: [slack.id, discord.id, hook.id],
    });
    // No request leaves the worker: every attempt fails as an invalid target.
    await env.DB.prepare("UPDATE alert_destinations SET url = 'http://unreachable.invalid/' WHERE project_id = ?1").bind(p.project_id).run();
    const t0 = Date.now();
    const calls = (tool: string, outcomes: string[]) =>
      outcomes.map((outcome, i) =>
        callPayload({ tool_name: tool, started_at: new Date(t0 - 10 * 60_000 + i * 1000).toISOString(), outcome, session_id: `s_${tool}_${i}`, args_hash: "a".repeat(12) }),
      );
    // failing_tool: 5 calls, 3 errors → fires. rare_tool: 4 calls, all errors → under min_calls (5).
    const res = await postIngest({ batch: [...calls("failing_tool", ["ok", "ok", "tool_error", "crashed", "bad_args"]), ...calls("rare_tool", ["crashed", "crashed", "crashed", "crashed"])] }, { key: p.ingest_key });
    expect(res.status).toBe(202);
    await runCron(t0);

    const html = await pageHtml("/alerts", p.read_key);
    const rows = html.split("<tr").filter((r) => r.includes("data-delivery="));
    expect(rows).toHaveLength(3);
    for (const row of rows) {
      expect(row).toContain("tools failing");
      expect(row).toContain("failing_tool");
      expect(row).not.toContain(rule.id);
    }
    expect(rows.map((r) => r.match(/data-destination-cell[^>]*><b>(\w+)<\/b>(?: · <bdi class="name" title="([^"]*)")?/)?.slice(1)).sort()).toEqual([
      ["Discord", "on-call"],
      ["Slack", "#ops-alerts"],
      ["Webhook", undefined],
    ]);
    // The scope under min_calls: not evaluated, never "ok" beside a figure over the threshold.
    const rare = html.split("<tr").find((r) => r.includes('data-rule="') && r.includes('title="rare_tool"'))!;
    expect(rare).toContain("not evaluated: fewer than 5 calls");
    expect(rare).not.toMatch(/class="pill low">ok</);
    const failing = html.split("<tr").find((r) => r.includes('data-rule="') && r.includes('title="failing_tool"'))!;
    expect(failing).toContain('class="pill high">firing<');
    expect(failing).toContain(">0.6<");
  });

  it("writes out the rule an insight suggests; a bad suggestion is a 400 that echoes nothing", async () => {
    const p = await createProject("suggested");
    const html = await (await page(`/alerts?suggest=low_first_call_success&tool=${encodeURIComponent("search <orders>")}`, p.read_key)).text();
    expect(html).toContain("Alert me on this");
    expect(html).toContain("first_call_rate");
    expect(html).toContain("search &lt;orders&gt;");
    const bad = await page("/alerts?suggest=%3Cscript%3E", p.read_key);
    expect(bad.status).toBe(400);
    expect(await bad.text()).not.toContain("<script>");
    expect((await page("/alerts?nope=1", p.read_key)).status).toBe(400);
  });

  it("links every insight that has a matching alert metric to it", async () => {
    const suggested = INSIGHT_KINDS.filter((kind) => ruleForInsight(kind, "search_orders") !== null);
    expect(suggested).toEqual(["crashes", "high_error_rate", "low_first_call_success", "slow_calls", "empty_results", "dead_tool"]);
  });
});

describe("a rule's scopes on the page", () => {
  it("lists at most 20, firing then pending then ok then not evaluated, by tool", () => {
    type Rule = AlertsReport["rules"][number];
    const state = (tool: string, s: "ok" | "pending" | "firing", value: number | null) =>
      ({ scope: { tool, client: null }, state: s, since: null, value, last_evaluated: null }) as Rule["states"][number];
    const states = [
      ...Array.from({ length: 30 }, (_, i) => state(`quiet_${String(i).padStart(2, "0")}`, "ok", null)),
      ...Array.from({ length: 10 }, (_, i) => state(`fine_${i}`, "ok", 0.01)),
      state("b_firing", "firing", 0.5),
      state("a_firing", "firing", 0.4),
      state("pending_one", "pending", 0.2),
    ];
    const rule = { metric: "error_rate", states } as unknown as Rule;
    const shown = shownStates(rule);
    expect(shown).toHaveLength(SCOPES_SHOWN);
    expect(shown.slice(0, 4).map((s) => s.scope.tool)).toEqual(["a_firing", "b_firing", "pending_one", "fine_0"]);
    expect(shown.filter((s) => notEvaluated(rule, s))).toHaveLength(SCOPES_SHOWN - 13);
    expect(shownStates({ ...rule, states: states.slice(0, SCOPES_SHOWN - 1) })).toHaveLength(SCOPES_SHOWN - 1);
    // A calls rule and an event rule are evaluated whatever their figure.
    expect(notEvaluated({ ...rule, metric: "calls" }, states[0]!)).toBe(false);
    expect(notEvaluated({ ...rule, metric: null }, states[0]!)).toBe(false);
  });
});

describe("suggested rules", () => {
  it("are rules the admin API accepts as they stand, for a tool or the whole project", () => {
    for (const kind of INSIGHT_KINDS) {
      for (const tool of ["search_orders", null]) {
        const rule = ruleForInsight(kind, tool);
        if (rule === null) continue;
        const parsed = CreateRuleBody.safeParse({ ...rule, destinations: ["dst_0123456789abcdef"] });
        expect(parsed.success, `${kind} ${tool}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      }
    }
  });
});
