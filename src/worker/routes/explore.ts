// GET /v1/explore (SPEC §8): a read key's question of the last 90 days, answered by Analytics
// Engine — one SQL query per request, built from the parsed query (analytics/explore-sql.ts),
// cached per (project, query) for 60 s. Ranges reaching further back are answered from D1's day
// rows for the measures they hold (`"source": "rollups"`); the rest answer 400. The project is
// always the key's (index1), never a parameter.
import { zValidator } from "@hono/zod-validator";
import { Hono } from "hono";
import { requireKey } from "../auth.ts";
import type { AppEnv } from "../env.ts";
import { apiError } from "../errors.ts";
import { answerExplore, exploreClock } from "../analytics/explore.ts";
import { exploreMessageOf, exploreQuerySchema } from "../analytics/explore-query.ts";

export const exploreApp = new Hono<AppEnv>();

const exploreQuery = exploreQuerySchema(exploreClock);

exploreApp.use("*", requireKey("read"));
exploreApp.use("*", async (c, next) => {
  await next();
  c.header("Cache-Control", "private, no-store");
});

exploreApp.get(
  "/",
  zValidator("query", exploreQuery, (result) => {
    if (!result.success) throw apiError("BAD_REQUEST", exploreMessageOf(result.error));
  }),
  async (c) => c.json(await answerExplore(c.env, c.var.db, c.var.projectId, c.req.valid("query"), Date.now())),
);
