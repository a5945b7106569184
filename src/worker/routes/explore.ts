// GET /v1/explore (SPEC §8): a read key's question of the last 90 days, answered by Analytics
// Engine — one SQL query per request, built from the parsed query (analytics/explore-sql.ts),
// cached per (project, query) for 60 s. Ranges reaching further back are answered from D1's day
// rows for the measures they hold (`"source": "rollups"`); the rest answer 400. The project is
// always the key's (index1), never a parameter. Declared like the read API's routes (metrics.ts),
// so the OpenAPI document describes it from the same schemas.
import { OpenAPIHono } from "@hono/zod-openapi";
import { requireKey } from "../auth.ts";
import type { AppEnv } from "../env.ts";
import { apiError } from "../errors.ts";
import { answerExplore, exploreAnswerSchema, exploreClock } from "../analytics/explore.ts";
import { exploreMessageOf, exploreQuerySchema } from "../analytics/explore-query.ts";
import { refusal, readRoute } from "./metrics.ts";

export const exploreApp = new OpenAPIHono<AppEnv>({
  defaultHook: (result) => {
    if (!result.success) throw apiError("BAD_REQUEST", exploreMessageOf(result.error));
  },
});

const exploreQuery = exploreQuerySchema(exploreClock);

exploreApp.use("*", requireKey("read"));
exploreApp.use("*", async (c, next) => {
  await next();
  c.header("Cache-Control", "private, no-store");
});

exploreApp.openapi(
  readRoute({
    path: "/",
    summary: "Explore the last 90 days",
    description:
      "Every call of the last 90 days broken down by up to two dimensions, filtered by any of them, per hour or day if asked, " +
      "with the measures asked; from Analytics Engine (sampled counts are estimates), past 90 days from D1's day rows (docs/explore.md). " +
      "A list parameter may be repeated or comma-separated.",
    query: exploreQuery,
    answer: exploreAnswerSchema,
    errors: { 503: refusal("Analytics Engine cannot be reached or is not configured (`ANALYTICS_UNAVAILABLE`); `Retry-After` when it may pass") },
  }),
  async (c) => c.json(await answerExplore(c.env, c.var.db, c.var.projectId, c.req.valid("query"), Date.now()), 200),
);
