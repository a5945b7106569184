// The read API's answers (SPEC §3) as Zod schemas, declared once for the routes, the OpenAPI document,
// the MCP output schemas and the reports' types, so they cannot drift apart.
import { z } from "zod";
import { CounterFigures } from "./counters.ts";
import { GRAINS } from "./query.ts";

/** A rate: null when its denominator is 0, else 4 decimals (SPEC §3). */
const rate = z.number().nullable();

export const AsOf = z.string().nullable().describe("when the counters were last brought up to date (null before the first rollup)");

/** What every ranged answer says about its range and freshness. */
export const RangeFields = {
  from: z.string().describe("first UTC day, inclusive"),
  to: z.string().describe("last UTC day, inclusive"),
  as_of: AsOf,
};

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

export const ToolPolicy = z
  .object({ requires_authorization: z.boolean(), requires_verified_identity: z.boolean() })
  .nullable()
  .describe("the tool's policy; null when it requires neither (both flags false)");
export type ToolPolicy = z.infer<typeof ToolPolicy>;

export const ToolRow = z.object({
  tool_name: z.string(),
  ...CounterFigures.shape,
  schema_bytes: z.number().int().nullable().describe("UTF-16 length of the tool's entry in tools/list; ~4 per token (null when not registered)"),
  registered: z.boolean().describe("listed by the server's latest startup"),
  dead: z.boolean().describe("registered, never called in the range and filters, and no policy exempting it"),
  policy: ToolPolicy,
});
export type ToolRow = z.infer<typeof ToolRow>;

export const ClientRow = z.object({ client_name: z.string(), ...CounterFigures.shape });
export type ClientRow = z.infer<typeof ClientRow>;

export const TimeseriesBucket = z.object({ start: z.string().describe("the bucket's first instant (ISO 8601, UTC)"), ...CounterFigures.shape });
export type TimeseriesBucket = z.infer<typeof TimeseriesBucket>;

export const PairRow = z.object({
  from_tool: z.string(),
  to_tool: z.string(),
  count: z.number().int().describe("times to_tool was the next call after from_tool in a session"),
});
export type PairRow = z.infer<typeof PairRow>;

/** Severity levels, most urgent first; see docs/read-api.md "Insights" for when each applies. */
export const SEVERITIES = ["high", "medium", "low"] as const;
export type Severity = (typeof SEVERITIES)[number];

export const INSIGHT_KINDS = [
  "crashes",
  "high_error_rate",
  "low_first_call_success",
  "slow_calls",
  "empty_results",
  "large_responses",
  "dead_tool",
  "converged_descriptions",
] as const;
export type InsightKind = (typeof INSIGHT_KINDS)[number];

export const Insight = z.object({
  kind: z.enum(INSIGHT_KINDS),
  severity: z.enum(SEVERITIES),
  tool_name: z.string().nullable().describe("the tool it is about (null for converged descriptions, which name `tools`)"),
  tools: z.array(z.string()),
  value: z.number().describe("the measured figure the threshold applies to (a rate, bytes, or tokens per session)"),
  threshold: z.number(),
  affected_calls: z.number().int().describe("calls the problem touched in the range (failed, empty, slow or large calls); 0 for dead and converged"),
  calls: z.number().int(),
  message: z.string(),
});
export type Insight = z.infer<typeof Insight>;

export const RegressionSide = z.object({
  from: z.string(),
  to: z.string(),
  calls: z.number().int(),
  bad_args: z.number().int(),
  bad_args_rate: rate,
  first_call_attempts: z.number().int(),
  first_call_ok: z.number().int(),
  first_call_rate: rate,
});
export type RegressionSide = z.infer<typeof RegressionSide>;

export const SchemaRegression = z.object({
  tool_name: z.string(),
  schema_hash: z.string(),
  previous_schema_hash: z.string(),
  changed_at: z.string().describe("when the current schema took over (ISO 8601)"),
  before: RegressionSide.describe("the window of hour rows before the hour of the change"),
  after: RegressionSide.describe("the window of hour rows after the hour of the change"),
  bad_args_rate_change: rate,
  first_call_rate_change: rate,
  regressed: z.boolean().describe("both sides have enough calls and bad_args rose or first-call success fell by at least 0.05"),
});
export type SchemaRegression = z.infer<typeof SchemaRegression>;

