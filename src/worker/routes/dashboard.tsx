// GET / and GET /tool?name=: the server-rendered dashboard. A `?key=` link only lands on a
// confirmation step (SPEC §3, login CSRF); a session never holds the key (routes/dashboard-cookies.ts).
import { databaseOf, directoryDb } from "../databases.ts";
import { Hono } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import type { JSX } from "hono/jsx/jsx-runtime";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { authenticateKey } from "../auth.ts";
import { ConfirmSignInPage, DataNotice, ErrorPage, RequestId, ScriptNonce, SignInPage } from "../dashboard/layout.tsx";
import { INGEST_HEALTH_NAME } from "../health/ingest-health.ts";
import { OverviewPage, ToolPage } from "../dashboard/pages.tsx";
import { ExplorePage, type ExploreForm, type ExploreOutcome } from "../dashboard/explore-page.tsx";
import { answerExplore, exploreClock } from "../analytics/explore.ts";
import { DIMENSION_NAMES, exploreMessageOf, exploreQuerySchema } from "../analytics/explore-query.ts";
import { ApiError } from "../errors.ts";
import type { AppContext, AppEnv } from "../env.ts";
import { loadOverview, loadProjectName, loadToolPage } from "../metrics/page-data.ts";
import { pageQuery, parseQuery, type PageParams, toolPageQuery } from "../metrics/query.ts";
import { pricePerMillionTokens } from "../metrics/reports.ts";
import { openReadScope, type ReadScope } from "../metrics/scope.ts";
import { DAY_MS } from "../time.ts";
import { attemptOf, keyPrefix, recordFailedCredential, waitInWords, type Refusal } from "../throttle/credentials.ts";
import { endSessions, readSession, startReadSession } from "./dashboard-cookies.ts";

export const dashboardApp = new Hono<AppEnv>();

/**
 * A page as HTML. Its script carries this request's CSP nonce (app.ts's secureHeaders makes it when
 * the policy is built), and an error page the request's id; pages are per key and never cached.
 */
export async function render(c: AppContext, page: JSX.Element, status: ContentfulStatusCode = 200, notice: string | null = null): Promise<Response> {
  const nonce = c.get("secureHeadersNonce") ?? "";
  const html =
    "<!DOCTYPE html>" +
    (await (
      <ScriptNonce.Provider value={nonce}>
        <RequestId.Provider value={c.var.requestId}>
          <DataNotice.Provider value={notice}>{page}</DataNotice.Provider>
        </RequestId.Provider>
      </ScriptNonce.Provider>
    ).toString());
  return c.html(html, status, { "Cache-Control": "private, no-store" });
}

/**
 * The sign-in page answering a throttled attempt: 429 with Retry-After, and in words which limit
 * (SPEC §3) and how long to wait. Only failed attempts get it (a read key that is right always
 * signs in), so the page has nothing to say about the key.
 */
export async function tooManySignIns(c: AppContext, refusal: Refusal, page: (error: string) => JSX.Element): Promise<Response> {
  const wait = waitInWords(refusal.retryAfterSeconds);
  const what = refusal.limit === "network" ? "from your network" : "with this key id or token";
  c.header("Retry-After", String(refusal.retryAfterSeconds));
  return render(c, page(`Too many failed sign-ins ${what}. Try again in ${wait}.`), 429);
}

/**
 * Checks a read key typed into the form or carried by a `?key=` link: a right key signs in from any
 * network (SPEC §3); a wrong one is counted, against its network and its prefix.
 */
async function checkSignInKey(c: AppContext, key: string): Promise<{ auth: Awaited<ReturnType<typeof authenticateKey>>; refusal: Refusal | null }> {
  const auth = key ? await authenticateKey(directoryDb(c.env), key, "read") : null;
  if (auth) return { auth, refusal: null };
  return { auth: null, refusal: await recordFailedCredential(c.env, attemptOf(c.req.raw, keyPrefix(key)), Date.now()) };
}

/** The page's project and its database (resolved once for the request, SPEC §7), or the answer instead of the page. */
export type PageAuth = { projectId: string; db: D1Database } | { response: Response };

/**
 * The project of this page request: the cookie, else the sign-in page. A `?key=` link is answered
 * with a confirmation step naming the key's project — never with the cookie: any site can send a
 * browser to such a link, and only a form of this site (POST /signin) may change the cookie.
 */
