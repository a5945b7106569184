// /mcp (SPEC §6): the metrics as a stateless MCP server over streamable HTTP, a fresh server per
// request. The bearer check (read key, or OAuth grant whose read key is still live, SPEC §9) runs
// before any MCP machinery.
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { authenticateGrantKey, requireKey, setAuthenticated } from "../auth.ts";
import { directoryDb } from "../databases.ts";
import { insufficientScope, type OAuthResourceAuth } from "@cloudflare/workers-oauth-provider";
import { METRICS_READ_SCOPE, mcpResource, resourceMetadataUrl, type GrantProps } from "../oauth/authorization-server.ts";
import type { AppEnv } from "../env.ts";
import { apiError } from "../errors.ts";
import { errorName, log } from "../log.ts";
import { runsLocally } from "../alerts/targets.ts";
import { MCP_TOOLS, type ToolContext } from "../mcp/tools.ts";

export const MCP_SERVER_NAME = "mcpulse-edge";
export const MCP_SERVER_VERSION = "0.1.0";
/** Tool arguments are a few short strings: a larger body is refused before it is parsed. */
export const MAX_MCP_BODY_BYTES = 64 * 1024;

const INSTRUCTIONS =
  "Read-only analytics of one MCP server (the project of the key): how models use its tools. " +
  "Start with list_tools_health (worst tools first) or get_insights (ranked findings), then get_tool for " +
  "one tool. Dates are UTC days YYYY-MM-DD, both ends included; the default range is the last 7 days. " +
  "For any other question of the last 90 days — a breakdown by client version, outcome, protocol revision, " +
  "country or argument hash, filtered by any of them, per hour or day — use explore (Analytics Engine; it " +
  "says when figures are sampled or approximate).";

/** The error a tool returns: the message of a refused parameter, never a stack trace or internals. */
function toolErrorMessage(err: unknown): string {
  if (err instanceof HTTPException && err.status === 400) return err.message;
  return "the metrics could not be read; try again later";
}

export function buildMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, { instructions: INSTRUCTIONS });
  for (const tool of MCP_TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
        annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      async (args: Record<string, unknown>) => {
        try {
          const result = await tool.run(ctx, args as never);
          return { content: [{ type: "text" as const, text: JSON.stringify(result) }], structuredContent: result };
        } catch (err) {
          if (!(err instanceof HTTPException)) log.error("mcp_tool_error", { tool: tool.name, name: errorName(err) });
          return { content: [{ type: "text" as const, text: toolErrorMessage(err) }], isError: true };
        }
      },
    );
  }
  return server;
}

/**
 * Whether a request may reach /mcp by `Origin` and `Host` (SPEC §9; DNS rebinding). Locally, only a
 * loopback `Host` (a rebinding page sends its own name as both Host and Origin); then no Origin, our
 * own, `MCP_ALLOWED_ORIGINS`, or any loopback origin on a loopback host. Origins compare serialised.
 */
export function mcpOriginAllowed(request: Request, options: { allowedOrigins?: string | undefined; local?: boolean }): boolean {
  const own = new URL(request.url);
  if (options.local && !isLoopback(own.hostname)) return false;
  const origin = request.headers.get("origin");
  if (origin === null) return true;
  const asSent = serialisedOrigin(origin);
  if (asSent === null) return false;
  const allowed = new Set([own.origin, ...(options.allowedOrigins ?? "").split(",").map(serialisedOrigin).filter((o) => o !== null)]);
  if (allowed.has(asSent)) return true;
  return isLoopback(own.hostname) && isLoopback(new URL(asSent).hostname);
}

function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** `https://Example.com:443/` → `https://example.com`; null for anything that is not an http(s) origin (`null`, garbage). */
function serialisedOrigin(text: string): string | null {
  try {
    const url = new URL(text.trim());
    return url.protocol === "https:" || url.protocol === "http:" ? url.origin : null;
  } catch {
    return null;
  }
}

export const mcpApp = new Hono<AppEnv>();

