// The MCP tools over a project's metrics (SPEC §6). Each answers from the read API's own reports —
// the same functions /v1/metrics/* calls, with the same parameter rules — so a figure an agent reads
// here is the figure the API and the dashboard show. Outputs are bounded (top-N with `limit`).
import { z } from "zod";
import { AlertDelivery, AlertRuleAnswer, alertsReport } from "../alerts/report.ts";
import type { Env } from "../env.ts";
import { SMALL_SAMPLE_RULE, insightsReport } from "../metrics/insights.ts";
import { clientsQuery, insightsQuery, parseQuery, schemaRegressionsQuery, sessionsQuery, toolsQuery } from "../metrics/query.ts";
import { clientsReport, pairsReport, pricePerMillionTokens, sessionsReport, toolsReport, type ToolRow as ToolRowData } from "../metrics/reports.ts";
import { FIGURES_HELP } from "../metrics/definitions.ts";
import { schemaRegressionsReport } from "../metrics/schema-regressions.ts";
import { openReadScope, type ReadScope } from "../metrics/scope.ts";
import { MAX_CLIENT_NAME_CHARS, MAX_TOOL_NAME_CHARS } from "../../shared/limits.ts";
import { answerExplore, exploreAnswerSchema, exploreClock } from "../analytics/explore.ts";
import { exploreMessageOf, exploreQuerySchema } from "../analytics/explore-query.ts";
import { apiError } from "../errors.ts";
import { ClientRow, Insight, PairRow, RangeFields, SchemaRegression, SessionsReport, ToolRow } from "../metrics/answers.ts";
import { ExploreArguments } from "./schemas.ts";

/** Who is asking: the project named by the read key, and the worker's bindings. */
/** One tool call: the env (for its variables), the project and its database (resolved by the request), the clock. */
export type ToolContext = { env: Env; db: D1Database; projectId: string; nowMs: number };

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

const day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "a UTC date YYYY-MM-DD")
  .optional();
const from = day.describe("first UTC day, inclusive (YYYY-MM-DD; default: 6 days before `to`)");
const to = day.describe("last UTC day, inclusive (YYYY-MM-DD; default: today)");
const client = z.string().min(1).max(MAX_CLIENT_NAME_CHARS).optional().describe("only calls from this MCP client (its name as the client reports it)");
const toolName = z.string().min(1).max(MAX_TOOL_NAME_CHARS);
const limit = z.number().int().min(1).max(MAX_LIMIT).optional().describe(`at most this many rows (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`);
const truncation = {
  total: z.number().int().describe("rows before the limit was applied"),
  truncated: z.boolean().describe("true when rows were left out by `limit`"),
};

/**
 * Tool arguments through the read API's own query schema (metrics/query.ts), as if they had come
 * in a URL: the same defaults, caps and messages as /v1/metrics/* (a bad one is a 400 HTTPException,
 * which the server turns into a tool error).
 */
function asQuery<T extends z.ZodType>(schema: T, args: Record<string, string | undefined>): z.output<T> {
  const url = new URL("http://mcp/");
  for (const [name, value] of Object.entries(args)) if (value !== undefined) url.searchParams.set(name, value);
  return parseQuery(schema, url);
}

/** One read scope per tool call: its project, its clock, `as_of` read once. */
const scopeOf = (ctx: ToolContext): ReadScope => openReadScope(ctx.db, ctx.projectId, ctx.nowMs);

function top<T>(rows: T[], n: number | undefined): { rows: T[]; total: number; truncated: boolean } {
  const size = n ?? DEFAULT_LIMIT;
  return { rows: rows.slice(0, size), total: rows.length, truncated: rows.length > size };
}

/** Failed first attempts: first-call attempts that did not succeed at once. */
const failedFirstCalls = (t: ToolRowData) => t.first_call_attempts - t.first_call_ok;
const errors = (t: ToolRowData) => t.bad_args + t.tool_error + t.crashed;

/**
 * Worst first: most failed first attempts, then most errors, then dead tools, then most calls,
 * then by name — the order in which fixing a tool helps the most calls.
 */
export function worstFirst(a: ToolRowData, b: ToolRowData): number {
  return (
    failedFirstCalls(b) - failedFirstCalls(a) ||
    errors(b) - errors(a) ||
    Number(b.dead) - Number(a.dead) ||
    b.calls - a.calls ||
    (a.tool_name < b.tool_name ? -1 : a.tool_name > b.tool_name ? 1 : 0)
  );
}

export type McpToolDefinition = {
  name: string;
  title: string;
  description: string;
  inputSchema: z.ZodObject;
  outputSchema: z.ZodObject;
  run(ctx: ToolContext, args: never): Promise<Record<string, unknown>>;
};

