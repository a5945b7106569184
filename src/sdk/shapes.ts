// Recognises the MCP server shapes by structure, never by importing the MCP SDK (a peer; SPEC §4
// "Facts about the MCP SDKs"). The private members relied on are listed in internals.ts.
import { transportKindOf } from "./session.ts";
export type RequestHandler = (request: unknown, extra: unknown) => unknown;

export interface LowLevelServer {
  _requestHandlers: Map<string, RequestHandler>;
  transport?: unknown;
  getClientVersion?: () => { name?: unknown; version?: unknown } | undefined;
  _negotiatedProtocolVersion?: unknown;
  /** The server's own `{name, version}` as given to its constructor (1.x and 2.x); read for `server_version` only. */
  _serverInfo?: unknown;
  _wrapHandler?: unknown;
}

export interface HighLevelServer {
  server: LowLevelServer;
  _registeredTools: Record<string, unknown>;
}

export type ServerShape =
  | { kind: "mcp"; high: HighLevelServer; low: LowLevelServer; major: 1 | 2 }
  | { kind: "server"; low: LowLevelServer; major: 1 | 2 };

function isLowLevel(value: unknown): value is LowLevelServer {
  return (
    value !== null &&
    typeof value === "object" &&
    (value as { _requestHandlers?: unknown })._requestHandlers instanceof Map &&
    typeof (value as { setRequestHandler?: unknown }).setRequestHandler === "function"
  );
}

/** 2.x servers route handlers through `_wrapHandler`; 1.x servers have no such hook. */
function majorOf(low: LowLevelServer): 1 | 2 {
  return typeof low._wrapHandler === "function" ? 2 : 1;
}

export function recogniseServer(value: unknown): ServerShape | null {
  if (value === null || typeof value !== "object") return null;
  const candidate = value as { server?: unknown; _registeredTools?: unknown };
  if (isLowLevel(candidate.server) && candidate._registeredTools !== null && typeof candidate._registeredTools === "object") {
    const low = candidate.server;
    return { kind: "mcp", high: value as HighLevelServer, low, major: majorOf(low) };
  }
  if (isLowLevel(value)) return { kind: "server", low: value, major: majorOf(value) };
  return null;
}

/** `transport` of the startup payload, from the connected transport's class (SPEC §4). */
export function transportKind(transport: unknown): "stdio" | "http" | "sse" | "unknown" {
  const kind = transportKindOf(transport);
  return kind === "memory" ? "unknown" : kind;
}