export async function authenticatePage(c: AppContext): Promise<PageAuth> {
  const url = new URL(c.req.url);
  const keys = url.searchParams.getAll("key");
  if (keys.length > 0) {
    const key = keys.length === 1 ? (keys[0] ?? "") : "";
    const { auth, refusal } = await checkSignInKey(c, key);
    if (refusal !== null) return { response: await tooManySignIns(c, refusal, (error) => <SignInPage error={error} />) };
    if (!auth) return { response: await render(c, <SignInPage error="That is not a valid read key." />, 401) };
    url.searchParams.delete("key");
    const projectName = await loadProjectName(openReadScope(databaseOf(c.env, auth.database).db, auth.project_id));
    const next = safeNextPath(url.pathname + url.search);
    return { response: await render(c, <ConfirmSignInPage projectName={projectName} signInKey={key} next={next} />) };
  }
  const next = url.pathname + url.search;
  const session = await readSession(c, Date.now());
  if (session === "none") return { response: await render(c, <SignInPage next={next} />, 401) };
  if (session === "ended") {
    return { response: await render(c, <SignInPage error="Your session has ended (signed out, expired, or its key revoked). Sign in again." next={next} />, 401) };
  }
  return { projectId: session.projectId, db: session.db };
}

export async function withBadParameters(c: AppContext, page: () => Promise<Response>): Promise<Response> {
  try {
    return await page();
  } catch (err) {
    if (err instanceof HTTPException && err.status === 400) return render(c, <ErrorPage message={err.message} />, 400);
    throw err;
  }
}

function common(c: AppContext, projectName: string, q: PageParams) {
  return {
    projectName,
    range: q.range,
    client: q.client,
    search: q.search,
    todayMs: Math.floor(Date.now() / DAY_MS) * DAY_MS,
    pricePerMillion: pricePerMillionTokens(c.env.PRICE_PER_MILLION_TOKENS_USD),
  };
}

dashboardApp.get("/", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  return withBadParameters(c, async () => {
    // Range, client, search and page by the API's own schemas (metrics/query.ts).
    const q = parseQuery(pageQuery, new URL(c.req.url));
    const props = common(c, "", q);
    const scope = openReadScope(auth.db, auth.projectId);
    const [projectName, data] = await Promise.all([loadProjectName(scope), loadOverview(scope, q, props.pricePerMillion)]);
    return render(c, <OverviewPage {...props} projectName={projectName} data={data} />, 200, await dataNotice(c, scope));
  });
});

/** A tool's page. Its name is a query parameter, capped in code points like every tool name (SPEC §1.2). */
dashboardApp.get("/tool", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  return withBadParameters(c, async () => {
    const q = parseQuery(toolPageQuery, new URL(c.req.url));
    const props = common(c, "", q);
    const scope = openReadScope(auth.db, auth.projectId);
    const [projectName, data] = await Promise.all([loadProjectName(scope), loadToolPage(scope, q.tool, q, props.pricePerMillion)]);
    return render(c, <ToolPage {...props} projectName={projectName} tool={q.tool} data={data} />, 200, await dataNotice(c, scope));
  });
});

const exploreQuery = exploreQuerySchema(exploreClock);

/**
 * The Explore page (SPEC §8): its form's parameters are GET /v1/explore's, so an address is the
 * question; empty fields are dropped before the query schema reads the rest.
 */
