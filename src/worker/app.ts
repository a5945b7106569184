// The Hono app: one error model for the whole API, and the route groups mounted on it.
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { NONCE, secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { REQUEST_ID_HEADER, apiError, errorResponse } from "./errors.ts";
import { errorName, log, withLogScope } from "./log.ts";
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

/** What a `cf-ray` may look like to be taken as the request's id (`8f1a2b3c4d5e6f70-LHR`); anything else gets a fresh id. */
const CF_RAY = /^[\w-]{1,64}$/;

/**
 * The request's id: Cloudflare's `cf-ray` (it names the request in Cloudflare's logs too), else a
 * random UUID. A client's `X-Request-Id` is not taken: it could name another request.
 */
export function requestIdOf(cfRay: string | undefined): string {
  return cfRay !== undefined && CF_RAY.test(cfRay) ? cfRay : crypto.randomUUID();
}
app.use(requestId({ headerName: "", generator: (c) => requestIdOf(c.req.header("cf-ray")) }));
app.use(async (c, next) => {
  await withLogScope({ request_id: c.var.requestId }, next);
  c.header(REQUEST_ID_HEADER, c.var.requestId);
});

/**
 * Security headers on every answer (SPEC §3): scripts only by nonce; inline styles (the charts' SVG).
 * `Referrer-Policy: same-origin`, not `no-referrer`, which makes a form POST send `Origin: null` and
 * breaks the sign-in's cross-site check where `Sec-Fetch-Site` is missing.
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
// {"error": string, "code": ErrorCode, "request_id": string} — the id its log lines carry; anything
// unexpected is a bare 500 (SPEC §1.1): never a stack trace, never input echoed back.
app.onError((err, c) => {
  if (!(err instanceof HTTPException)) log.error("unhandled_error", { name: errorName(err) });
  return errorResponse(err, c.var.requestId);
});

app.notFound((c) => errorResponse(apiError("NOT_FOUND", "not found"), c.var.requestId));
