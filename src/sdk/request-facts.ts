// The facts one request carries, gathered for watch(): the client it comes from, its protocol
// revision, and what SPEC §4's session order reads (session.ts's pure `sessionSource` decides on
// them). Only reads: nothing here sends, or remembers anything but what the destination keeps.
import { MAX_CLIENT_NAME_CHARS, MAX_CLIENT_VERSION_CHARS, MAX_PROTOCOL_VERSION_CHARS, MAX_SERVER_VERSION_CHARS } from "../shared/limits.ts";
import { CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY, UNKNOWN_CLIENT } from "./constants.ts";
import { transportKindOf, type SessionFacts } from "./session.ts";
import type { WatchState } from "./watch-state.ts";

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object";
}

/** The first `max` code points of `text` (SPEC §1.2: caps count code points, a pair is never split). */
function cutToCodePoints(text: string, max: number): string {
  if (text.length <= max) return text;
  let units = 0;
  for (let points = 0; points < max && units < text.length; points++) {
    const unit = text.charCodeAt(units);
    const next = units + 1 < text.length ? text.charCodeAt(units + 1) : 0;
    units += unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1;
  }
  return text.slice(0, units);
}

export function clientName(name: unknown): string | undefined {
  if (typeof name !== "string" || name.length === 0) return undefined;
  return cutToCodePoints(name, MAX_CLIENT_NAME_CHARS);
}

export function versionText(value: unknown): string | null {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_PROTOCOL_VERSION_CHARS ? value : null;
}

/** Per-request client information (MCP 2026-07-28): 2.x lifts it into `ctx.mcpReq.envelope`. */
function perRequestMeta(request: unknown, extra: unknown, key: string): unknown {
  const envelope = isRecord(extra) && isRecord(extra.mcpReq) ? extra.mcpReq.envelope : undefined;
  if (isRecord(envelope) && envelope[key] !== undefined) return envelope[key];
  const params = isRecord(request) ? request.params : undefined;
  const meta = isRecord(params) ? params._meta : undefined;
  if (isRecord(meta) && meta[key] !== undefined) return meta[key];
  const extraMeta = isRecord(extra) ? extra._meta : undefined;
  return isRecord(extraMeta) ? extraMeta[key] : undefined;
}

/** A version string as the wire takes it (SPEC §1.2: 1–64 chars), else not sent. */
function boundedVersion(value: unknown, maxChars: number): string | null {
  return typeof value === "string" && value.length > 0 ? cutToCodePoints(value, maxChars) : null;
}

/** A `clientInfo.version` as sent: cut to 64 code points, null when not text. */
export function clientVersionText(value: unknown): string | null {
  return boundedVersion(value, MAX_CLIENT_VERSION_CHARS);
}

/**
 * The client's own version (`clientInfo.version`): from the request itself (MCP 2026-07-28), else
 * from the initialize this server object saw. Descriptive only: null when nothing says.
 */
export function clientVersionOf(state: WatchState, request: unknown, extra: unknown): string | null {
  const info = perRequestMeta(request, extra, CLIENT_INFO_META_KEY);
  if (isRecord(info)) return clientVersionText(info.version);
  if (state.connectionClientVersion !== undefined) return state.connectionClientVersion;
  try {
    return clientVersionText(state.shape.low.getClientVersion?.()?.version);
  } catch {
    return null; // rule 1
  }
}

/** The server's own version, as it named itself to its clients (`serverInfo.version`). */
export function serverVersionOf(state: WatchState): string | null {
  const info = state.shape.low._serverInfo;
  return isRecord(info) ? boundedVersion(info.version, MAX_SERVER_VERSION_CHARS) : null;
}

export function perRequestClient(request: unknown, extra: unknown): string | undefined {
  const info = perRequestMeta(request, extra, CLIENT_INFO_META_KEY);
  return isRecord(info) ? clientName(info.name) : undefined;
}

export function transportSessionId(state: WatchState, extra: unknown): string | undefined {
  const fromExtra = isRecord(extra) ? extra.sessionId : undefined;
  if (typeof fromExtra === "string" && fromExtra.length > 0) return fromExtra;
  const transport = state.shape.low.transport;
  const fromTransport = isRecord(transport) ? transport.sessionId : undefined;
  return typeof fromTransport === "string" && fromTransport.length > 0 ? fromTransport : undefined;
}

/** The request's `_meta`: 2.x lifts it into `ctx.mcpReq._meta`, 1.x passes `extra._meta`. */
function requestMeta(request: unknown, extra: unknown): Record<string, unknown> | undefined {
  const mcpReq = isRecord(extra) ? extra.mcpReq : undefined;
  if (isRecord(mcpReq) && isRecord(mcpReq._meta)) return mcpReq._meta;
  const params = isRecord(request) ? request.params : undefined;
  if (isRecord(params) && isRecord(params._meta)) return params._meta;
  const extraMeta = isRecord(extra) ? extra._meta : undefined;
  return isRecord(extraMeta) ? extraMeta : undefined;
}

/** What `sessionKey` sees of a request; its throw or non-string answer counts as none (rule 1). */
function askSessionKey(state: WatchState, request: unknown, extra: unknown, clientName: string): unknown {
  const sessionKey = state.options.sessionKey;
  if (sessionKey === undefined) return undefined;
  try {
    const http = isRecord(extra) ? extra.http : undefined;
    const authInfo = isRecord(extra) && extra.authInfo !== undefined ? extra.authInfo : isRecord(http) ? http.authInfo : undefined;
    const sessionId = transportSessionId(state, extra);
    return sessionKey({ sessionId, meta: requestMeta(request, extra), authInfo, clientName });
  } catch {
    return undefined; // rule 1: the host's own function must not break its tool call
  }
}

/** The facts SPEC §4's session order reads, gathered from one request (see session.ts). */
export function sessionFacts(state: WatchState, request: unknown, extra: unknown, clientName: string): SessionFacts {
  const transport = state.shape.low.transport;
  return {
    fromOption: askSessionKey(state, request, extra, clientName),
    meta: requestMeta(request, extra),
    transportSessionId: transportSessionId(state, extra),
    transport: transportKindOf(transport),
    connection: isRecord(transport) ? transport : undefined,
  };
}

export function requestProtocolVersion(state: WatchState, request: unknown, extra: unknown): string | null {
  return versionText(perRequestMeta(request, extra, PROTOCOL_VERSION_META_KEY)) ?? versionText(state.shape.low._negotiatedProtocolVersion);
}

/**
 * The client behind this request (SPEC §4): its own per-request information first (`perRequest`,
 * what perRequestClient read from it), then the initialize of its transport session (a fresh
 * server object per request finds it there), then this server object's initialize — never a
 * process-wide "last client", so concurrent clients never overwrite each other.
 */
export function clientOfRequest(state: WatchState, extra: unknown, perRequest: string | undefined): string {
  if (perRequest) return perRequest;
  const sessionId = isRecord(extra) ? extra.sessionId : undefined;
  if (typeof sessionId === "string") {
    const remembered = state.destination.clientOf(sessionId);
    if (remembered) return remembered;
  }
  if (state.connectionClient) return state.connectionClient;
  try {
    const fromServer = clientName(state.shape.low.getClientVersion?.()?.name);
    if (fromServer) return fromServer;
  } catch {
    // not available on this version
  }
  return UNKNOWN_CLIENT;
}