dashboardApp.get("/explore", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  const params: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(c.req.queries())) {
    const given = values.filter((v) => v.trim() !== "");
    if (given.length > 0) params[name] = given;
  }
  const one = (name: string) => params[name]?.[0] ?? "";
  const form: ExploreForm = {
    measures: params.measure?.flatMap((m) => m.split(",")) ?? ["calls"],
    by: params.by?.flatMap((d) => d.split(",")) ?? [],
    filters: Object.fromEntries(DIMENSION_NAMES.filter((d) => params[`filter[${d}]`]).map((d) => [d, params[`filter[${d}]`]!])),
    from: one("from"),
    to: one("to"),
    grain: one("grain") || "none",
    limit: one("limit"),
  };
  const scope = openReadScope(auth.db, auth.projectId);
  const projectName = await loadProjectName(scope);
  const parsed = exploreQuery.safeParse(params);
  let outcome: ExploreOutcome;
  if (!parsed.success) {
    outcome = { kind: "refused", message: exploreMessageOf(parsed.error) };
  } else {
    try {
      const answer = await answerExplore(c.env, auth.db, auth.projectId, parsed.data, Date.now());
      outcome = { kind: "answer", answer, grain: parsed.data.grain, by: parsed.data.by, measures: parsed.data.measures };
    } catch (err) {
      if (!(err instanceof ApiError) || (err.code !== "BAD_REQUEST" && err.code !== "ANALYTICS_UNAVAILABLE")) throw err;
      outcome = err.code === "BAD_REQUEST" ? { kind: "refused", message: err.message } : { kind: "unavailable", message: err.message };
    }
  }
  const status = outcome.kind === "refused" ? 400 : outcome.kind === "unavailable" ? 503 : 200;
  return render(c, <ExplorePage projectName={projectName} form={form} outcome={outcome} />, status);
});

/** The rollup runs every 5 minutes: data complete only to more than 15 minutes ago is late. */
export const LATE_AFTER_MS = 15 * 60_000;

/**
 * The banner of a project's pages (docs/ingest.md): its batches waiting in the ingest queue or
 * dead-lettered (incomplete), or `as_of` more than 15 minutes old (late). The health object
 * answers without D1; if it cannot, the page shows no banner rather than no page.
 */
async function dataNotice(c: AppContext, scope: ReadScope): Promise<string | null> {
  const notices: string[] = [];
  try {
    const health = await c.env.INGEST_HEALTH.get(c.env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME)).snapshot();
    const waiting = health.pending.find((p) => p.project_id === scope.projectId);
    if (waiting) notices.push(`Data is incomplete: ${waiting.batches} batch${waiting.batches === 1 ? "" : "es"} received since ${new Date(waiting.oldest_received_at_ms).toISOString().replace("T", " ").slice(0, 16)} UTC wait to be written.`);
    if (health.dead_letters.projects.includes(scope.projectId)) notices.push("Data is incomplete: some batches could not be written and wait for an operator.");
  } catch {
    // No banner rather than no page.
  }
  const asOfMs = await scope.asOfMs.catch(() => null);
  if (asOfMs !== null && scope.nowMs - asOfMs > LATE_AFTER_MS) notices.push(`Data is late: complete only to ${new Date(asOfMs).toISOString().replace("T", " ").slice(0, 16)} UTC.`);
  return notices.length > 0 ? notices.join(" ") : null;
}

/** The tool pages' former address, kept for links and bookmarks: the same page at /tool?name=. */
dashboardApp.get("/tools/:name", (c) => {
  const url = new URL(c.req.url);
  const params = new URLSearchParams(url.search);
  params.delete("name");
  return c.redirect(`/tool?${new URLSearchParams([["name", c.req.param("name")], ...params])}`, 308);
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

/**
 * Sign-in and sign-out set the cookie, so only this site's pages may post them (SPEC §3, 403 else).
 * SameSite=Strict limits sending a cookie, not setting one from a cross-site form's answer.
 */
export const sameOriginForm = csrf();

dashboardApp.post("/signin", sameOriginForm, async (c) => {
  const form = await c.req.parseBody();
  const key = typeof form.key === "string" ? form.key.trim() : "";
  const next = safeNextPath(form.next);
  const { auth, refusal } = await checkSignInKey(c, key);
  if (refusal !== null) return tooManySignIns(c, refusal, (error) => <SignInPage error={error} next={next} />);
  if (!auth) return render(c, <SignInPage error="That is not a valid read key." next={next} />, 401);
  if (!(await startReadSession(c, auth, Date.now()))) {
    return render(c, <ErrorPage message="This worker has no ADMIN_TOKEN set, which signs dashboard sessions: set it (README, deploy) and sign in again." />, 503);
  }
  return c.redirect(next, 303);
});

/**
 * Signs out of the project, and out of an admin session with it: both sessions end on the server,
 * so a copy of either cookie is worth nothing afterwards.
 */
dashboardApp.post("/signout", sameOriginForm, async (c) => {
  await endSessions(c, ["read", "admin"], Date.now());
  return c.redirect("/", 303);
});
