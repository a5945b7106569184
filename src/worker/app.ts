// The Hono app: one error model for the whole API, and the route groups mounted on it.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { NONCE, secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { adminRoutes } from "./routes/admin.ts";
import { alertRoutes } from "./routes/alerts.ts";
import { ingestRoutes } from "./routes/ingest.ts";
import { mcpApp } from "./routes/mcp.ts";
import { metricsApp } from "./routes/metrics.ts";
import { dashboardApp } from "./routes/dashboard.tsx";
import { dashboardAlertsApp } from "./routes/dashboard-alerts.tsx";

export const app = new Hono<AppEnv>();

/**
 * One set of security headers on every answer — pages, API, errors and 404s (SPEC §3). Scripts run
 * only with this request's nonce (no 'unsafe-inline' scripts); styles stay inline (the charts' SVG
 * carries style attributes) and nothing is loaded from elsewhere. `Referrer-Policy: same-origin` and
 * not `no-referrer`: with no-referrer a browser sends `Origin: null` on a form POST, and the
 * sign-in's cross-site check needs the real origin where `Sec-Fetch-Site` is missing.
 */
const SECURITY_HEADERS: NonNullable<Parameters<typeof secureHeaders>[0]> = {
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: [NONCE],
    styleSrc: ["'unsafe-inline'"],
    imgSrc: ["data:"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  xFrameOptions: "DENY",
  referrerPolicy: "same-origin",
  strictTransportSecurity: false,
};
/** HSTS only over https: over plain http (local development) a browser ignores it, and it would lie. */
const overHttp = secureHeaders(SECURITY_HEADERS);
const overHttps = secureHeaders({ ...SECURITY_HEADERS, strictTransportSecurity: "max-age=31536000; includeSubDomains" });
app.use((c, next) => (new URL(c.req.url).protocol === "https:" ? overHttps : overHttp)(c, next));

app.get("/healthz", (c) => c.text("ok"));
app.route("/v1/admin", adminRoutes);
app.route("/v1/ingest", ingestRoutes);
app.route("/v1/metrics", metricsApp);
app.route("/mcp", mcpApp);
app.route("/v1", alertRoutes);
app.route("/", dashboardAlertsApp);
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
    case 403: return "forbidden";
    case 404: return "not found";
    case 413: return "payload too large";
    case 415: return "unsupported media type";
    case 429: return "too many requests";
    default: return "error";
  }
}

app.notFound((c) => c.json({ error: "not found" }, 404));
