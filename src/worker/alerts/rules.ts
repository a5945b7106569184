// The alert rule and destination models (SPEC §5): Zod schemas with every limit named beside them,
// and the types derived from them. Routes validate with these; evaluation trusts what they admit.
import { z } from "zod";
import { MAX_CLIENT_NAME_CHARS, MAX_DURATION_MS, MAX_TOOL_NAME_CHARS } from "../../shared/limits.ts";
import { ALERT_EVENTS, ALERT_METRICS, ALERT_OPS, DESTINATION_KINDS, type RuleRecord } from "../db/alerts.ts";

// The vocabulary is the tables' (db/alerts.ts parses every stored row with it); the request schemas
// below add the limits and defaults.
export { ALERT_EVENTS, ALERT_METRICS, ALERT_OPS, DESTINATION_KINDS };
export type AlertMetric = (typeof ALERT_METRICS)[number];
export type AlertEvent = (typeof ALERT_EVENTS)[number];
export type AlertOp = (typeof ALERT_OPS)[number];
export type DestinationKind = (typeof DESTINATION_KINDS)[number];

/** `window_hours`: the last 1 to 168 hours (a week), default 24 (SPEC §5). */
export const MIN_WINDOW_HOURS = 1;
export const MAX_WINDOW_HOURS = 168;
export const DEFAULT_WINDOW_HOURS = 24;
/** `min_calls`: default 20, like the insights; a rate over fewer calls is not evaluated. */
export const DEFAULT_MIN_CALLS = 20;
export const MAX_MIN_CALLS = 1_000_000;
/** `for_evaluations`: consecutive breaching evaluations before firing, default 2; at most a day of 5-minute runs. */
export const DEFAULT_FOR_EVALUATIONS = 2;
export const MAX_FOR_EVALUATIONS = 288;
/** `repeat_hours`: a reminder at most this often while firing, default 24, at most 30 days. */
export const DEFAULT_REPEAT_HOURS = 24;
export const MAX_REPEAT_HOURS = 720;
/** `name` of a rule or destination. */
export const MAX_ALERT_NAME_CHARS = 200;
/** Destinations one rule notifies. */
export const MAX_RULE_DESTINATIONS = 10;
/** Rules and destinations per project: keeps every evaluation's work bounded per project. */
export const MAX_RULES_PER_PROJECT = 100;
export const MAX_DESTINATIONS_PER_PROJECT = 20;
/** `threshold` of `calls` (a traffic drop or surge). */
export const MAX_CALLS_THRESHOLD = 1_000_000_000;
/** A destination URL; Slack's and Discord's are about 120 characters. */
export const MAX_DESTINATION_URL_CHARS = 2048;
/** The scope that splits a rule into one state per tool or per client (SPEC §5). */
export const EACH = "*";

/** Thresholds a metric can meaningfully take: rates are fractions, p95 a duration, calls a count. */
export const THRESHOLD_BOUNDS = {
  first_call_rate: { min: 0, max: 1 },
  error_rate: { min: 0, max: 1 },
  crash_rate: { min: 0, max: 1 },
  bad_args_rate: { min: 0, max: 1 },
  empty_rate: { min: 0, max: 1 },
  p95_ms: { min: 0, max: MAX_DURATION_MS },
  calls: { min: 0, max: MAX_CALLS_THRESHOLD },
} as const satisfies Record<AlertMetric, { min: number; max: number }>;

const name = z.string().trim().min(1).max(MAX_ALERT_NAME_CHARS);
const wholeBetween = (min: number, max: number) => z.number().int().min(min).max(max);
/** A tool scope: null (the whole project), "*" (each tool) or one name within the wire cap. */
const toolScope = z.string().min(1).max(MAX_TOOL_NAME_CHARS).nullable();
const clientScope = z.string().min(1).max(MAX_CLIENT_NAME_CHARS).nullable();
const destinationId = z.string().regex(/^dst_[0-9A-Za-z]{16}$/);

