// Zod schemas of what the MCP tools return (SPEC §6): the read API's own answers, described for a
// model. Each tool's outputSchema is built from these, and the SDK checks every structuredContent
// against it, so a report that drifts from its schema fails the tool call instead of misleading.
import { z } from "zod";
import { COUNTERS, COUNTER_NAMES, NOT_MEASURABLE_WITHOUT_ARGS, RATES } from "../metrics/counters.ts";
import { SCHEMA_COST_FIGURES } from "../metrics/reports.ts";
import { DEFINITIONS } from "../metrics/definitions.ts";
import { DIMENSION_NAMES, EXPLORE_MAX_BY, EXPLORE_MAX_FILTER_VALUES, EXPLORE_MAX_LIMIT, GRAINS, MEASURES } from "../analytics/explore-query.ts";

/**
 * The `explore` tool's arguments: GET /v1/explore's parameters as one JSON object, from the same
 * lists (MEASURES, DIMENSION_NAMES, GRAINS). The tool hands them to the route's own schema
 * (exploreQuerySchema) as if from a URL, which checks the values and the range (SPEC §8).
 */
export const ExploreArguments = z.strictObject({
  measures: z.array(z.enum(MEASURES)).min(1).optional().describe(`what to compute per group (default ["calls"]); among: ${MEASURES.join(", ")}`),
  by: z.array(z.enum(DIMENSION_NAMES)).max(EXPLORE_MAX_BY).optional().describe(`up to ${EXPLORE_MAX_BY} dimensions to break down by (default none); among: ${DIMENSION_NAMES.join(", ")}`),
  filters: z
    .strictObject(Object.fromEntries(DIMENSION_NAMES.map((d) => [d, z.array(z.string()).min(1).max(EXPLORE_MAX_FILTER_VALUES).optional()])) as Record<(typeof DIMENSION_NAMES)[number], z.ZodOptional<z.ZodArray<z.ZodString>>>)
    .optional()
    .describe('per dimension, the values any of which matches; dimensions are ANDed, e.g. {"tool": ["search_orders"], "outcome": ["bad_args", "crashed"]}'),
  from: z.string().optional().describe("start: a UTC date YYYY-MM-DD (inclusive) or an ISO 8601 instant; default 7 days before `to`; before the last 90 days only D1's day rows answer"),
  to: z.string().optional().describe("end: a UTC date YYYY-MM-DD (inclusive) or an ISO 8601 instant (exclusive); default now"),
  grain: z.enum(GRAINS).optional().describe("none (default), hour (at most 31 days) or day: a row per time bucket too"),
  limit: z.number().int().min(1).max(EXPLORE_MAX_LIMIT).optional().describe(`groups kept, largest first (default 50, at most ${EXPLORE_MAX_LIMIT}); the rest summed as (other)`),
});


const rate = z.number().nullable();

export const Percentiles = z.object({
  p50: z.number().nullable().describe("median duration in ms (null without calls)"),
  p95: z.number().nullable(),
  p99: z.number().nullable(),
});

/**
 * The SPEC §2.1–2.3 counters of a tool, client or range, as /v1/metrics/* shows them: built from
 * metrics/counters.ts (COUNTERS and RATES, with their descriptions) in the order counterFigures()
 * writes them, so a counter added there is in every tool's output schema.
 */
function counterFiguresShape(): Record<string, z.ZodType> {
  const shape: Record<string, z.ZodType> = {};
  for (const name of COUNTER_NAMES) {
    if (COUNTERS[name].shown === "count") shape[name] = z.number().int().describe(COUNTERS[name].description);
  }
  for (const [name, r] of Object.entries(RATES)) shape[name] = rate.describe(r.description);
  shape.duration_ms = Percentiles.describe(DEFINITIONS.percentiles);
  for (const name of COUNTER_NAMES) {
    const shown = COUNTERS[name].shown;
    if (typeof shown === "object") {
      shape[shown.sumAndAverageAs] = z.object({ sum: z.number().int(), avg: z.number().nullable() }).describe(COUNTERS[name].description);
    }
  }
  shape.not_measurable = z.array(z.enum(NOT_MEASURABLE_WITHOUT_ARGS)).optional().describe(`present when these figures cannot be measured: ${DEFINITIONS.without_args_hash}`);
  return shape;
}
export const CounterFigures = z.object(counterFiguresShape());

export const ToolPolicy = z.object({ requires_authorization: z.boolean(), requires_verified_identity: z.boolean() }).nullable();

export const ToolRow = CounterFigures.extend({
  tool_name: z.string(),
  schema_bytes: z.number().int().nullable().describe("UTF-16 length of the tool's entry in tools/list; ~4 per token"),
  registered: z.boolean().describe("listed by the server's latest startup"),
  dead: z.boolean().describe("registered, never called in the range, and no policy exempting it"),
  policy: ToolPolicy,
});

export const ClientRow = CounterFigures.extend({ client_name: z.string() });

export const PairRow = z.object({ from_tool: z.string(), to_tool: z.string(), count: z.number().int() });

export const Insight = z.object({
  kind: z.string(),
  severity: z.enum(["high", "medium", "low"]),
  tool_name: z.string().nullable(),
  tools: z.array(z.string()),
  value: z.number(),
  threshold: z.number(),
  affected_calls: z.number().int(),
  calls: z.number().int(),
  message: z.string(),
});

const RegressionSide = z.object({
  from: z.string(),
  to: z.string(),
  calls: z.number().int(),
  bad_args: z.number().int(),
  bad_args_rate: rate,
  first_call_attempts: z.number().int(),
  first_call_ok: z.number().int(),
  first_call_rate: rate,
});

export const SchemaRegression = z.object({
  tool_name: z.string(),
  schema_hash: z.string(),
  previous_schema_hash: z.string(),
  changed_at: z.string(),
  before: RegressionSide,
  after: RegressionSide,
  bad_args_rate_change: rate,
  first_call_rate_change: rate,
  regressed: z.boolean(),
});

export const Sessions = z.object({
  sessions: z.number().int(),
  calls_per_session: z.number().nullable(),
  response_tokens_per_session: z.number().nullable(),
  schema_tokens_per_session: z.number().nullable(),
  cost_per_session_usd: z.number().nullable(),
  calls_without_session: z
    .number()
    .int()
    .describe("calls in the range sent without a session (the server could not tell conversations apart): each counts as a chain of its own, never a retry"),
  not_measurable: z
    .array(z.enum(SCHEMA_COST_FIGURES))
    .optional()
    .describe("present when no session of the range has a tool list (spans carry no schema sizes, SPEC §10): schema tokens and cost cannot be measured"),
});

/** What every ranged answer says about its range and freshness. */
export const RangeFields = {
  from: z.string().describe("first UTC day, inclusive"),
  to: z.string().describe("last UTC day, inclusive"),
  as_of: z.string().nullable().describe("when the counters were last brought up to date (null before the first rollup)"),
};

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
