// OAuth 2.1 for /mcp (SPEC §9), the dashboard's part: the authorization page (sign in with a read key,
// approve one project read-only) and the list of connections. The library validates the request.
import { AuthorizationError, CimdFetchError, type AuthRequest, type OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import { Hono } from "hono";
import { ErrorPage, SignInPage } from "../dashboard/layout.tsx";
import { ConnectionsPage, ConsentPage } from "../dashboard/oauth-pages.tsx";
import type { AppContext, AppEnv } from "../env.ts";
import { loadProjectName } from "../metrics/page-data.ts";
import { openReadScope } from "../metrics/scope.ts";
import {
  AUTHORIZE_PATH,
  METRICS_READ_SCOPE,
  listProjectGrants,
  oauthApi,
  privateClientIdHost,
  revokeProjectGrant,
  type GrantMetadata,
  type GrantProps,
} from "../oauth/authorization-server.ts";
import { authenticatePage, render, safeNextPath, sameOriginForm } from "./dashboard.tsx";
import { readSession } from "./dashboard-cookies.ts";

export const oauthApp = new Hono<AppEnv>();

/** Our words for a refused authorization request, by the library's error code (never its text, which may quote the request). */
function refusalMessage(err: AuthorizationError | CimdFetchError): string {
  if (err instanceof CimdFetchError) return "This app's client metadata document could not be fetched or is not valid.";
  if (err.code === "invalid_target") return "This app asks for access to something other than this worker's /mcp.";
  if (err.code === "unsupported_response_type") return "This app asks for a kind of authorization this worker does not offer (only the authorization code with PKCE).";
  return "This authorization request is not valid, or has expired: start connecting again from the app.";
}

/**
 * A refused request: back to the app with the error when the library validated the client and its
 * redirect URI (the error then carries `redirectTo`, with `state` and `iss`), else a page here —
 * never a redirect to an address nobody checked. Anything else (a KV outage) is a 500.
 */
async function refused(c: AppContext, err: unknown): Promise<Response> {
  if (err instanceof AuthorizationError && err.redirectTo) return c.redirect(err.redirectTo, 302);
  if (err instanceof AuthorizationError || err instanceof CimdFetchError) return render(c, <ErrorPage message={refusalMessage(err)} />, 400);
  throw err;
}

function apiOf(c: AppContext): OAuthHelpers | null {
  return oauthApi(c.env, new URL(c.req.url).origin);
}

const NO_OAUTH = "Apps connect over https only (or on localhost in development): open this worker at its https address.";
const PRIVATE_CLIENT = "This app's client id names a private or local host: its metadata document is fetched from public hosts only.";

oauthApp.get(AUTHORIZE_PATH, async (c) => {
  const api = apiOf(c);
  if (!api) return render(c, <ErrorPage message={NO_OAUTH} />, 400);
  const url = new URL(c.req.url);
  // Before the library would fetch a client metadata document: never from this machine or a private network.
  if (url.searchParams.getAll("client_id").some(privateClientIdHost)) return render(c, <ErrorPage message={PRIVATE_CLIENT} />, 400);
  let request: AuthRequest;
  try {
    request = await api.parseAuthRequest(c.req.raw);
  } catch (err) {
    return refused(c, err);
  }
  const self = safeNextPath(url.pathname + url.search);
  const session = await readSession(c, Date.now());
  if (session === "none" || session === "ended") {
    const intro = "An app asks to read a project's metrics. Sign in with that project's read key (mp_read_…) to choose whether to allow it.";
    return render(c, <SignInPage intro={intro} next={self} error={session === "ended" ? "Your session has ended. Sign in again." : undefined} />, 401);
  }
  let details;
  try {
    details = await api.describeConsent(request);
  } catch (err) {
    return refused(c, err);
  }
  const consent = await api.beginConsent(request);
  const projectName = await loadProjectName(openReadScope(session.db, session.projectId));
  const page = await render(
    c,
    <ConsentPage
      projectName={projectName}
      clientName={details.clientName}
      clientDomain={details.clientDomain}
      redirectHost={details.redirectHost}
      redirectIsLoopback={details.redirectIsLoopback}
      handle={consent.handle}
      self={self}
    />,
  );
  // The binding cookie; the framing rules are the dashboard's already (frame-ancestors 'none', DENY).
  for (const cookie of consent.headers.getSetCookie()) page.headers.append("Set-Cookie", cookie);
  return page;
});

oauthApp.post(AUTHORIZE_PATH, sameOriginForm, async (c) => {
  const api = apiOf(c);
  if (!api) return render(c, <ErrorPage message={NO_OAUTH} />, 400);
  const form = await c.req.parseBody();
  const handle = typeof form.handle === "string" ? form.handle : "";
  const session = await readSession(c, Date.now());
  if (session === "none" || session === "ended") {
    return render(c, <ErrorPage message="Your session has ended before you answered: start connecting again from the app." />, 401);
  }
  try {
    if (form.decision !== "approve") {
      const denied = await api.denyConsent(c.req.raw, handle);
      return new Response(null, { status: 302, headers: denied.headers });
    }
    const approved = await api.approveConsent(c.req.raw, handle, { scope: [METRICS_READ_SCOPE] });
    const client = await api.lookupClient(approved.request.clientId);
    const props: GrantProps = { kind: "oauth", project_id: session.projectId, key_id: session.keyId, scope: METRICS_READ_SCOPE };
    const metadata: GrantMetadata = { key_id: session.keyId, client_name: client?.clientName?.trim() || approved.request.clientId };
    const { redirectTo } = await api.completeAuthorization({
      request: approved.request,
      // Grants are listed per project (the dashboard's list; a project's deletion revokes them all).
      userId: session.projectId,
      metadata,
      scope: [METRICS_READ_SCOPE],
      props,
    });
    const headers = new Headers(approved.headers);
    headers.set("Location", redirectTo);
    return new Response(null, { status: 302, headers });
  } catch (err) {
    return refused(c, err);
  }
});

/** Grant ids are the library's (base62-like); anything longer or odd is not one of them. */
const GRANT_ID = /^[A-Za-z0-9_-]{1,128}$/;

oauthApp.get("/connections", async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  const url = new URL(c.req.url);
  const [projectName, grants] = await Promise.all([
    loadProjectName(openReadScope(auth.db, auth.projectId)),
    listProjectGrants(c.env, url.origin, auth.projectId),
  ]);
  const rows = grants.map((g) => {
    const meta = (g.metadata ?? {}) as Partial<GrantMetadata>;
    return {
      grantId: g.id,
      clientName: meta.client_name ?? g.clientId,
      clientId: g.clientId,
      createdAt: new Date(g.createdAt * 1000).toISOString().replace("T", " ").slice(0, 16) + " UTC",
      keyId: meta.key_id ?? "",
    };
  });
  return render(c, <ConnectionsPage projectName={projectName} rows={rows} revoked={url.searchParams.get("revoked") === "1"} />);
});

oauthApp.post("/connections/revoke", sameOriginForm, async (c) => {
  const auth = await authenticatePage(c);
  if ("response" in auth) return auth.response;
  const form = await c.req.parseBody();
  const grantId = typeof form.grant === "string" && GRANT_ID.test(form.grant) ? form.grant : "";
  // Only a grant of the session's own project: another project's grant id revokes nothing.
  if (!grantId || !(await revokeProjectGrant(c.env, new URL(c.req.url).origin, auth.projectId, grantId))) {
    return render(c, <ErrorPage message="No such connection in this project." />, 404);
  }
  return c.redirect("/connections?revoked=1", 303);
});