/** Every field of a rule as it is stored, defaults applied. */
const ruleFields = {
  name: name.nullable(),
  metric: z.enum(ALERT_METRICS).nullable(),
  op: z.enum(ALERT_OPS).nullable(),
  threshold: z.number().finite().nullable(),
  event: z.enum(ALERT_EVENTS).nullable(),
  window_hours: wholeBetween(MIN_WINDOW_HOURS, MAX_WINDOW_HOURS),
  min_calls: wholeBetween(0, MAX_MIN_CALLS),
  tool: toolScope,
  client: clientScope,
  for_evaluations: wholeBetween(1, MAX_FOR_EVALUATIONS),
  repeat_hours: wholeBetween(1, MAX_REPEAT_HOURS),
  destinations: z
    .array(destinationId)
    .max(MAX_RULE_DESTINATIONS)
    .refine((ids) => new Set(ids).size === ids.length, { message: "duplicate destination" }),
};

/** The rules between fields: a metric has op and threshold in its bounds; an event has neither. */
function checkRule(rule: z.infer<z.ZodObject<typeof ruleFields>>, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
  if ((rule.metric === null) === (rule.event === null)) issue("metric", "exactly one of metric and event");
  if (rule.metric !== null) {
    if (rule.op === null) issue("op", "a metric needs op");
    if (rule.threshold === null) issue("threshold", "a metric needs threshold");
    else {
      const bounds = THRESHOLD_BOUNDS[rule.metric];
      if (rule.threshold < bounds.min || rule.threshold > bounds.max) issue("threshold", "threshold out of range");
    }
  }
  if (rule.event !== null) {
    if (rule.op !== null || rule.threshold !== null) issue("op", "an event has no op or threshold");
    // Registered tools and their versions are per project, not per client: an event cannot split by client.
    if (rule.client === EACH) issue("client", "an event cannot split by client");
    // Churn is read from startups, which carry no per-call client split.
    if (rule.event === "description_churn" && rule.client !== null) issue("client", "description_churn has no client scope");
  }
}

export const AlertRuleSchema = z.strictObject(ruleFields).superRefine(checkRule);
export type AlertRuleFields = z.infer<typeof AlertRuleSchema>;

/** POST body: every field but the metric/event may be left out and takes its default. */
export const CreateRuleBody = z.strictObject({
  name: ruleFields.name.default(null),
  metric: ruleFields.metric.default(null),
  op: ruleFields.op.default(null),
  threshold: ruleFields.threshold.default(null),
  event: ruleFields.event.default(null),
  window_hours: ruleFields.window_hours.default(DEFAULT_WINDOW_HOURS),
  min_calls: ruleFields.min_calls.default(DEFAULT_MIN_CALLS),
  tool: ruleFields.tool.default(null),
  client: ruleFields.client.default(null),
  for_evaluations: ruleFields.for_evaluations.default(DEFAULT_FOR_EVALUATIONS),
  repeat_hours: ruleFields.repeat_hours.default(DEFAULT_REPEAT_HOURS),
  destinations: ruleFields.destinations.default([]),
}).superRefine(checkRule);

/** PATCH body: any subset of the fields; the merged rule is checked with AlertRuleSchema. */
export const UpdateRuleBody = z.strictObject(ruleFields).partial();

/** Fields whose change makes the old states meaningless: the states start again from ok. */
export const FIELDS_THAT_RESET_STATES = [
  "metric",
  "op",
  "threshold",
  "event",
  "window_hours",
  "min_calls",
  "tool",
  "client",
  "for_evaluations",
] as const satisfies readonly (keyof AlertRuleFields)[];

export const CreateDestinationBody = z.strictObject({
  kind: z.enum(DESTINATION_KINDS),
  url: z.string().max(MAX_DESTINATION_URL_CHARS),
  name: name.optional(),
});

/** A stored rule: its id and project beside its fields, as db/alerts.ts parses it from its row. */
export type AlertRule = RuleRecord;
