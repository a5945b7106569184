// GET /v1/metrics/… (SPEC §3): the read API. A read key names the project; nothing else can.
import { Hono } from "hono";
import { requireKey } from "../auth.ts";
import {
  agreementReport,
  clientsReport,
  descriptionsReport,
  insightsReport,
  pairsReport,
  pricePerMillionTokens,
  schemaRegressionsReport,
  sessionsReport,
  timeseriesReport,
  toolsReport,
} from "../db/metrics-report.ts";
import type { AppEnv } from "../env.ts";
import { MAX_HOUR_GRAIN_DAYS, parseFilters, parseGrain, parseRange, singleParams } from "./metrics/params.ts";

export const metricsApp = new Hono<AppEnv>();

metricsApp.use("*", requireKey("read"));
// Metrics are per project and change every rollup: never cache them in a shared cache.
metricsApp.use("*", async (c, next) => {
  await next();
  c.header("Cache-Control", "private, no-store");
});

function query(url: string, allowed: readonly string[]): Map<string, string> {
  return singleParams(new URL(url), allowed);
}

metricsApp.get("/tools", async (c) => {
  const params = query(c.req.url, ["from", "to", "client", "tool"]);
  const range = parseRange(params, Date.now());
  return c.json(await toolsReport(c.env.DB, c.var.projectId, range, parseFilters(params)));
});

metricsApp.get("/clients", async (c) => {
  const params = query(c.req.url, ["from", "to", "client", "tool"]);
  const range = parseRange(params, Date.now());
  return c.json(await clientsReport(c.env.DB, c.var.projectId, range, parseFilters(params)));
});

metricsApp.get("/pairs", async (c) => {
  const params = query(c.req.url, ["from", "to", "client", "tool"]);
  const range = parseRange(params, Date.now());
  return c.json(await pairsReport(c.env.DB, c.var.projectId, range, parseFilters(params)));
});

metricsApp.get("/sessions", async (c) => {
  const params = query(c.req.url, ["from", "to", "client"]);
  const range = parseRange(params, Date.now());
  const price = pricePerMillionTokens(c.env.PRICE_PER_MILLION_TOKENS_USD);
  return c.json(await sessionsReport(c.env.DB, c.var.projectId, range, parseFilters(params), price));
});

metricsApp.get("/timeseries", async (c) => {
  const params = query(c.req.url, ["from", "to", "grain", "client", "tool"]);
  const grain = parseGrain(params);
  const range = parseRange(params, Date.now(), grain === "hour" ? MAX_HOUR_GRAIN_DAYS : undefined);
  return c.json(await timeseriesReport(c.env.DB, c.var.projectId, range, grain, parseFilters(params)));
});

metricsApp.get("/descriptions", async (c) => {
  const params = query(c.req.url, ["tool"]);
  return c.json(await descriptionsReport(c.env.DB, c.var.projectId, parseFilters(params)));
});

metricsApp.get("/agreement", async (c) => {
  const params = query(c.req.url, ["from", "to", "tool"]);
  const range = parseRange(params, Date.now());
  return c.json(await agreementReport(c.env.DB, c.var.projectId, range, parseFilters(params)));
});

metricsApp.get("/insights", async (c) => {
  const params = query(c.req.url, ["from", "to", "client", "tool"]);
  const range = parseRange(params, Date.now());
  return c.json(await insightsReport(c.env.DB, c.var.projectId, range, parseFilters(params)));
});

metricsApp.get("/schema-regressions", async (c) => {
  const params = query(c.req.url, ["client", "tool"]);
  return c.json(await schemaRegressionsReport(c.env.DB, c.var.projectId, parseFilters(params)));
});
