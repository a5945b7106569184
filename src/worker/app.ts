// The Hono app: one error model for the whole API, and the route groups mounted on it.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { NONCE, secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { apiError, errorResponse } from "./errors.ts";
import { adminRoutes } from "./routes/admin.ts";
import { alertRoutes } from "./routes/alerts.ts";
import { ingestRoutes } from "./routes/ingest.ts";
import { otlpRoutes } from "./routes/otlp.ts";
import { mcpApp } from "./routes/mcp.ts";
import { OPENAPI_PATH, READ_APPS, openApiApp } from "./routes/openapi.ts";
import { dashboardApp } from "./routes/dashboard.tsx";
import { dashboardAlertsApp } from "./routes/dashboard-alerts.tsx";
import { oauthApp } from "./routes/oauth.tsx";

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
app.route("/v1/traces", otlpRoutes);
// The read API (/v1/metrics, /v1/explore), mounted where its OpenAPI document says it is.
for (const [path, readApp] of Object.entries(READ_APPS)) app.route(path, readApp);
app.route(OPENAPI_PATH, openApiApp);
app.route("/mcp", mcpApp);
app.route("/v1", alertRoutes);
app.route("/", oauthApp);
app.route("/", dashboardAlertsApp);
app.route("/", dashboardApp);

// One error model (errors.ts, docs/errors.md): every error of every route ends here, as
// {"error": string, "code": ErrorCode}; anything unexpected is a bare 500 (SPEC §1.1): never a stack
// trace, never input echoed back.
app.onError((err) => {
  if (!(err instanceof HTTPException)) console.error(JSON.stringify({ event: "unhandled_error", name: err?.name ?? "Error" }));
  return errorResponse(err);
});

app.notFound(() => errorResponse(apiError("NOT_FOUND", "not found")));
