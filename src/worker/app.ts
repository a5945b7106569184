// The Hono app: one error model for the whole API, and the route groups mounted on it.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import type { AppEnv } from "./env.ts";
import { adminRoutes } from "./routes/admin.ts";
import { alertRoutes } from "./routes/alerts.ts";
import { ingestRoutes } from "./routes/ingest.ts";
import { mcpApp } from "./routes/mcp.ts";
import { metricsApp } from "./routes/metrics.ts";
import { dashboardApp } from "./routes/dashboard.tsx";

export const app = new Hono<AppEnv>();

app.get("/healthz", (c) => c.text("ok"));
app.route("/v1/admin", adminRoutes);
app.route("/v1/ingest", ingestRoutes);
app.route("/v1/metrics", metricsApp);
app.route("/mcp", mcpApp);
app.route("/v1", alertRoutes);
app.route("/", dashboardApp);

// Every error body is {"error": string}; anything unexpected is a bare 500 (SPEC §1.1): never a
// stack trace, never input echoed back.
app.onError((err, c) => {
  if (err instanceof HTTPException) {
    const res = err.getResponse();
    const headers = new Headers(res.headers);
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify({ error: err.message || defaultErrorMessage(err.status) }), {
      status: err.status,
      headers,
    });
  }
  console.error(JSON.stringify({ event: "unhandled_error", name: err?.name ?? "Error" }));
  return c.json({ error: "internal error" }, 500);
});

/** Message for an HTTPException thrown without one (e.g. by Hono's own middleware). */
function defaultErrorMessage(status: number): string {
  switch (status) {
    case 400: return "bad request";
    case 401: return "unauthorized";
    case 404: return "not found";
    case 413: return "payload too large";
    case 415: return "unsupported media type";
    case 429: return "too many requests";
    default: return "error";
  }
}

app.notFound((c) => c.json({ error: "not found" }, 404));
