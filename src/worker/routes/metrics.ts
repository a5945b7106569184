// GET /v1/metrics/… (SPEC §3): the read API. A read key names the project; nothing else can. Each
// route validates its query with its schema (metrics/query.ts) and answers what metrics/ reports.
import { Hono } from "hono";
import { requireKey } from "../auth.ts";
import type { AppEnv } from "../env.ts";
import { insightsReport } from "../metrics/insights.ts";
import {
  agreementQuery,
  clientsQuery,
  descriptionsQuery,
  insightsQuery,
  pairsQuery,
  requireHoursKept,
  schemaRegressionsQuery,
  sessionsQuery,
  timeseriesQuery,
  toolsQuery,
  validQuery,
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

export const metricsApp = new Hono<AppEnv>();

metricsApp.use("*", requireKey("read"));
// Metrics are per project and change every rollup: never cache them in a shared cache.
metricsApp.use("*", async (c, next) => {
  await next();
  c.header("Cache-Control", "private, no-store");
});

metricsApp.get("/tools", validQuery(toolsQuery), async (c) => {
  const { range, filters } = c.req.valid("query");
  return c.json(await toolsReport(openReadScope(c.var.db, c.var.projectId), range, filters));
});

metricsApp.get("/clients", validQuery(clientsQuery), async (c) => {
  const { range, filters } = c.req.valid("query");
  return c.json(await clientsReport(openReadScope(c.var.db, c.var.projectId), range, filters));
});

metricsApp.get("/pairs", validQuery(pairsQuery), async (c) => {
  const { range, filters } = c.req.valid("query");
  return c.json(await pairsReport(openReadScope(c.var.db, c.var.projectId), range, filters));
});

metricsApp.get("/sessions", validQuery(sessionsQuery), async (c) => {
  const { range, filters } = c.req.valid("query");
  const price = pricePerMillionTokens(c.env.PRICE_PER_MILLION_TOKENS_USD);
  return c.json(await sessionsReport(openReadScope(c.var.db, c.var.projectId), range, filters, price));
});

metricsApp.get("/timeseries", validQuery(timeseriesQuery), async (c) => {
  const { range, grain, filters } = c.req.valid("query");
  const scope = openReadScope(c.var.db, c.var.projectId);
  requireHoursKept(range, grain, scope.nowMs);
  return c.json(await timeseriesReport(scope, range, grain, filters));
});

metricsApp.get("/descriptions", validQuery(descriptionsQuery), async (c) => {
  const { filters } = c.req.valid("query");
  return c.json(await descriptionsReport(openReadScope(c.var.db, c.var.projectId), filters));
});

metricsApp.get("/agreement", validQuery(agreementQuery), async (c) => {
  const { range, filters } = c.req.valid("query");
  return c.json(await agreementReport(openReadScope(c.var.db, c.var.projectId), range, filters));
});

metricsApp.get("/insights", validQuery(insightsQuery), async (c) => {
  const { range, filters } = c.req.valid("query");
  return c.json(await insightsReport(openReadScope(c.var.db, c.var.projectId), range, filters));
});

metricsApp.get("/schema-regressions", validQuery(schemaRegressionsQuery), async (c) => {
  const { filters } = c.req.valid("query");
  return c.json(await schemaRegressionsReport(openReadScope(c.var.db, c.var.projectId), filters));
});
