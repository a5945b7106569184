// Zod schemas of what the MCP tools return (SPEC §6): the read API's own answers, described for a
// model. Each tool's outputSchema is built from these, and the SDK checks every structuredContent
// against it, so a report that drifts from its schema fails the tool call instead of misleading.
import { z } from "zod";

const rate = z.number().nullable();

export const Percentiles = z.object({
  p50: z.number().nullable().describe("median duration in ms (null without calls)"),
  p95: z.number().nullable(),
  p99: z.number().nullable(),
});

/** The SPEC §2.1–2.3 counters of a tool, client or range, as /v1/metrics/* shows them. */
export const CounterFigures = z.object({
  calls: z.number().int().describe("tool calls in the range"),
  ok: z.number().int(),
  empty: z.number().int().describe("ok calls whose result was empty (an answer with nothing in it; not an error)"),
  bad_args: z.number().int().describe("calls the tool never ran because the model's arguments failed validation"),
  tool_error: z.number().int().describe("the tool ran and answered isError: true"),
  crashed: z.number().int().describe("the tool threw or broke its own output schema"),
  retries: z.number().int().describe("calls that retried the previous call of the same tool in the same session and client within 30 s"),
  first_call_attempts: z.number().int().describe("first attempts: calls that were not themselves retries"),
  first_call_ok: z.number().int().describe("first attempts that succeeded without needing a retry"),
  calls_without_session: z.number().int().describe("calls sent without a session: each is a chain of its own, so retries could not be measured for them"),
  first_call_rate: rate.describe("first_call_ok / first_call_attempts, 4 decimals: how often the model gets the tool right the first time"),
  empty_rate: rate.describe("empty / calls"),
  error_rate: rate.describe("(bad_args + tool_error + crashed) / calls"),
  duration_ms: Percentiles,
  response_bytes: z.object({ sum: z.number().int(), avg: z.number().nullable() }),
});

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
      value: z.number().nullable().describe("the figure at the last evaluation"),
      last_evaluated: z.string().nullable(),
    }),
  ),
});

export const AlertDelivery = z.object({
  id: z.number().int(),
  rule_id: z.string().nullable(),
  destination_id: z.string().nullable(),
  kind: z.string(),
  status: z.string(),
  created_at: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  attempts: z.array(
    z.object({ attempt: z.number().int(), at: z.string().nullable(), http_status: z.number().int().nullable(), latency_ms: z.number(), error_class: z.string().nullable() }),
  ),
});
