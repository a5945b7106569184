// The figure a rule compares (SPEC §5: "the same figure the read API shows for that window and
// scope"): the read API's own counter figures, never a second definition.
import { counterFigures, rate, type CounterGroup } from "../metrics/counters.ts";
import type { AlertMetric, AlertOp } from "./rules.ts";

export function metricValue(metric: AlertMetric, group: CounterGroup): number | null {
  const c = group.counters;
  switch (metric) {
    case "crash_rate":
      return rate(c.crashed, c.calls);
    case "bad_args_rate":
      return rate(c.bad_args, c.calls);
    case "calls":
      return c.calls;
  }
  const figures = counterFigures(group);
  switch (metric) {
    case "first_call_rate":
      // Not measurable (OTLP calls without arguments, SPEC §10): no value, so the rule is not
      // evaluated, as over too few calls — never an alert on a figure that describes nothing.
      return figures.not_measurable?.includes("first_call_rate") ? null : figures.first_call_rate;
    case "error_rate":
      return figures.error_rate;
    case "empty_rate":
      return figures.empty_rate;
    case "p95_ms":
      return figures.duration_ms.p95;
  }
}

export function breaches(op: AlertOp, value: number, threshold: number): boolean {
  return op === "<" ? value < threshold : value > threshold;
}

/**
 * A metric rule's verdict over one scope's window. `calls` is always evaluated (a traffic drop to 0
 * is what it is for); a rate or p95 over fewer than min_calls calls is not (SPEC §5).
 */
export function metricVerdict(
  rule: { metric: AlertMetric; op: AlertOp; threshold: number; min_calls: number },
  group: CounterGroup,
): { breaching: boolean | null; value: number | null } {
  const value = metricValue(rule.metric, group);
  if (rule.metric !== "calls" && group.counters.calls < rule.min_calls) return { breaching: null, value };
  if (value === null) return { breaching: null, value };
  return { breaching: breaches(rule.op, value, rule.threshold), value };
}
