// What a read key sees of a project's alerts (SPEC §5 `GET /v1/metrics/alerts`, SPEC §6 `get_alerts`):
// its rules with their states per scope, and the latest notifications with every delivery attempt.
// Never a destination's URL or secret.
import { listDeliveries, listProjectStates, listRules, type StateRow } from "../db/alerts.ts";
import { readAsOfMs } from "../db/metrics.ts";
import type { AlertRule } from "./rules.ts";

/** GET /v1/metrics/alerts lists this many of the latest notifications (SPEC §5). */
export const DELIVERY_LOG_LIMIT = 100;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function ruleAnswer(rule: AlertRule, states: StateRow[]) {
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

export async function alertsReport(db: D1Database, projectId: string, deliveryLimit: number) {
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

export type AlertsReport = Awaited<ReturnType<typeof alertsReport>>;
