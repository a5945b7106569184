// What a read key sees of a project's alerts (SPEC §5, SPEC §6 `get_alerts`): rules, states and the
// delivery log, never a destination's URL or secret. One Zod schema for the route, OpenAPI and MCP.
import { z } from "zod";
import { listDeliveries, listProjectStates, listRules, type StateRow } from "../db/alerts.ts";
import { readAsOfMs } from "../db/metrics.ts";
import { AsOf } from "../metrics/answers.ts";
import type { AlertRule } from "./rules.ts";

/** GET /v1/metrics/alerts lists this many of the latest notifications (SPEC §5). */
export const DELIVERY_LOG_LIMIT = 100;

/** A rule as GET /v1/metrics/alerts shows it (SPEC §5), with its state per scope. */
export const AlertRuleAnswer = z.object({
  id: z.string(),
  name: z.string().nullable(),
  metric: z.string().nullable().describe("the figure compared, e.g. first_call_rate or p95_ms (null for an event rule)"),
  op: z.string().nullable(),
  threshold: z.number().nullable(),
  event: z.string().nullable().describe("dead_tool, schema_regression or description_churn (null for a metric rule)"),
  window_hours: z.number().int(),
  min_calls: z.number().int(),
  tool: z.string().nullable().describe('null = the whole project, "*" = each tool separately'),
  client: z.string().nullable(),
  for_evaluations: z.number().int(),
  repeat_hours: z.number().int(),
  destinations: z.array(z.string()),
  created_at: z.string().nullable(),
  updated_at: z.string().nullable(),
  states: z.array(
    z.object({
      scope: z.object({ tool: z.string().nullable(), client: z.string().nullable() }),
      state: z.enum(["ok", "pending", "firing"]),
      since: z.string().nullable(),
      value: z.number().nullable().describe("the figure at the last evaluation; null when the scope was not evaluated (fewer calls than min_calls in its window, so its state did not move)"),
      last_evaluated: z.string().nullable(),
    }),
  ),
});

/** A notification and its delivery attempts, as GET /v1/metrics/alerts shows it (SPEC §5). */
export const AlertDelivery = z.object({
  id: z.number().int(),
  rule_id: z.string().nullable().describe("null for a test notification"),
  rule_name: z.string().nullable(),
  destination_id: z.string().nullable(),
  destination_kind: z.string().nullable().describe("slack, discord or webhook (null once the destination is deleted)"),
  destination_name: z.string().nullable(),
  scope: z.object({ tool: z.string().nullable(), client: z.string().nullable() }).nullable().describe("the (tool, client) the notification is about; null for a test"),
  kind: z.string(),
  status: z.string(),
  created_at: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  attempts: z.array(
    z.object({ attempt: z.number().int(), at: z.string().nullable(), http_status: z.number().int().nullable(), latency_ms: z.number(), error_class: z.string().nullable() }),
  ),
});
export type AlertRuleAnswer = z.infer<typeof AlertRuleAnswer>;
export type AlertDelivery = z.infer<typeof AlertDelivery>;

/** GET /v1/metrics/alerts's answer; the MCP tool `get_alerts` answers its rules and deliveries too. */
export const AlertsReport = z.object({
  as_of: AsOf,
  rules: z.array(AlertRuleAnswer),
  deliveries: z.array(AlertDelivery).describe("the latest notifications, newest first"),
});
export type AlertsReport = z.infer<typeof AlertsReport>;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function ruleAnswer(rule: AlertRule, states: StateRow[]): AlertRuleAnswer {
  return {
    id: rule.id,
    name: rule.name,
    metric: rule.metric,
    op: rule.op,
    threshold: rule.threshold,
    event: rule.event,
    window_hours: rule.window_hours,
    min_calls: rule.min_calls,
    tool: rule.tool,
    client: rule.client,
    for_evaluations: rule.for_evaluations,
    repeat_hours: rule.repeat_hours,
    destinations: rule.destinations,
    created_at: iso(rule.created_at_ms),
    updated_at: iso(rule.updated_at_ms),
    states: states
      .filter((s) => s.rule_id === rule.id)
      .map((s) => ({
        scope: { tool: s.scope_tool, client: s.scope_client },
        state: s.state,
        since: iso(Number(s.since_ms)),
        value: s.value === null ? null : Number(s.value),
        last_evaluated: iso(Number(s.last_evaluated_ms)),
      })),
  };
}

export async function alertsReport(db: D1Database, projectId: string, deliveryLimit: number): Promise<AlertsReport> {
  const [rules, states, deliveries, asOf] = await Promise.all([
    listRules(db, projectId),
    listProjectStates(db, projectId),
    listDeliveries(db, projectId, deliveryLimit),
    readAsOfMs(db),
  ]);
  return {
    as_of: iso(asOf),
    rules: rules.map((r) => ruleAnswer(r, states)),
    deliveries: deliveries.map((d) => ({
      id: d.notification_id,
      rule_id: d.rule_id,
      rule_name: d.rule_name,
      destination_id: d.destination_id,
      destination_kind: d.destination_kind,
      destination_name: d.destination_name,
      scope: d.rule_id === null ? null : { tool: d.scope_tool, client: d.scope_client },
      kind: d.kind,
      status: d.status,
      created_at: iso(d.created_at_ms),
      next_attempt_at: iso(d.next_attempt_at_ms),
      delivered_at: iso(d.delivered_at_ms),
      attempts: (JSON.parse(d.attempts_json) as { attempt: number; at_ms: number; http_status: number | null; latency_ms: number; error_class: string | null }[]).map(
        (a) => ({ attempt: a.attempt, at: iso(a.at_ms), http_status: a.http_status, latency_ms: a.latency_ms, error_class: a.error_class }),
      ),
    })),
  };
}
