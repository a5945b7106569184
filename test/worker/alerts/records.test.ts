// Alert records are parsed with their Zod schemas where they are read (db/alerts.ts): the rest of
// the worker gets typed rules and states, and a row that breaks the schema (a hand-edited table: the
// metric column has no CHECK) is logged and left out instead of flowing on as a wrong type.
import { env } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { evaluateAlerts } from "../../../src/worker/alerts/evaluate.ts";
import { findRule, listProjectStates, listRules, rulesFromRows, statesFromRows } from "../../../src/worker/db/alerts.ts";
import { createProject } from "../helpers/projects.ts";
import { createRule } from "./helpers.ts";

async function insertRawRule(projectId: string, ruleId: string, metric: string, destinationsJson: string): Promise<void> {
  await env.DB.prepare(
    `INSERT INTO alert_rules (rule_id, project_id, name, metric, op, threshold, event, window_hours, min_calls, tool, client,
       for_evaluations, repeat_hours, destinations_json, created_at_ms, updated_at_ms)
     VALUES (?1, ?2, NULL, ?3, '>', 1, NULL, 24, 20, NULL, NULL, 2, 24, ?4, 1, 1)`,
  ).bind(ruleId, projectId, metric, destinationsJson).run();
}

describe("alert records at the db/ boundary", () => {
  it("reads typed rules and leaves out (and logs) a row that does not parse", async () => {
    const p = await createProject();
    const good = await createRule(p.project_id, { metric: "error_rate", op: ">", threshold: 0.5 });
    await insertRawRule(p.project_id, "rul_badmetric000001", "made_up_rate", "[]");
    await insertRawRule(p.project_id, "rul_badjson00000001", "calls", "not json");
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const rules = await listRules(env.DB, p.project_id);
      expect(rules.map((r) => r.id)).toEqual([good.id]);
      expect(rules[0]).toEqual(expect.objectContaining({ metric: "error_rate", op: ">", threshold: 0.5, destinations: [] }));
      expect(await findRule(env.DB, p.project_id, "rul_badmetric000001")).toBeNull();
      expect((await findRule(env.DB, p.project_id, good.id))?.metric).toBe("error_rate");
      const logged = log.mock.calls.map((c) => JSON.parse(String(c[0])) as Record<string, unknown>);
      // Read outside a request or a job: no id to tie the line to.
      expect(logged).toContainEqual({ event: "alert_record_invalid", level: "error", table: "alert_rules", id: "rul_badmetric000001" });
      expect(logged).toContainEqual({ event: "alert_record_invalid", level: "error", table: "alert_rules", id: "rul_badjson00000001" });
      // The evaluation of every project goes on past the bad rows.
      const report = await evaluateAlerts(env.DB, Date.now(), { maxStatements: 50 });
      expect(report.rules).toBeGreaterThanOrEqual(1);
    } finally {
      log.mockRestore();
      await env.DB.prepare("DELETE FROM alert_rules WHERE rule_id IN ('rul_badmetric000001', 'rul_badjson00000001')").run();
    }
    expect(await listProjectStates(env.DB, p.project_id)).toEqual(expect.any(Array));
  });

  it("parses each column's type: enums, numbers, nullable text, the destinations' JSON", () => {
    const row = {
      rule_id: "rul_x", project_id: "prj_x", name: null, metric: "calls", op: "<", threshold: 3, event: null, window_hours: 24,
      min_calls: 20, tool: "*", client: null, for_evaluations: 2, repeat_hours: 24, destinations_json: '["dst_a"]',
      created_at_ms: 1, updated_at_ms: 2,
    };
    const [rule] = rulesFromRows([row]);
    expect(rule).toEqual({ ...Object.fromEntries(Object.entries(row).filter(([k]) => k !== "rule_id" && k !== "destinations_json")), id: "rul_x", destinations: ["dst_a"] });
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      expect(rulesFromRows([{ ...row, op: "=" }])).toEqual([]);
      expect(rulesFromRows([{ ...row, window_hours: "24" }])).toEqual([]);
      expect(rulesFromRows([{ ...row, destinations_json: '[1]' }])).toEqual([]);
      const state = {
        rule_id: "rul_x", scope_key: "[null,null]", project_id: "prj_x", scope_tool: null, scope_client: null, state: "pending",
        breaches: 1, since_ms: 5, value: 0.7, last_evaluated_ms: 5, last_notified_ms: null, revision: 3, eval_id: "e",
      };
      expect(statesFromRows([state])).toEqual([state]);
      expect(statesFromRows([{ ...state, state: "resolved" }])).toEqual([]);
    } finally {
      log.mockRestore();
    }
  });
});
