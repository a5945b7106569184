// The dashboard's alerts page (SPEC §5): rules with their states and the delivery log, read only,
// for the key's own project; an insight's "alert me on this" opens it with a rule the admin API
// accepts as it stands.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CreateRuleBody } from "../../src/worker/alerts/rules.ts";
import { ruleForInsight } from "../../src/worker/alerts/suggest.ts";
import { INSIGHT_KINDS } from "../../src/worker/metrics/insights.ts";
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
    expect(suggested).toEqual(["low_first_call_success", "slow_calls", "empty_results", "dead_tool"]);
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
