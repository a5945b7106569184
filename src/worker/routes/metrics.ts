// GET /v1/metrics/… (SPEC §3): the read API; the read key names the project. Routes are declared with
// @hono/zod-openapi, so validation and the OpenAPI document come from the same schemas.
import { createRoute, OpenAPIHono, type Hook } from "@hono/zod-openapi";
import type { z } from "zod";
import { AlertsReport, alertsReport, DELIVERY_LOG_LIMIT } from "../alerts/report.ts";
import { requireKey } from "../auth.ts";
import type { AppEnv } from "../env.ts";
import { ErrorBody } from "../errors.ts";
import {
  AgreementReport,
  ClientsReport,
  DescriptionsReport,
  InsightsReport,
  PairsReport,
  SchemaRegressionsReport,
  SessionsReport,
  TimeseriesReport,
  ToolsReport,
} from "../metrics/answers.ts";
import { insightsReport } from "../metrics/insights.ts";
import {
  agreementQuery,
  badParameter,
  clientsQuery,
  descriptionsQuery,
  insightsQuery,
  messageOf,
  pairsQuery,
  requireHoursKept,
  schemaRegressionsQuery,
  sessionsQuery,
  timeseriesQuery,
  toolsQuery,
} from "../metrics/query.ts";
import {
  agreementReport,
  clientsReport,
  descriptionsReport,
  pairsReport,
  pricePerMillionTokens,
  sessionsReport,
  timeseriesReport,
  toolsReport,
} from "../metrics/reports.ts";
import { schemaRegressionsReport } from "../metrics/schema-regressions.ts";
import { openReadScope } from "../metrics/scope.ts";

/** The read key's scheme, as the OpenAPI document names it (SPEC §3: `Authorization: Bearer mp_read_…`). */
export const READ_KEY_SCHEME = "readKey";

/**
 * The read API's validation hook: a query that fails its schema is thrown into the one error model
 * (app.onError), `400 {"error", "code": "BAD_REQUEST"}` naming the parameter in our own words.
 */
export const badQueryHook: Hook<unknown, AppEnv, string, void> = (result) => {
  if (!result.success) throw badParameter(messageOf(result.error));
};

/** A refusal as the document declares it: its meaning, and the one error body (errors.ts). */
export const refusal = (description: string) => ({ description, content: { "application/json": { schema: ErrorBody } } });

/** The refusals every read route can answer, before or instead of its answer. */
export const READ_ERRORS = {
  400: refusal("a bad parameter (`BAD_REQUEST`), named in the message"),
  401: refusal("no read key, or an unknown, revoked or wrong-kind key (checked before any parameter)"),
  429: refusal("too many failed sign-ins from the network or against the key prefix; `Retry-After` says when to try again"),
};

/** One GET route of the read API: its query, its answer, and the read key it needs. */
export function readRoute<P extends string, Q extends z.ZodPipe, A extends z.ZodType, E extends object = object>(route: {
  path: P;
  summary: string;
  description: string;
  query: Q;
  answer: A;
  /** Refusals of this route besides READ_ERRORS. */
  errors?: E;
}) {
  return createRoute({
    method: "get",
    path: route.path,
    summary: route.summary,
    description: route.description,
    security: [{ [READ_KEY_SCHEME]: [] }],
    request: { query: route.query },
    responses: {
      200: { description: route.summary, content: { "application/json": { schema: route.answer } } },
      ...READ_ERRORS,
      ...(route.errors as E),
    },
  });
}

export const metricsApp = new OpenAPIHono<AppEnv>({ defaultHook: badQueryHook });

metricsApp.use("*", requireKey("read"));
// Metrics are per project and change every rollup: never cache them in a shared cache.
metricsApp.use("*", async (c, next) => {
  await next();
  c.header("Cache-Control", "private, no-store");
});

const scopeOf = (c: { var: AppEnv["Variables"] }) => openReadScope(c.var.db, c.var.projectId);