export const ChurnEntry = z.object({
  tool_name: z.string(),
  schema_hash: z.string(),
  registered: z.boolean(),
  description_versions: z.number().int(),
  descriptions: z.array(
    z.object({ description_hash: z.string(), first_seen: z.string(), last_seen: z.string(), startups: z.number().int() }),
  ),
});
export type ChurnEntry = z.infer<typeof ChurnEntry>;

export const ConvergenceEntry = z.object({ description_norm: z.string(), tools: z.array(z.string()) });
export type ConvergenceEntry = z.infer<typeof ConvergenceEntry>;

export const AgreementRow = z.object({
  field: z.string(),
  tool_a: z.string().describe("the smaller name by code point"),
  tool_b: z.string(),
  checks: z.number().int(),
  disagreements: z.number().int(),
  disagreement_rate: rate,
});
export type AgreementRow = z.infer<typeof AgreementRow>;

/** The figures a session without a startup cannot give: its schema's size and so its cost (SPEC §10). */
export const SCHEMA_COST_FIGURES = ["schema_tokens_per_session", "cost_per_session_usd"] as const;
export type SchemaCostFigure = (typeof SCHEMA_COST_FIGURES)[number];

// ---------------------------------------------------------------------------------------------
// Answers, one per route
// ---------------------------------------------------------------------------------------------

export const ToolsReport = z.object({ ...RangeFields, tools: z.array(ToolRow) });
export type ToolsReport = z.infer<typeof ToolsReport>;

export const ClientsReport = z.object({ ...RangeFields, clients: z.array(ClientRow) });
export type ClientsReport = z.infer<typeof ClientsReport>;

export const PairsReport = z.object({ as_of: AsOf, pairs: z.array(PairRow).describe("most frequent first") });
export type PairsReport = z.infer<typeof PairsReport>;

export const SessionsReport = z.object({
  as_of: AsOf,
  sessions: z.number().int().describe("sessions first seen in the range"),
  calls_per_session: z.number().nullable(),
  response_tokens_per_session: z.number().nullable(),
  schema_tokens_per_session: z.number().nullable(),
  cost_per_session_usd: z.number().nullable().describe("(response + schema tokens) × the price per million tokens ÷ 1,000,000, per session; 6 decimals"),
  calls_without_session: z
    .number()
    .int()
    .describe("calls in the range sent without a session (the server could not tell conversations apart): each counts as a chain of its own, never a retry"),
  not_measurable: z
    .array(z.enum(SCHEMA_COST_FIGURES))
    .optional()
    .describe("present when no session of the range has a tool list (spans carry no schema sizes, SPEC §10): schema tokens and cost cannot be measured"),
});
export type SessionsReport = z.infer<typeof SessionsReport>;

export const TimeseriesReport = z.object({
  from: RangeFields.from,
  to: RangeFields.to,
  grain: z.enum(GRAINS),
  as_of: AsOf,
  buckets: z.array(TimeseriesBucket).describe("every hour or day of the range, empty ones included"),
});
export type TimeseriesReport = z.infer<typeof TimeseriesReport>;

export const DescriptionsReport = z.object({
  as_of: AsOf,
  churn: z.array(ChurnEntry).describe("per tool and schema_hash registered with more than one description_hash"),
  convergence: z.array(ConvergenceEntry).describe("two or more registered tools with the same latest description_norm"),
});
export type DescriptionsReport = z.infer<typeof DescriptionsReport>;

export const AgreementReport = z.object({
  ...RangeFields,
  agreement: z.array(AgreementRow),
  silent: z
    .array(z.object({ field: z.string(), tools: z.array(z.string()) }))
    .describe("fields declared in a startup's agree_declared with no verdict in the range"),
});
export type AgreementReport = z.infer<typeof AgreementReport>;

export const InsightsReport = z.object({ ...RangeFields, insights: z.array(Insight).describe("worst first") });
export type InsightsReport = z.infer<typeof InsightsReport>;

export const SchemaRegressionsReport = z.object({
  as_of: AsOf,
  window_days: z.number().int().describe("days of hour rows compared on each side of a change"),
  regressions: z.array(SchemaRegression).describe("regressed tools first"),
});
export type SchemaRegressionsReport = z.infer<typeof SchemaRegressionsReport>;
