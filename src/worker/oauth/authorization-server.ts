// OAuth 2.1 for /mcp (SPEC §9): configures @cloudflare/workers-oauth-provider, which implements the
// protocol; a grant is one project, read-only, approved with one of its read keys. The worker is
// self-hosted and does not know its origin, so issuer and resource are the request's origin (one
// server per origin); only https, or http on loopback, gets OAuth.
import { OAuthAuthorizationServer, type GrantSummary, type OAuthHelpers } from "@cloudflare/workers-oauth-provider";
import type { Env } from "../env.ts";

/** The one scope a grant carries: the project's metrics, read-only (SPEC §9). */
export const METRICS_READ_SCOPE = "metrics:read";
export const MCP_PATH = "/mcp";
export const AUTHORIZE_PATH = "/oauth/authorize";
export const TOKEN_PATH = "/oauth/token";
export const REGISTER_PATH = "/oauth/register";
export const AUTHORIZATION_SERVER_METADATA_PATH = "/.well-known/oauth-authorization-server";
export const PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";
/** An access token lives an hour; a grant 30 days from its approval, however often it is refreshed (the library's defaults). */
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 24 * 3600;

/**
 * What a grant's tokens carry to /mcp (encrypted by the library under the token): the project, and
 * the read key the person signed in with — /mcp checks on every call that the key is still live, so
 * revoking it ends the grant's tokens at once, whatever the KV holds.
 */
export type GrantProps = { kind: "oauth"; project_id: string; key_id: string; scope: typeof METRICS_READ_SCOPE };
/** Stored in clear beside the grant (the library lists grants by it): which key approved it, for revocation and the dashboard. */
export type GrantMetadata = { key_id: string; client_name: string };

/** `resource` of /mcp on this origin (RFC 9728, RFC 8707): the request's origin + /mcp. */
export function mcpResource(origin: string): string {
  return origin + MCP_PATH;
}

/** The protected-resource metadata URL the 401 challenge names (RFC 9728 §5.1). */
export function resourceMetadataUrl(origin: string): string {
  return origin + PROTECTED_RESOURCE_METADATA_PATH + MCP_PATH;
}

/** The options of the authorization server for one origin. */
function serverOptions(origin: string) {
  return {
    issuer: origin,
    resources: [mcpResource(origin)],
    authorizeEndpoint: AUTHORIZE_PATH,
    tokenEndpoint: TOKEN_PATH,
    clientRegistrationEndpoint: REGISTER_PATH,
    scopesSupported: [METRICS_READ_SCOPE],
    accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTTL: REFRESH_TOKEN_TTL_SECONDS,
    // CIMD, MCP 2026-07-28's preferred registration; the library offers it only with the
    // `global_fetch_strictly_public` compatibility flag (wrangler.toml), so its fetches reach public hosts only.
    clientIdMetadataDocumentEnabled: true,
  };
}

/** Servers are few (one per origin the worker is reached under); the bound keeps a flood of Host names from growing memory. */
const MAX_ORIGINS = 16;
const servers = new Map<string, OAuthAuthorizationServer<Env> | null>();

/** The authorization server of `origin`, or null when OAuth cannot be offered there (plain http on a public host). */
export function authorizationServerFor(origin: string): OAuthAuthorizationServer<Env> | null {
  const known = servers.get(origin);
  if (known !== undefined) return known;
  let server: OAuthAuthorizationServer<Env> | null;
  try {
    server = new OAuthAuthorizationServer<Env>(serverOptions(origin));
  } catch (err) {
    // The library refuses an issuer that is not https (or http on loopback): no OAuth on that origin.
    if (!(err instanceof TypeError)) throw err;
    server = null;
  }
  if (servers.size >= MAX_ORIGINS) servers.delete(servers.keys().next().value!);
  servers.set(origin, server);
  return server;
}

/** The library's helpers (consent, grants) for `origin`, or null where OAuth is not offered. */
export function oauthApi(env: Env, origin: string): OAuthHelpers | null {
  return authorizationServerFor(origin)?.getOAuthApi(env) ?? null;
}

/**
 * The helpers for listing and revoking grants: grants are stored by project whatever origin issued
 * them, so any origin the library accepts will do; the request's own when it can, else loopback.
 */
function grantsApi(env: Env, origin: string): OAuthHelpers {
  return oauthApi(env, origin) ?? oauthApi(env, "http://localhost")!;
}

/** A project's grants, newest first (the library keeps no "last used"). */
export async function listProjectGrants(env: Env, origin: string, projectId: string): Promise<GrantSummary[]> {
  const api = grantsApi(env, origin);
  const grants: GrantSummary[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.listUserGrants(projectId, cursor === undefined ? {} : { cursor });
    grants.push(...page.items);
    cursor = page.cursor;
  } while (cursor);
  return grants.sort((a, b) => b.createdAt - a.createdAt);
}

/** Revokes one grant of the project, with its tokens; false when the project has no such grant. */
export async function revokeProjectGrant(env: Env, origin: string, projectId: string, grantId: string): Promise<boolean> {
  const grants = await listProjectGrants(env, origin, projectId);
  if (!grants.some((g) => g.id === grantId)) return false;
  await grantsApi(env, origin).revokeGrant(grantId, projectId);
  return true;
}

/** Revokes the grants a read key approved (the key's revocation), or every grant of the project (its deletion). */
export async function revokeGrantsOf(env: Env, origin: string, projectId: string, keyId: string | null): Promise<number> {
  const api = grantsApi(env, origin);
  const grants = await listProjectGrants(env, origin, projectId);
  const doomed = grants.filter((g) => keyId === null || (g.metadata as Partial<GrantMetadata> | null)?.key_id === keyId);
  for (const grant of doomed) await api.revokeGrant(grant.id, projectId);
  return doomed.length;
}

/** Whether a CIMD client id names a host that is not on the public internet (checked before the library fetches it). */
export function privateClientIdHost(clientId: string): boolean {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  if (url.protocol !== "https:") return false;
  return isPrivateHostname(url.hostname);
}

/**
 * Loopback, private, link-local, CGNAT and unique-local addresses, and the names that mean this
 * machine or a private network. A DNS name that resolves to such an address is the compatibility
 * flag's to refuse (wrangler.toml); this check refuses what can be told from the URL alone, also
 * where the flag has no effect (local development).
 */
export function isPrivateHostname(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal") || host.endsWith(".home.arpa")) return true;
  if (!host.includes(".") && !host.includes(":")) return true;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || a >= 224;
  }
  if (host.includes(":")) {
    const mapped = /^::ffff:(.+)$/.exec(host);
    if (mapped) return mapped[1]!.includes(".") ? isPrivateHostname(mapped[1]!) : true;
    return host === "::" || host === "::1" || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  }
  return false;
}