metricsApp.openapi(
  readRoute({
    path: "/tools",
    summary: "Tool health",
    description: "One row per tool called in the range and filters or registered (matching `tool`): counters, rates, latency percentiles, response sizes, schema size and whether it is dead. Most calls first, then by name.",
    query: toolsQuery,
    answer: ToolsReport,
  }),
  async (c) => {
    const { range, filters } = c.req.valid("query");
    return c.json(await toolsReport(scopeOf(c), range, filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/clients",
    summary: "Figures per MCP client",
    description: "The same counters, rates and latency per MCP client, most calls first.",
    query: clientsQuery,
    answer: ClientsReport,
  }),
  async (c) => {
    const { range, filters } = c.req.valid("query");
    return c.json(await clientsReport(scopeOf(c), range, filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/pairs",
    summary: "Tool pairs",
    description: "Which tool was called right after which in a session, summed over the days of the range, most frequent first.",
    query: pairsQuery,
    answer: PairsReport,
  }),
  async (c) => {
    const { range, filters } = c.req.valid("query");
    return c.json(await pairsReport(scopeOf(c), range, filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/sessions",
    summary: "Sessions and their token cost",
    description: "Sessions first seen in the range, with all their calls: calls, tokens and cost per session.",
    query: sessionsQuery,
    answer: SessionsReport,
  }),
  async (c) => {
    const { range, filters } = c.req.valid("query");
    const price = pricePerMillionTokens(c.env.PRICE_PER_MILLION_TOKENS_USD);
    return c.json(await sessionsReport(scopeOf(c), range, filters, price), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/timeseries",
    summary: "Figures per day or hour",
    description: "Every day (or hour) of the range, empty ones included, with the counters, rates and latency of its calls.",
    query: timeseriesQuery,
    answer: TimeseriesReport,
    errors: { 400: refusal("a bad parameter (`BAD_REQUEST`), named in the message; `grain=hour` from before the hours kept (`HOURS_NOT_KEPT`)") },
  }),
  async (c) => {
    const { range, grain, filters } = c.req.valid("query");
    const scope = scopeOf(c);
    requireHoursKept(range, grain, scope.nowMs);
    return c.json(await timeseriesReport(scope, range, grain, filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/descriptions",
    summary: "Description churn and convergence",
    description: "Over all time: tools whose description changed under one schema, and registered tools whose descriptions converged (SPEC §2.5).",
    query: descriptionsQuery,
    answer: DescriptionsReport,
  }),
  async (c) => {
    const { filters } = c.req.valid("query");
    return c.json(await descriptionsReport(scopeOf(c), filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/agreement",
    summary: "Cross-tool agreement",
    description: "Per declared field and pair of tools, how often their values disagreed in the range, and the declared fields with no verdict (SPEC §2.5).",
    query: agreementQuery,
    answer: AgreementReport,
  }),
  async (c) => {
    const { range, filters } = c.req.valid("query");
    return c.json(await agreementReport(scopeOf(c), range, filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/insights",
    summary: "What to fix first",
    description: "Ranked findings from the same rows as /tools with the same filters, worst first.",
    query: insightsQuery,
    answer: InsightsReport,
  }),
  async (c) => {
    const { range, filters } = c.req.valid("query");
    return c.json(await insightsReport(scopeOf(c), range, filters), 200);
  },
);

metricsApp.openapi(
  readRoute({
    path: "/schema-regressions",
    summary: "Did a schema change hurt?",
    description: "For each registered tool whose schema_hash changed: bad_args rate and first-call success over the 7 days before and after its latest change. Regressed tools first.",
    query: schemaRegressionsQuery,
    answer: SchemaRegressionsReport,
  }),
  async (c) => {
    const { filters } = c.req.valid("query");
    return c.json(await schemaRegressionsReport(scopeOf(c), filters), 200);
  },
);

// No query: the alerts answer takes no parameter, and has never refused one.
metricsApp.openapi(
  createRoute({
    method: "get",
    path: "/alerts",
    summary: "Alert rules, states and deliveries",
    description: `The project's alert rules with their state per scope, and the latest ${DELIVERY_LOG_LIMIT} notifications with every delivery attempt (SPEC §5). Read only: never a destination's URL or secret.`,
    security: [{ [READ_KEY_SCHEME]: [] }],
    responses: {
      200: { description: "Alert rules, states and deliveries", content: { "application/json": { schema: AlertsReport } } },
      401: READ_ERRORS[401],
      429: READ_ERRORS[429],
    },
  }),
  async (c) => c.json(await alertsReport(c.var.db, c.var.projectId, DELIVERY_LOG_LIMIT), 200),
);
