// GET /v1/openapi.json, generated from the routes' own declarations, so it describes the API that
// answers. No key: it holds no project data. docs/read-api.md's reference comes from it too.
import { Hono } from "hono";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env.ts";
import { exploreApp } from "./explore.ts";
import { metricsApp, READ_KEY_SCHEME } from "./metrics.ts";

/** Where each read app is mounted (app.ts mounts them at the same paths). */
export const READ_APPS = { "/v1/metrics": metricsApp, "/v1/explore": exploreApp } as const;

export const OPENAPI_PATH = "/v1/openapi.json";

export type OpenApiDocument = ReturnType<OpenAPIHono["getOpenAPI31Document"]>;

/** The document of every read route, built from the apps' registries. */
export function readApiDocument(): OpenApiDocument {
  const api = new OpenAPIHono<AppEnv>();
  api.openAPIRegistry.registerComponent("securitySchemes", READ_KEY_SCHEME, {
    type: "http",
    scheme: "bearer",
    description: "a read key, `mp_read_…` (SPEC §3): it names the project, and nothing else can",
  });
  for (const [path, app] of Object.entries(READ_APPS)) api.route(path, app);
  return api.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "MCPulse Edge read API",
      version: "1",
      description:
        "Everything a read key can see of its project: tool health, clients, pairs, sessions, timeseries, descriptions, agreement, insights, " +
        "schema regressions, alerts and Explore. Every error is `{\"error\": string, \"code\": string}` (docs/errors.md).",
    },
  });
}

/** Built once per isolate, on the first request: the routes cannot change while it runs. */
let built: OpenApiDocument | undefined;

export const openApiApp = new Hono<AppEnv>();

openApiApp.get("/", (c) => {
  built ??= readApiDocument();
  // The same for every caller and every request until the next deploy.
  c.header("Cache-Control", "public, max-age=300");
  return c.json(built);
});
