// GET /v1/explore (SPEC §8): Analytics Engine for the last 90 days, cached per (project, query) for
// 60 s; older ranges from D1's day rows where they hold the measure. The project is always the key's.
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
