// The worker's fetch at the edge: OAuth 2.1 for /mcp (SPEC §9) wrapped around the Hono app. A valid
// OAuth token reaches /mcp with its grant's project in `ctx.props`; a static read key goes on to the
// route's own key check (throttled, SPEC §3). No tool learns how the caller signed in.
import { OAuthResourceServer } from "@cloudflare/workers-oauth-provider";
import { app, requestIdOf } from "./app.ts";
import type { Env } from "./env.ts";
import { REQUEST_ID_HEADER } from "./errors.ts";
import { runsLocally } from "./alerts/targets.ts";
import {
  AUTHORIZATION_SERVER_METADATA_PATH,
  MCP_PATH,
  METRICS_READ_SCOPE,
  PROTECTED_RESOURCE_METADATA_PATH,
  REGISTER_PATH,
  TOKEN_PATH,
  authorizationServerFor,
  mcpResource,
  privateClientIdHost,
} from "./oauth/authorization-server.ts";
import { STATIC_KEY_PROPS, mcpOriginAllowed } from "./routes/mcp.ts";

/** The library's own tokens are `userId:grantId:secret`; anything else is a static key for the app to check. */
function isOAuthToken(token: string): boolean {
  return token.split(":").length === 3;
}

const MAX_ORIGINS = 16;
const resourceServers = new Map<string, OAuthResourceServer<Env, unknown>>();

function resourceServerFor(origin: string): OAuthResourceServer<Env, unknown> | null {
  const authorizationServer = authorizationServerFor(origin);
  if (!authorizationServer) return null;
  let server = resourceServers.get(origin);
  if (!server) {
    server = new OAuthResourceServer<Env, unknown>({
      resourceMetadata: { resource: mcpResource(origin), authorization_servers: [origin], resource_name: "MCPulse Edge metrics" },
      requiredScopes: [METRICS_READ_SCOPE],
      validateToken: (env) => async (resource, token) =>
        isOAuthToken(token) ? authorizationServer.validateToken(resource, token, env) : { props: STATIC_KEY_PROPS, audience: resource },
      handler: { fetch: (request, env, ctx) => app.fetch(request, env, ctx) },
    });
    if (resourceServers.size >= MAX_ORIGINS) resourceServers.delete(resourceServers.keys().next().value!);
    resourceServers.set(origin, server);
  }
  return server;
}

/**
 * `nosniff` on every answer, the library's too (SPEC §3: also on API answers), and the request's id
 * (app.ts's `requestIdOf`: the cf-ray, else a fresh one) on the library's own answers — an answer the
 * app wrote keeps the app's.
 */
function withEdgeHeaders(response: Response, requestId: string): Response {
  if (response.headers.get("X-Content-Type-Options") === "nosniff" && response.headers.has(REQUEST_ID_HEADER)) return response;
  const copy = new Response(response.body, response);
  copy.headers.set("X-Content-Type-Options", "nosniff");
  if (!copy.headers.has(REQUEST_ID_HEADER)) copy.headers.set(REQUEST_ID_HEADER, requestId);
  return copy;
}

/**
 * A token or revocation request of a Client ID Metadata Document client on a private host: refused
 * before the library would fetch its document (the authorization page refuses it the same way).
 */
async function privateCimdClient(request: Request): Promise<boolean> {
  if (request.method !== "POST") return false;
  const type = request.headers.get("content-type") ?? "";
  if (!type.startsWith("application/x-www-form-urlencoded")) return false;
  const form = new URLSearchParams(await request.clone().text());
  const clientId = form.get("client_id");
  return clientId !== null && privateClientIdHost(clientId);
}

export async function edgeFetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const url = new URL(request.url);
  const path = url.pathname;
  const isMcp = path === MCP_PATH || path.startsWith(MCP_PATH + "/");
  // A foreign Origin or Host learns nothing at /mcp, not even whether OAuth is offered: the app's 403.
  if (isMcp && !mcpOriginAllowed(request, { allowedOrigins: env.MCP_ALLOWED_ORIGINS, local: runsLocally(env) })) return app.fetch(request, env, ctx);
  const resourceServer = resourceServerFor(url.origin);
  if (!resourceServer) return app.fetch(request, env, ctx);
  const requestId = requestIdOf(request.headers.get("cf-ray") ?? undefined);
  if (isMcp) return withEdgeHeaders(await resourceServer.fetch(request, env, ctx), requestId);
  if (path === PROTECTED_RESOURCE_METADATA_PATH || path === PROTECTED_RESOURCE_METADATA_PATH + MCP_PATH) {
    // The origin-level form names the same resource (SPEC §9): clients that probe it first find /mcp's document.
    const metadataUrl = new URL(PROTECTED_RESOURCE_METADATA_PATH + MCP_PATH, url.origin);
    return withEdgeHeaders(await resourceServer.fetch(new Request(metadataUrl, request), env, ctx), requestId);
  }
  if (path === AUTHORIZATION_SERVER_METADATA_PATH || path === TOKEN_PATH || path === REGISTER_PATH) {
    if (path === TOKEN_PATH && (await privateCimdClient(request))) {
      const refusal = { error: "invalid_client", error_description: "client metadata documents are fetched from public hosts only", request_id: requestId };
      return withEdgeHeaders(Response.json(refusal, { status: 401 }), requestId);
    }
    return withEdgeHeaders(await authorizationServerFor(url.origin)!.fetch(request, env, ctx), requestId);
  }
  return app.fetch(request, env, ctx);
}
