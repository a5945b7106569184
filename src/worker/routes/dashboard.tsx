// GET / and GET /tools/:name: the dashboard, server-rendered with Hono JSX (no build step, no
// network). Sign-in with a read key: `?key=` once (then a cookie and a redirect that drops it from
// the URL) or the sign-in form. The cookie holds the read key itself and is checked on every page
// exactly like a Bearer key, so a page can only ever show the key's own project (SPEC §3).
import { Hono, type Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { HTTPException } from "hono/http-exception";
import type { JSX } from "hono/jsx/jsx-runtime";
import { MAX_TOOL_NAME_CHARS } from "../../shared/limits.ts";
import { authenticateKey } from "../auth.ts";
import { ErrorPage, ScriptNonce, SignInPage } from "../dashboard/layout.tsx";
import { OverviewPage, ToolPage } from "../dashboard/pages.tsx";
import type { AppEnv } from "../env.ts";
import { loadOverview, loadProjectName, loadToolPage } from "../metrics/page-data.ts";
import { pageQuery, parseQuery } from "../metrics/query.ts";
import { pricePerMillionTokens } from "../metrics/reports.ts";
import { openReadScope } from "../metrics/scope.ts";
import { DAY_MS } from "../time.ts";

type Ctx = Context<AppEnv>;

export const dashboardApp = new Hono<AppEnv>();

export const SESSION_COOKIE = "mcpulse_read_key";
/** The sign-in cookie lasts 30 days; revoking the key ends it at once (it is checked on every page). */
const COOKIE_MAX_AGE_S = 30 * 24 * 3600;

/** `Secure` cookies are refused over plain http, which local development uses. */
export function isLocalHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]" || hostname.endsWith(".localhost");
}

/**
 * A page as HTML. Its script carries this request's CSP nonce (app.ts's secureHeaders makes it when
 * the policy is built); pages are per key and never cached.
 */
async function render(c: Ctx, page: JSX.Element, status: 200 | 400 | 401 = 200): Promise<Response> {
  const nonce = c.get("secureHeadersNonce") ?? "";
  const html = "<!DOCTYPE html>" + (await (<ScriptNonce.Provider value={nonce}>{page}</ScriptNonce.Provider>).toString());
  return c.html(html, status, { "Cache-Control": "private, no-store" });
}

function setKeyCookie(c: Ctx, key: string): void {
  setCookie(c, SESSION_COOKIE, key, {
    httpOnly: true,
    secure: !isLocalHost(new URL(c.req.url).hostname),
    sameSite: "Strict",
    path: "/",
    maxAge: COOKIE_MAX_AGE_S,
  });
}

function clearKeyCookie(c: Ctx): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: !isLocalHost(new URL(c.req.url).hostname) });
}

type PageAuth = { projectId: string } | { response: Response };

/**
 * The project of this page request: `?key=` (answered with the cookie and a redirect to the same
 * URL without it), else the cookie; otherwise the sign-in page.
 */
async function authenticatePage(c: Ctx): Promise<PageAuth> {
  const url = new URL(c.req.url);
  const keys = url.searchParams.getAll("key");
  if (keys.length > 0) {
    const auth = keys.length === 1 ? await authenticateKey(c.env.DB, keys[0] ?? "", "read") : null;
    if (!auth) return { response: await render(c, <SignInPage error="That is not a valid read key." />, 401) };
    setKeyCookie(c, keys[0] ?? "");
    url.searchParams.delete("key");
    c.header("Cache-Control", "no-store");
    c.header("Referrer-Policy", "no-referrer");
    return { response: c.redirect(url.pathname + url.search, 303) };
  }
  const cookie = getCookie(c, SESSION_COOKIE);
  const next = url.pathname + url.search;
  if (cookie === undefined) return { response: await render(c, <SignInPage next={next} />, 401) };
  const auth = await authenticateKey(c.env.DB, cookie, "read");
  if (!auth) {
    clearKeyCookie(c);
    return { response: await render(c, <SignInPage error="Your key is no longer valid. Sign in again." next={next} />, 401) };
  }
  return { projectId: auth.project_id };
}

/** Range and client of a page, by the API's own schema (metrics/query.ts). */
function pageParams(c: Ctx) {
  return parseQuery(pageQuery, new URL(c.req.url));
}

async function withBadParameters(c: Ctx, page: () => Promise<Response>): Promise<Response> {
  try {
    return await page();
  } catch (err) {
    if (err instanceof HTTPException && err.status === 400) return render(c, <ErrorPage message={err.message} />, 400);
    throw err;
  }
}

function common(c: Ctx, projectName: string, q: ReturnType<typeof pageParams>) {
  return {
    projectName,
    range: q.range,
    client: q.client,
    todayMs: Math.floor(Date.now() / DAY_MS) * DAY_MS,
    pricePerMillion: pricePerMillionTokens(c.env.PRICE_PER_MILLION_TOKENS_USD),
  };
}

dashboardApp.get("/", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  return withBadParameters(c, async () => {
    const q = pageParams(c);
    const props = common(c, "", q);
    const scope = openReadScope(c.env.DB, auth.projectId);
    const [projectName, data] = await Promise.all([
      loadProjectName(scope),
      loadOverview(scope, q.range, q.client, props.pricePerMillion),
    ]);
    return render(c, <OverviewPage {...props} projectName={projectName} data={data} />);
  });
});

dashboardApp.get("/tools/:name", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  return withBadParameters(c, async () => {
    const tool = c.req.param("name");
    if (tool.length === 0 || tool.length > MAX_TOOL_NAME_CHARS) throw new HTTPException(400, { message: "not a tool name" });
    const q = pageParams(c);
    const props = common(c, "", q);
    const scope = openReadScope(c.env.DB, auth.projectId);
    const [projectName, data] = await Promise.all([
      loadProjectName(scope),
      loadToolPage(scope, tool, q.range, q.client, props.pricePerMillion),
    ]);
    return render(c, <ToolPage {...props} projectName={projectName} tool={tool} data={data} />);
  });
});

/**
 * Where to go after signing in: a path on this site only (`/…`, never `//host` or `/\host`, which
 * browsers treat as another site), else the overview.
 */
export function safeNextPath(next: unknown): string {
  if (typeof next !== "string" || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  if (/[\u0000-\u001f\\]/.test(next) || next.length > 2048) return "/";
  return next;
}

dashboardApp.post("/signin", async (c) => {
  const form = await c.req.parseBody();
  const key = typeof form.key === "string" ? form.key.trim() : "";
  const next = safeNextPath(form.next);
  const auth = key ? await authenticateKey(c.env.DB, key, "read") : null;
  if (!auth) return render(c, <SignInPage error="That is not a valid read key." next={next} />, 401);
  setKeyCookie(c, key);
  return c.redirect(next, 303);
});

dashboardApp.post("/signout", (c) => {
  clearKeyCookie(c);
  return c.redirect("/", 303);
});