// Before the credential: a page on a foreign origin learns nothing, not even whether a key is valid.
mcpApp.use("*", async (c, next) => {
  if (!mcpOriginAllowed(c.req.raw, { allowedOrigins: c.env.MCP_ALLOWED_ORIGINS, local: runsLocally(c.env) })) {
    throw apiError("FORBIDDEN", "this Origin or Host may not call /mcp");
  }
  await next();
});
/** What edge.ts hands on for a bearer that is not an OAuth token: the read-key check below decides. */
export const STATIC_KEY_PROPS = { kind: "static_key" } as const;

/** The challenge of /mcp's 401 (RFC 9728 §5.1): where the protected-resource metadata is, and the scope to ask for. */
export function mcpChallenge(origin: string, error?: "invalid_token"): string {
  return `Bearer realm="mcpulse"${error ? `, error="${error}"` : ""}, resource_metadata="${resourceMetadataUrl(origin)}", scope="${METRICS_READ_SCOPE}"`;
}

function grantOf(props: unknown): GrantProps | null {
  const p = props as Partial<GrantProps> | null | undefined;
  if (!p || p.kind !== "oauth" || typeof p.project_id !== "string" || typeof p.key_id !== "string") return null;
  return p as GrantProps;
}

const readKey = requireKey("read", (c) => mcpChallenge(new URL(c.req.url).origin));

mcpApp.use("*", async (c, next) => {
  let props: unknown;
  try {
    props = c.executionCtx.props;
  } catch {
    props = undefined; // no execution context (a direct app.fetch in a test): only a read key can sign in
  }
  const grant = grantOf(props);
  if (!grant) return readKey(c, next);
  const key = grant.scope === METRICS_READ_SCOPE ? await authenticateGrantKey(directoryDb(c.env), grant.key_id, grant.project_id) : null;
  if (!key) {
    throw apiError("UNAUTHORIZED", "this authorization has ended (its read key was revoked); connect again", {
      "WWW-Authenticate": mcpChallenge(new URL(c.req.url).origin, "invalid_token"),
    });
  }
  // A token request may narrow a grant's scope (the library allows it): a token without metrics:read reads nothing.
  const auth = (c.executionCtx as { auth?: OAuthResourceAuth }).auth;
  if (!auth?.scope.includes(METRICS_READ_SCOPE)) return insufficientScope(auth ?? { token: "", audience: mcpResource(new URL(c.req.url).origin), scope: [] }, [METRICS_READ_SCOPE]);
  setAuthenticated(c, key);
  await next();
});

mcpApp.all("/", async (c) => {
  const ctx: ToolContext = { env: c.env, db: c.var.db, projectId: c.var.projectId, nowMs: Date.now() };
  const handler = createMcpHandler(() => buildMcpServer(ctx), {
    legacy: "stateless",
    maxRequestBodySize: MAX_MCP_BODY_BYTES,
  });
  const res = await handler.fetch(c.req.raw);
  c.executionCtx.waitUntil(handler.close());
  return res.status >= 400 ? withRequestId(res, c.var.requestId) : res;
});

/**
 * The MCP SDK's own refusals (a body that is not JSON-RPC, a method other than POST…) are JSON-RPC
 * error objects, not the app's error model: the request's id goes in the error's `data`, the member
 * JSON-RPC leaves to the server, as `{"request_id": …}` (or added to a `data` object the SDK set).
 */
async function withRequestId(res: Response, requestId: string): Promise<Response> {
  if (!res.headers.get("content-type")?.toLowerCase().startsWith("application/json")) return res;
  const text = await res.text();
  const copy = (body: string) => {
    const headers = new Headers(res.headers);
    headers.delete("content-length");
    return new Response(body, { status: res.status, statusText: res.statusText, headers });
  };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return copy(text);
  }
  const error = (body as { error?: unknown } | null)?.error;
  if (typeof error !== "object" || error === null || Array.isArray(error)) return copy(text);
  const rpcError = error as { data?: unknown };
  if (rpcError.data === undefined) rpcError.data = { request_id: requestId };
  else if (typeof rpcError.data === "object" && rpcError.data !== null && !Array.isArray(rpcError.data)) rpcError.data = { ...rpcError.data, request_id: requestId };
  return copy(JSON.stringify(body));
}