function defineTool<I extends z.ZodObject, O extends z.ZodObject>(tool: {
  name: string;
  title: string;
  description: string;
  inputSchema: I;
  outputSchema: O;
  run(ctx: ToolContext, args: z.infer<I>): Promise<z.infer<O>>;
}): McpToolDefinition {
  return tool as unknown as McpToolDefinition;
}

export const MCP_TOOLS: McpToolDefinition[] = [
  defineTool({
    name: "list_tools_health",
    title: "Tool health, worst first",
    description:
      "Every tool of the MCP server with its call outcomes over a date range (default: the last 7 UTC days), " +
      "worst first: most failed chains (first_call_attempts − first_call_ok), then most errors, then dead tools. Start here to find which " +
      "tool to fix. " + FIGURES_HELP + " dead = registered but never called in the range.",
    inputSchema: z.object({ from, to, client, limit }),
    outputSchema: z.object({ ...RangeFields, ...truncation, tools: z.array(ToolRow) }),
    async run(ctx, args) {
      const { range, filters } = asQuery(toolsQuery, { from: args.from, to: args.to, client: args.client });
      const report = await toolsReport(scopeOf(ctx), range, filters);
      const { rows, total, truncated } = top([...report.tools].sort(worstFirst), args.limit);
      return { from: report.from, to: report.to, as_of: report.as_of, total, truncated, tools: rows };
    },
  }),
  defineTool({
    name: "get_tool",
    title: "One tool in detail",
    description:
      "One tool over a date range: its counters and latency percentiles, the same figures per MCP client " +
      "(which clients' models struggle with it), the tools called right before and after it in sessions, and " +
      "its latest schema change with bad_args rate and first-call success 7 days before and after. " + FIGURES_HELP,
    inputSchema: z.object({ name: toolName.describe("the tool's exact name"), from, to, limit }),
    outputSchema: z.object({
      ...RangeFields,
      tool: ToolRow.nullable().describe("null when the tool was never called nor registered"),
      clients: z.array(ClientRow),
      pairs: z.array(PairRow).describe("(from_tool → to_tool) pairs this tool is part of, most frequent first"),
      schema_change: SchemaRegression.nullable().describe("null when the tool has only ever had one schema"),
    }),
    async run(ctx, args) {
      const { range, filters } = asQuery(toolsQuery, { from: args.from, to: args.to, tool: args.name });
      const scope = scopeOf(ctx);
      const [tools, clients, pairs, regressions] = await Promise.all([
        toolsReport(scope, range, filters),
        clientsReport(scope, range, filters),
        pairsReport(scope, range, filters),
        schemaRegressionsReport(scope, filters),
      ]);
      return {
        from: tools.from,
        to: tools.to,
        as_of: tools.as_of,
        tool: tools.tools.find((t) => t.tool_name === args.name) ?? null,
        clients: top(clients.clients, args.limit).rows,
        pairs: top(pairs.pairs, args.limit).rows,
        schema_change: regressions.regressions.find((r) => r.tool_name === args.name) ?? null,
      };
    },
  }),
  defineTool({
    name: "get_insights",
    title: "What to fix first",
    description:
      "Ranked findings over a date range, worst first: tools that crash (crash rate over 1 %), tools whose calls " +
      "fail (error_rate over 10 %), tools models rarely get right on the first call (first_call_rate under 70 %), " +
      "slow tools, tools that often return nothing, oversized responses (tokens), dead tools, and tools whose " +
      "descriptions are too alike for a model to tell apart. Each has a message, the measured value, its " +
      "threshold and the calls it touched. Ranked by severity, then failed calls before other findings, then calls touched. " +
      SMALL_SAMPLE_RULE + " " + FIGURES_HELP,
    inputSchema: z.object({ from, to, client, tool: toolName.optional().describe("only findings about this tool"), limit }),
    outputSchema: z.object({ ...RangeFields, ...truncation, insights: z.array(Insight) }),
    async run(ctx, args) {
      const { range, filters } = asQuery(insightsQuery, { from: args.from, to: args.to, client: args.client, tool: args.tool });
      const report = await insightsReport(scopeOf(ctx), range, filters);
      const { rows, total, truncated } = top(report.insights, args.limit);
      return { from: report.from, to: report.to, as_of: report.as_of, total, truncated, insights: rows };
    },
  }),
  defineTool({
    name: "compare_ranges",
    title: "Compare two date ranges",
    description:
      "Per tool, the figures of range A beside range B and the change (B − A): calls, first_call_rate, " +
      "error_rate, empty_rate and p95 latency. Use it to see whether a change to a tool's description or " +
      "schema helped: A before the change, B after. Rows with the largest change in first-call success first.",
    inputSchema: z.object({
      a_from: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).describe("range A's first UTC day"),
      a_to: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).describe("range A's last UTC day"),
      b_from: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).describe("range B's first UTC day"),
      b_to: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).describe("range B's last UTC day"),
      client,
      limit,
    }),
    outputSchema: z.object({
      a: z.object({ from: z.string(), to: z.string() }),
      b: z.object({ from: z.string(), to: z.string() }),
      as_of: RangeFields.as_of,
      ...truncation,
      tools: z.array(
        z.object({
          tool_name: z.string(),
          calls: z.object({ a: z.number().int(), b: z.number().int(), change: z.number().int() }),
          first_call_rate: z.object({ a: z.number().nullable(), b: z.number().nullable(), change: z.number().nullable() }),
          error_rate: z.object({ a: z.number().nullable(), b: z.number().nullable(), change: z.number().nullable() }),
          empty_rate: z.object({ a: z.number().nullable(), b: z.number().nullable(), change: z.number().nullable() }),
          p95_ms: z.object({ a: z.number().nullable(), b: z.number().nullable(), change: z.number().nullable() }),
        }),
      ),
    }),
    async run(ctx, args) {
      const first = asQuery(toolsQuery, { from: args.a_from, to: args.a_to, client: args.client });
      const second = asQuery(toolsQuery, { from: args.b_from, to: args.b_to, client: args.client });
      const scope = scopeOf(ctx);
      const [a, b] = await Promise.all([toolsReport(scope, first.range, first.filters), toolsReport(scope, second.range, second.filters)]);
      const byName = (rows: ToolRowData[]) => new Map(rows.map((r) => [r.tool_name, r]));
      const aRows = byName(a.tools);
      const bRows = byName(b.tools);
      // Differences of figures that are already rounded to 4 decimals, rounded again so 0.1 − 0.3 reads −0.2.
      const diff = (x: number | null, y: number | null) => (x === null || y === null ? null : Math.round((y - x) * 10_000) / 10_000);
      const pair = (x: number | null, y: number | null) => ({ a: x, b: y, change: diff(x, y) });
      const names = [...new Set([...aRows.keys(), ...bRows.keys()])];
      const rows = names.map((name) => {
        const x = aRows.get(name);
        const y = bRows.get(name);
        return {
          tool_name: name,
          calls: { a: x?.calls ?? 0, b: y?.calls ?? 0, change: (y?.calls ?? 0) - (x?.calls ?? 0) },
          first_call_rate: pair(x?.first_call_rate ?? null, y?.first_call_rate ?? null),
          error_rate: pair(x?.error_rate ?? null, y?.error_rate ?? null),
          empty_rate: pair(x?.empty_rate ?? null, y?.empty_rate ?? null),
          p95_ms: pair(x?.duration_ms.p95 ?? null, y?.duration_ms.p95 ?? null),
        };
      });
      const magnitude = (r: (typeof rows)[number]) => Math.abs(r.first_call_rate.change ?? 0);
      rows.sort((r, s) => magnitude(s) - magnitude(r) || s.calls.b + s.calls.a - (r.calls.b + r.calls.a) || (r.tool_name < s.tool_name ? -1 : 1));
      const { rows: shown, total, truncated } = top(rows, args.limit);
      return { a: { from: a.from, to: a.to }, b: { from: b.from, to: b.to }, as_of: b.as_of, total, truncated, tools: shown };
    },
  }),
  defineTool({
    name: "get_clients",
    title: "Figures per MCP client",
    description:
      "The same counters per MCP client (Claude, Cursor, VS Code, …) over a date range, most calls first: " +
      "shows whether one client's model struggles where others do not. " + FIGURES_HELP,
    inputSchema: z.object({ from, to, tool: toolName.optional().describe("only calls of this tool"), limit }),
    outputSchema: z.object({ ...RangeFields, ...truncation, clients: z.array(ClientRow) }),
    async run(ctx, args) {
      const { range, filters } = asQuery(clientsQuery, { from: args.from, to: args.to, tool: args.tool });
      const report = await clientsReport(scopeOf(ctx), range, filters);
      const { rows, total, truncated } = top(report.clients, args.limit);
      return { from: report.from, to: report.to, as_of: report.as_of, total, truncated, clients: rows };
    },
  }),
  defineTool({
    name: "get_sessions",
    title: "Sessions and their token cost",
    description:
      "Sessions first seen in a date range: how many, calls per session, tokens per session spent on tool " +
      "results and on the tool list itself (schema_tokens_per_session: what the server's tools/list costs each " +
      "session), and the cost per session in USD at the configured price per million tokens.",
    inputSchema: z.object({ from, to, client }),
    outputSchema: z.object({ from: RangeFields.from, to: RangeFields.to, ...SessionsReport.shape }),
    async run(ctx, args) {
      const { range, filters } = asQuery(sessionsQuery, { from: args.from, to: args.to, client: args.client });
      const price = pricePerMillionTokens(ctx.env.PRICE_PER_MILLION_TOKENS_USD);
      const report = await sessionsReport(scopeOf(ctx), range, filters, price);
      return { from: range.from, to: range.to, ...report };
    },
  }),
  defineTool({
    name: "get_schema_regressions",
    title: "Did a schema change hurt?",
    description:
      "For each registered tool whose input schema changed: the bad_args rate and first-call success over the " +
      "7 days before and after the latest change, and whether it regressed (bad_args up or first-call success " +
      "down by 0.05 or more, with at least 20 calls on each side). Regressed tools first.",
    inputSchema: z.object({ client, tool: toolName.optional().describe("only this tool"), limit }),
    outputSchema: z.object({ as_of: RangeFields.as_of, window_days: z.number().int(), ...truncation, regressions: z.array(SchemaRegression) }),
    async run(ctx, args) {
      const { filters } = asQuery(schemaRegressionsQuery, { client: args.client, tool: args.tool });
      const report = await schemaRegressionsReport(scopeOf(ctx), filters);
      const sorted = [...report.regressions].sort((a, b) => Number(b.regressed) - Number(a.regressed));
      const { rows, total, truncated } = top(sorted, args.limit);
      return { as_of: report.as_of, window_days: report.window_days, total, truncated, regressions: rows };
    },
  }),
  defineTool({
    name: "get_alerts",
    title: "Alert rules and their states",
    description:
      "The project's alert rules (a figure such as first_call_rate or error_rate against a threshold over the " +
      "last N hours, or an event such as dead_tool or schema_regression), each with its state per scope: ok, " +
      "pending (breaching, not yet for enough consecutive evaluations) or firing, since when, and the figure " +
      "at the last evaluation (null: not evaluated, fewer calls than min_calls in the window); and the latest notifications " +
      "with the rule's name, the scope, the destination's kind and name, and every delivery attempt. Firing rules first.",
    inputSchema: z.object({ limit: limit.describe(`at most this many rules and this many notifications (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT})`) }),
    outputSchema: z.object({
      as_of: RangeFields.as_of,
      ...truncation,
      rules: z.array(AlertRuleAnswer),
      deliveries: z.array(AlertDelivery),
    }),
    async run(ctx, args) {
      const report = await alertsReport(ctx.db, ctx.projectId, args.limit ?? DEFAULT_LIMIT);
      const firing = (r: (typeof report.rules)[number]) => r.states.filter((s) => s.state === "firing").length;
      const pending = (r: (typeof report.rules)[number]) => r.states.filter((s) => s.state === "pending").length;
      const sorted = [...report.rules].sort((a, b) => firing(b) - firing(a) || pending(b) - pending(a));
      const { rows, total, truncated } = top(sorted, args.limit);
      return { as_of: report.as_of, total, truncated, rules: rows, deliveries: report.deliveries };
    },
  }),
  defineTool({
    name: "explore",
    title: "Ask any question of the last 90 days",
    description:
      "Breaks every call of the last 90 days down by up to two dimensions (tool, client, client_version, outcome, " +
      "empty, session_kind, transport, protocol_version, server_version, country, colo, args_hash, session_id), " +
      "filtered by any of them, per hour or day if asked, with measures such as calls, error_rate, p95 or " +
      "distinct_args. Answers from Analytics Engine: when `sampled` is true counts and sums are estimates, and the " +
      "measures in `approximate` always are. Example: which client version started failing a tool — " +
      '{"measures": ["calls", "error_rate"], "by": ["client_version"], "filters": {"tool": ["search_orders"]}}.',
    inputSchema: ExploreArguments,
    outputSchema: exploreAnswerSchema,
    async run(ctx, args) {
      // As GET /v1/explore's URL would carry them, through the route's own schema.
      const params: Record<string, string | string[]> = {};
      if (args.measures) params.measure = args.measures;
      if (args.by) params.by = args.by;
      for (const [dimension, values] of Object.entries(args.filters ?? {})) if (values) params[`filter[${dimension}]`] = values;
      if (args.from !== undefined) params.from = args.from;
      if (args.to !== undefined) params.to = args.to;
      if (args.grain !== undefined) params.grain = args.grain;
      if (args.limit !== undefined) params.limit = String(args.limit);
      const parsed = exploreQuerySchema(exploreClock).safeParse(params);
      if (!parsed.success) throw apiError("BAD_REQUEST", exploreMessageOf(parsed.error));
      return answerExplore(ctx.env, ctx.db, ctx.projectId, parsed.data, ctx.nowMs);
    },
  }),
];
