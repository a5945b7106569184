// watch(server, options): instruments an MCP server in place (SPEC §4). The low-level Server's
// `_requestHandlers` Map is hooked — its `tools/call` and `initialize` entries wrapped and its
// `set` patched so handlers installed later are wrapped too — and on McpServer each tool's
// callback is wrapped at dispatch time, so tools registered, updated or renamed after watch() are
// covered. Every entry point swallows its own failures (rule 1), records synchronously (rule 2)
// and keeps only names, sizes, hashes and outcomes (rule 3).
// The hashing modules directly, not src/shared/index.ts: that one also loads the Zod schemas,
// which the producer never needs at run time (tests validate every payload with them).
import { descriptionNorm } from "../shared/description.ts";
import { codePointLength, descriptionHash, schemaHash, utf16Length } from "../shared/hash.ts";
import { callArgsHash } from "./args-hash.ts";
import {
  MAX_CLIENT_NAME_CHARS,
  MAX_DURATION_MS,
  MAX_PROTOCOL_VERSION_CHARS,
  MAX_STARTUP_TOOLS,
  MAX_TOOL_NAME_CHARS,
} from "../shared/limits.ts";
import { valueInResult } from "./agreement.ts";
import { elapsedMs, perfNow, wallMsAt } from "./clock.ts";
import {
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SDK_ID,
  UNKNOWN_CLIENT,
} from "./constants.ts";
import { debugLog, type DebugLog } from "./debug.ts";
import { knownMcpSdkVersion, learnMcpSdkVersion } from "./mcp-sdk-version.ts";
import { isEmptyResult } from "./empty.ts";
import { resolveOptions, type ResolvedOptions, type WatchOptions } from "./options.ts";
import { outcomeOfHandler, outcomeOfToolCallback, type CallbackRecord } from "./outcome.ts";
import { destinationFor, type Destination } from "./destination.ts";
import { sessionSource, transportKindOf, type SessionFacts } from "./session.ts";
import {
  recogniseServer,
  transportKind,
  type LowLevelServer,
  type RequestHandler,
  type ServerShape,
} from "./shapes.ts";

const MAX_TOOLS_LIST_PAGES = 50;

/** Marks functions this SDK made, so nothing is wrapped twice. */
const INSTRUMENTED = Symbol.for("mcpulse-edge.sdk.instrumented");
/**
 * Server objects already watched (an McpServer and its inner Server both count); kept on
 * globalThis so a second copy of this package in the process sees the first one's.
 */
const WATCHED_KEY = Symbol.for("mcpulse-edge.sdk.watched");
const watched: WeakSet<object> = ((globalThis as unknown as Record<symbol, WeakSet<object> | undefined>)[WATCHED_KEY] ??= new WeakSet<object>());
/**
 * Ties a tool callback to its tools/call: keyed by the request's AbortSignal, which the MCP SDKs
 * pass along to the callback (1.x `extra.signal`, 2.x `ctx.mcpReq.signal`) and which survives the
 * shallow copies the SDKs make of that context.
 */
const callbackBySignal = new WeakMap<object, CallbackRecord>();

interface WatchState {
  shape: ServerShape;
  options: ResolvedOptions;
  destination: Destination;
  log: DebugLog;
  /** The client named in this server object's own initialize. */
  connectionClient: string | undefined;
  /** The version of the MCP SDK this server object comes from, once read from its calls (null: not yet, or unknowable). */
  mcpSdkVersion: string | null;
  /** Stack readings left before giving up (code that is not the MCP SDK on disk: bundled, workerd). */
  versionReadingsLeft: number;
  /** 2.x: what the negotiated codec adds to a plain tools/call result (see sentLength). */
  codecGrowth: CodecGrowth | undefined;
}

const MAX_VERSION_READINGS = 4;

/**
 * Reads `mcp_sdk_version` from the current call stack: called only inside hooks that the MCP SDK
 * itself calls (its setRequestHandler, its dispatch of initialize or of a first per-request
 * client), a few times at most, never once it is known.
 */
function learnVersion(state: WatchState): void {
  if (state.mcpSdkVersion !== null || state.versionReadingsLeft <= 0) return;
  state.versionReadingsLeft--;
  try {
    state.mcpSdkVersion = learnMcpSdkVersion(state.shape.low, learnVersion);
  } catch {
    state.mcpSdkVersion = null;
  }
}

interface CallInProgress {
  /** `""` when nothing tells this request's conversation apart (SPEC §2.2, §4). */
  sessionId: string;
  toolName: string;
  argsHash: string;
  clientName: string;
  startedAtMs: number;
  startedPerfMs: number;
  callback: CallbackRecord | undefined;
  /** The request's AbortSignal: once aborted, the MCP SDK sends the client nothing. */
  signal: AbortSignal | undefined;
}

/**
 * Instruments `server` — an `McpServer` or a low-level `Server` of `@modelcontextprotocol/sdk` 1.x
 * or `@modelcontextprotocol/server` 2.x — and returns the same object. Anything else, invalid
 * options, or a second watch() of the same object: returned untouched. Never throws.
 */
export function watch<T>(server: T, options: WatchOptions): T {
  try {
    instrument(server, options);
  } catch (error) {
    try {
      if ((options as { debug?: unknown } | undefined)?.debug === true) {
        debugLog(true)(`watch() failed and left the server as it was: ${String(error)}`);
      }
    } catch {
      // rule 1
    }
  }
  return server;
}

function instrument(server: unknown, rawOptions: unknown): void {
  const verdict = resolveOptions(rawOptions);
  if (!verdict.ok) {
    debugLog(verdict.debug)(`${verdict.reason}; server returned untouched`);
    return;
  }
  const { options } = verdict;
  const log = debugLog(options.debug);
  if (server !== null && typeof server === "object" && watched.has(server)) {
    log("watch() called again on the same server; nothing to do");
    return;
  }
  const shape = recogniseServer(server);
  if (shape === null) {
    log("not an McpServer or Server of the MCP SDK; returned untouched");
    return;
  }
  if (watched.has(shape.low)) {
    log("this server's underlying Server is already watched; nothing to do");
    return;
  }
  watched.add(server as object);
  watched.add(shape.low);
  const destination = destinationFor(options.endpoint, options.key);
  if (options.debug) destination.debug = true;
  const state: WatchState = {
    shape,
    options,
    destination,
    log,
    connectionClient: undefined,
    mcpSdkVersion: knownMcpSdkVersion(shape.low),
    versionReadingsLeft: MAX_VERSION_READINGS,
    codecGrowth: undefined,
  };
  hookRequestHandlers(state);
  startupIfAlreadyInitialized(state);
  log(`watching ${shape.kind === "mcp" ? "McpServer" : "Server"} (MCP SDK ${shape.major}.x), sending to ${destination.ingestUrl}`);
}

/**
 * watch() after the client's initialize (a server instrumented once it is connected): that
 * initialize was missed, so send its startup now, with the client the server already knows.
 */
function startupIfAlreadyInitialized(state: WatchState): void {
  const low = state.shape.low as LowLevelServer & { getNegotiatedProtocolVersion?: () => unknown };
  let known: string | undefined;
  try {
    known = clientName(low.getClientVersion?.()?.name);
  } catch {
    known = undefined;
  }
  if (!known) return;
  state.connectionClient = known;
  let negotiated: string | null = null;
  try {
    negotiated = versionText(low.getNegotiatedProtocolVersion?.()) ?? versionText(low._negotiatedProtocolVersion);
  } catch {
    negotiated = null;
  }
  const source = sessionSource({
    fromOption: undefined,
    meta: undefined,
    transportSessionId: transportSessionId(state, undefined),
    transport: transportKindOf(low.transport),
    connection: isRecord(low.transport) ? low.transport : undefined,
  });
  const destination = state.destination;
  const sessionId = source !== null ? destination.sessions.lookup(source).id : destination.processSessionId;
  void sendStartup(state, sessionId, known, negotiated, low.transport);
}

function hookRequestHandlers(state: WatchState): void {
  const handlers = state.shape.low._requestHandlers;
  const originalSet = handlers.set;
  const existing = [...handlers.entries()];
  // Handlers installed later (McpServer installs tools/call at the first registerTool).
  handlers.set = function setInstrumented(this: Map<string, RequestHandler>, method: string, handler: RequestHandler) {
    let installed = handler;
    try {
      learnVersion(state); // the MCP SDK's own setRequestHandler is the caller
      installed = instrumentHandler(state, method, handler);
    } catch {
      installed = handler;
    }
    return originalSet.call(this, method, installed);
  };
  for (const [method, handler] of existing) {
    originalSet.call(handlers, method, instrumentHandler(state, method, handler));
  }
}

function markInstrumented<F extends object>(fn: F): F {
  Object.defineProperty(fn, INSTRUMENTED, { value: true });
  return fn;
}

function isInstrumented(fn: unknown): boolean {
  return typeof fn === "function" && (fn as unknown as Record<symbol, unknown>)[INSTRUMENTED] === true;
}

function instrumentHandler(state: WatchState, method: string, handler: RequestHandler): RequestHandler {
  if (typeof handler !== "function" || isInstrumented(handler)) return handler;
  if (method === "tools/call") return markInstrumented(toolsCallHandler(state, handler));
  if (method === "initialize") return markInstrumented(initializeHandler(state, handler));
  return markInstrumented(identityHandler(state, handler));
}

// ---- client identity ----

function isRecord(value: unknown): value is Record<string, unknown> {
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

function clientName(name: unknown): string | undefined {
  if (typeof name !== "string" || name.length === 0) return undefined;
  return cutToCodePoints(name, MAX_CLIENT_NAME_CHARS);
}

function versionText(value: unknown): string | null {
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

function perRequestClient(request: unknown, extra: unknown): string | undefined {
  const info = perRequestMeta(request, extra, CLIENT_INFO_META_KEY);
  return isRecord(info) ? clientName(info.name) : undefined;
}

function transportSessionId(state: WatchState, extra: unknown): string | undefined {
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
function sessionFacts(state: WatchState, request: unknown, extra: unknown, clientName: string): SessionFacts {
  const transport = state.shape.low.transport;
  return {
    fromOption: askSessionKey(state, request, extra, clientName),
    meta: requestMeta(request, extra),
    transportSessionId: transportSessionId(state, extra),
    transport: transportKindOf(transport),
    connection: isRecord(transport) ? transport : undefined,
  };
}

/**
 * This request's `session_id` (SPEC §4 "Sessions are conversations"): a map lookup for a known
 * conversation; a new one gets its own startup, so its schema cost is right. `""` when no session
 * is known. `sessionlessStartup`: a tools/call of a client that names itself per request and is in
 * no session sends that client's tool list once under the process's own id (dead tools and schema
 * cost need the list). Other requests without a session send nothing: a client that sends its
 * conversation id only with its calls would otherwise add a session with no calls.
 */
function sessionOfRequest(state: WatchState, request: unknown, extra: unknown, clientName: string, sessionlessStartup: boolean): string {
  const source = sessionSource(sessionFacts(state, request, extra, clientName));
  const destination = state.destination;
  if (source === null) {
    // A 2025-era stateless request names no client: its initialize already sent the tool list.
    if (sessionlessStartup && destination.claimSessionlessStartup(clientName)) {
      void sendStartup(state, destination.processSessionId, clientName, requestProtocolVersion(state, request, extra), state.shape.low.transport);
    }
    return "";
  }
  const { id, isNew } = destination.sessions.lookup(source);
  if (isNew) void sendStartup(state, id, clientName, requestProtocolVersion(state, request, extra), state.shape.low.transport);
  return id;
}

function requestProtocolVersion(state: WatchState, request: unknown, extra: unknown): string | null {
  return versionText(perRequestMeta(request, extra, PROTOCOL_VERSION_META_KEY)) ?? versionText(state.shape.low._negotiatedProtocolVersion);
}

/**
 * The client behind this request (SPEC §4): its own per-request information first, then the
 * initialize of its transport session (a fresh server object per request finds it there), then
 * this server object's initialize — never a process-wide "last client", so concurrent clients
 * never overwrite each other.
 */
function clientOfRequest(state: WatchState, request: unknown, extra: unknown): string {
  const perRequest = perRequestClient(request, extra);
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

/**
 * Requests other than tools/call: a client of the 2026-07-28 revision skips initialize and names
 * itself in every request, so its first request of a new session sends that session's startup.
 */
function identityHandler(state: WatchState, handler: RequestHandler): RequestHandler {
  return function identified(this: unknown, request: unknown, extra: unknown) {
    try {
      const name = perRequestClient(request, extra);
      if (name) {
        learnVersion(state); // inside the MCP SDK's dispatch of this request
        sessionOfRequest(state, request, extra, name, false);
      }
    } catch {
      // rule 1
    }
    return handler.call(this, request, extra);
  };
}

function initializeHandler(state: WatchState, handler: RequestHandler): RequestHandler {
  return function initialize(this: unknown, request: unknown, extra: unknown) {
    let name: string = UNKNOWN_CLIENT;
    let requestedVersion: string | null = null;
    // The session this initialize opens, registered before the handler runs so that a tools/call
    // sent right behind it (stdio delivers both at once) finds it and sends no startup of its own.
    let opened: string | undefined;
    try {
      learnVersion(state); // inside the MCP SDK's dispatch of initialize
      const params = isRecord(request) ? request.params : undefined;
      // Read from the initialize request itself: getClientVersion() is set only once it settles.
      name = (isRecord(params) && isRecord(params.clientInfo) ? clientName(params.clientInfo.name) : undefined) ?? UNKNOWN_CLIENT;
      requestedVersion = isRecord(params) ? versionText(params.protocolVersion) : null;
      state.connectionClient = name;
      const sessionId = transportSessionId(state, extra);
      if (sessionId) state.destination.rememberClient(sessionId, name);
      const source = sessionSource(sessionFacts(state, request, extra, name));
      if (source !== null) opened = state.destination.sessions.lookup(source).id;
    } catch {
      // rule 1
    }
    const answer = handler.call(this, request, extra);
    try {
      const transport = state.shape.low.transport;
      Promise.resolve(answer).then(
        (result) => {
          try {
            const sessionId = transportSessionId(state, extra);
            if (sessionId) state.destination.rememberClient(sessionId, name);
            const version = (isRecord(result) ? versionText(result.protocolVersion) : null) ?? requestedVersion;
            // Every initialize sends its tool list (SPEC §4), to the session it opens; a stateless
            // server's initialize opens none, and its client's list goes out once per process.
            const destination = state.destination;
            if (opened !== undefined) {
              void sendStartup(state, opened, name, version, transport);
            } else if (destination.claimSessionlessStartup(name)) {
              void sendStartup(state, destination.processSessionId, name, version, transport);
            }
          } catch {
            // rule 1
          }
        },
        () => undefined, // the client gets the SDK's own error; no startup for a failed initialize
      );
    } catch {
      // rule 1
    }
    return answer;
  };
}

// ---- startup ----

function syntheticContext(state: WatchState, method: string): Record<string, unknown> {
  const signal = new AbortController().signal;
  const id = `mcpulse-${method}`;
  const transport = state.shape.low.transport;
  const sessionId = isRecord(transport) && typeof transport.sessionId === "string" ? transport.sessionId : undefined;
  const refuse = async () => {
    throw new Error("not available while MCPulse reads the tool list");
  };
  // Both context shapes at once: 1.x `extra` and 2.x `ctx`.
  return {
    signal,
    requestId: id,
    sessionId,
    sendNotification: async () => undefined,
    sendRequest: refuse,
    mcpReq: {
      id,
      method,
      signal,
      send: refuse,
      notify: async () => undefined,
      log: async () => undefined,
      requestState: () => undefined,
    },
  };
}

interface StartupTool {
  name: string;
  schema_bytes: number;
  schema_hash: string;
  description_hash: string;
  description_norm: string;
  policy: { requires_authorization: boolean; requires_verified_identity: boolean } | null;
}

/** The tool list from the server's own tools/list handler, every page, at most 500 tools. */
async function listTools(state: WatchState): Promise<StartupTool[]> {
  const listHandler = state.shape.low._requestHandlers.get("tools/list");
  if (typeof listHandler !== "function") return [];
  const tools: StartupTool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < MAX_TOOLS_LIST_PAGES && tools.length < MAX_STARTUP_TOOLS; page++) {
    const request = { method: "tools/list", params: cursor === undefined ? {} : { cursor } };
    const handled = await listHandler(request, syntheticContext(state, "tools/list"));
    // Each entry as tools/list returns it on the wire, after the MCP SDK's own encoding.
    const result = (asSent(state, "tools/list", handled) ?? handled) as { tools?: unknown; nextCursor?: unknown } | undefined;
    if (!isRecord(result) || !Array.isArray(result.tools)) break;
    for (const tool of result.tools) {
      if (tools.length >= MAX_STARTUP_TOOLS) break;
      const entry = startupTool(state, tool);
      // A name listed twice would drop the whole startup (SPEC §1.2); keep the first.
      if (entry && !seen.has(entry.name)) {
        seen.add(entry.name);
        tools.push(entry);
      }
    }
    if (typeof result.nextCursor !== "string" || result.nextCursor === "") break;
    cursor = result.nextCursor;
  }
  return tools;
}

/**
 * A result as the server puts it on the wire (SPEC §4: `response_bytes` is measured "as the server
 * sends it (after the MCP SDK's own normalisation)"; `schema_bytes` over each tool entry "as
 * tools/list returns it"). The 2.x SDKs pass every handler result through their negotiated wire
 * codec before sending: on revision 2026-07-28 it stamps `resultType` and the server's identity
 * into `_meta` and drops `execution` from tool entries; on 2025-era connections it wraps
 * non-object output schemas. The SDK's own encoder is applied here, so the length is the wire's
 * (it is pure: it copies, never mutates). 1.x sends the handler's result as is. `undefined` means
 * the encoder refused the result: the client then receives an error instead.
 */
function asSent(state: WatchState, method: string, result: unknown): unknown {
  const low = state.shape.low as LowLevelServer & {
    _negotiatedWireCodec?: () => { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
    _outboundServerInfo?: () => unknown;
  };
  if (!isRecord(result) || typeof low._negotiatedWireCodec !== "function") return result;
  let codec: { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
  let serverInfo: unknown;
  try {
    codec = low._negotiatedWireCodec();
    serverInfo = typeof low._outboundServerInfo === "function" ? low._outboundServerInfo() : undefined;
  } catch {
    return result; // not the shape measured in SPEC §4's facts: measure what the handler returned
  }
  if (!codec || typeof codec.encodeResult !== "function") return result;
  try {
    return codec.encodeResult(method, result, serverInfo);
  } catch {
    return undefined; // the MCP SDK answers an internal error instead of this result
  }
}

/** Members the 2.x codecs read or write on a tools/call result; with none of them present, what they add is fixed. */
const CODEC_TOUCHED_MEMBERS = ["resultType", "_meta", "capabilities", "tools", "ttlMs", "cacheScope"] as const;

/** What the negotiated codec adds to a plain tools/call result's JSON, learnt once per codec and server identity. */
interface CodecGrowth {
  codec: object;
  serverInfo: unknown;
  addedChars: number;
}

/**
 * `response_bytes` of a tools/call result: the UTF-16 length of its JSON as the server sends it
 * (SPEC §4), without encoding every result a second time through the 2.x codec. The codec's
 * tools/call encoding of a result that carries none of the members it reads or writes is the
 * result plus fixed members (2026-07-28: `resultType` and the server's identity in `_meta`; 2025
 * revisions: nothing), and the length of JSON does not depend on member order. So it is learnt
 * once, from the codec's own encoding of a probe result, and added to the length of the result's
 * JSON. A result that does carry one of those members goes through the codec as before. The
 * conformance tests compare every call's figure with the JSON on the wire, on both revisions.
 */
function sentLength(state: WatchState, result: unknown): number {
  const low = state.shape.low as LowLevelServer & {
    _negotiatedWireCodec?: () => { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
    _outboundServerInfo?: () => unknown;
  };
  if (typeof low._negotiatedWireCodec !== "function" || !isRecord(result)) {
    const json = JSON.stringify(result);
    return typeof json === "string" ? utf16Length(json) : 0;
  }
  let fixedGrowth: number | undefined;
  try {
    const codec = low._negotiatedWireCodec();
    const serverInfo = typeof low._outboundServerInfo === "function" ? low._outboundServerInfo() : undefined;
    if (isRecord(codec) && typeof codec.encodeResult === "function" && !Array.isArray(result) && Object.getPrototypeOf(result) === Object.prototype) {
      let touched = false;
      for (const member of CODEC_TOUCHED_MEMBERS) if (member in result) touched = true;
      if (!touched) {
        const known = state.codecGrowth;
        if (known !== undefined && known.codec === codec && known.serverInfo === serverInfo) {
          fixedGrowth = known.addedChars;
        } else {
          const probe = { content: [] };
          const encoded = JSON.stringify(codec.encodeResult("tools/call", probe, serverInfo));
          if (typeof encoded === "string") {
            fixedGrowth = encoded.length - JSON.stringify(probe).length;
            state.codecGrowth = { codec, serverInfo, addedChars: fixedGrowth };
          }
        }
      }
    }
  } catch {
    fixedGrowth = undefined;
  }
  if (fixedGrowth !== undefined) {
    const json = JSON.stringify(result);
    // Added members follow a comma, except after an empty object: there the probe's count does not hold.
    if (typeof json === "string" && json !== "{}") return utf16Length(json) + fixedGrowth;
  }
  const sent = asSent(state, "tools/call", result);
  const json = sent === undefined ? undefined : JSON.stringify(sent);
  return typeof json === "string" ? utf16Length(json) : 0;
}

function startupTool(state: WatchState, tool: unknown): StartupTool | undefined {
  if (!isRecord(tool)) return undefined;
  const name = tool.name;
  // One invalid entry would drop the whole startup (SPEC §1.2): leave out a nameless or overlong one.
  if (typeof name !== "string" || name.length === 0 || (name.length > MAX_TOOL_NAME_CHARS && codePointLength(name) > MAX_TOOL_NAME_CHARS)) {
    return undefined;
  }
  const description = typeof tool.description === "string" ? tool.description : "";
  return {
    name,
    // The whole tool entry as tools/list returns it: what it costs a context window (SPEC §4).
    schema_bytes: utf16Length(JSON.stringify(tool)),
    schema_hash: schemaHash(tool.inputSchema ?? {}),
    description_hash: descriptionHash(description),
    description_norm: descriptionNorm(description),
    policy: state.options.policy.get(name) ?? null,
  };
}

async function sendStartup(state: WatchState, sessionId: string, client: string, protocolVersion: string | null, transport: unknown): Promise<void> {
  try {
    const tools = await listTools(state);
    const payload = {
      v: 1,
      type: "startup",
      session_id: sessionId,
      client_name: client,
      tools,
      sdk: SDK_ID,
      mcp_sdk_version: state.mcpSdkVersion ?? knownMcpSdkVersion(state.shape.low),
      transport: transportKind(transport),
      protocol_version: protocolVersion,
      // Field and tool names only: paths would describe the shape of the results (SPEC §4).
      // Always present, empty without `agree`, so every startup carries every field.
      agree_declared: [...state.options.agree]
        .slice(0, MAX_STARTUP_TOOLS)
        .map(([field, paths]) => ({ field, tools: [...paths.keys()] })),
    };
    state.destination.enqueue(payload);
  } catch (error) {
    state.log(`startup not sent: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// ---- calls ----

function signalOf(context: unknown): object | undefined {
  if (!isRecord(context)) return undefined;
  if (isRecord(context.signal)) return context.signal;
  const mcpReq = context.mcpReq;
  return isRecord(mcpReq) && isRecord(mcpReq.signal) ? mcpReq.signal : undefined;
}

/**
 * Wraps a tool's callback once, looked up at dispatch time (SPEC §4 "Facts about the MCP SDKs").
 * Returns false when the tool exists but has no callback function to wrap (a task tool's handler
 * object): then the answer, not the callback, has to decide the outcome.
 */
function wrapToolCallbackAtDispatch(state: WatchState, toolName: string): boolean {
  if (state.shape.kind !== "mcp") return false;
  const tools = state.shape.high._registeredTools;
  // An unknown tool: its callback can never run, so the call is bad_args.
  if (!Object.hasOwn(tools, toolName)) return true;
  const tool = tools[toolName];
  if (!isRecord(tool)) return true;
  // 2.x calls the closure `executor` (replacing `handler` there does nothing); 1.32 reads
  // `handler` at call time; 1.17 calls `callback`.
  for (const property of ["executor", "handler", "callback"]) {
    const callback = tool[property];
    if (typeof callback === "function") {
      if (!isInstrumented(callback)) tool[property] = markInstrumented(recordingCallback(callback as (...args: unknown[]) => unknown));
      return true;
    }
  }
  return false;
}

function recordingCallback(callback: (...args: unknown[]) => unknown): (...args: unknown[]) => unknown {
  return function recorded(this: unknown, ...args: unknown[]) {
    const signal = signalOf(args[args.length - 1]);
    const record = signal ? callbackBySignal.get(signal) : undefined;
    if (!record) return callback.apply(this, args);
    record.ran = true;
    let returned: unknown;
    try {
      returned = callback.apply(this, args);
    } catch (error) {
      record.status = "threw";
      throw error;
    }
    if (isRecord(returned) && typeof (returned as { then?: unknown }).then === "function") {
      return (returned as unknown as PromiseLike<unknown>).then(
        (value) => {
          record.status = "returned";
          record.result = value;
          return value;
        },
        (error: unknown) => {
          record.status = "threw";
          throw error;
        },
      );
    }
    record.status = "returned";
    record.result = returned;
    return returned;
  };
}

function beginCall(state: WatchState, request: unknown, extra: unknown): CallInProgress | undefined {
  try {
    const params = isRecord(request) ? request.params : undefined;
    const toolName = isRecord(params) ? params.name : undefined;
    if (typeof toolName !== "string" || toolName.length === 0) return undefined;
    const namedPerRequest = perRequestClient(request, extra) !== undefined;
    if (namedPerRequest) learnVersion(state); // inside the MCP SDK's dispatch of this request
    const clientName = clientOfRequest(state, request, extra);
    const call: CallInProgress = {
      sessionId: sessionOfRequest(state, request, extra, clientName, namedPerRequest),
      toolName,
      // Over the arguments exactly as the request carried them, before any validation (SPEC §4).
      argsHash: callArgsHash(isRecord(params) ? params.arguments : undefined),
      clientName,
      startedAtMs: 0,
      startedPerfMs: perfNow(),
      callback: undefined,
      signal: undefined,
    };
    call.startedAtMs = wallMsAt(call.startedPerfMs);
    const signal = signalOf(extra);
    call.signal = signal as AbortSignal | undefined;
    if (state.shape.kind === "mcp") {
      if (signal && wrapToolCallbackAtDispatch(state, toolName)) {
        call.callback = { ran: false, status: "pending", result: undefined };
        callbackBySignal.set(signal, call.callback);
      }
    }
    return call;
  } catch {
    return undefined;
  }
}

function finishCall(state: WatchState, call: CallInProgress, threw: boolean, result: unknown, error: unknown): void {
  try {
    const durationMs = Math.min(MAX_DURATION_MS, elapsedMs(call.startedPerfMs, perfNow()));
    // The record has served: an entry per finished call would only grow the WeakMap's ephemeron
    // table, which every garbage collection walks, until the signals are collected.
    if (call.callback !== undefined && call.signal !== undefined) callbackBySignal.delete(call.signal);
    const outcome = call.callback ? outcomeOfToolCallback(call.callback, threw, result) : outcomeOfHandler(threw, error, result);
    let responseBytes = 0;
    const cancelled = call.signal?.aborted === true;
    if (!threw && !cancelled) {
      // The JSON of the result as the server sends it; 0 when the client receives an error
      // instead, or nothing at all (a cancelled request gets no response).
      responseBytes = sentLength(state, result);
    }
    const destination = state.destination;
    destination.enqueue({
      v: 1,
      type: "call",
      session_id: call.sessionId,
      client_name: call.clientName,
      tool_name: call.toolName,
      started_at: new Date(call.startedAtMs).toISOString(),
      duration_ms: durationMs,
      outcome,
      response_bytes: responseBytes,
      is_empty: outcome === "ok" && isEmptyResult(result),
      args_hash: call.argsHash,
    });
    if (outcome === "ok") compareDeclaredValues(state, call, result);
  } catch (failure) {
    state.log(`call not recorded: ${failure instanceof Error ? failure.message : String(failure)}`);
  }
}

function compareDeclaredValues(state: WatchState, call: CallInProgress, result: unknown): void {
  const toolName = call.toolName;
  const declared = state.options.agreeByTool.get(toolName);
  if (!declared) return;
  const destination = state.destination;
  const windowMs = state.options.agreeWindowMs;
  for (const { field, path } of declared) {
    const value = valueInResult(result, path);
    if (value === undefined) continue;
    const nowMs = Date.now();
    for (const verdict of destination.agreement.observe(field, toolName, value, nowMs, windowMs)) {
      destination.enqueue({
        v: 1,
        type: "agreement",
        // A verdict needs a session (SPEC §1.2): the call's, else the process's own.
        session_id: call.sessionId || destination.processSessionId,
        field: verdict.field,
        tool_a: verdict.tool_a,
        tool_b: verdict.tool_b,
        agreed: verdict.agreed,
        checked_at: new Date(nowMs).toISOString(),
        window_ms: windowMs,
      });
    }
  }
}

function toolsCallHandler(state: WatchState, handler: RequestHandler): RequestHandler {
  return async function toolsCall(this: unknown, request: unknown, extra: unknown) {
    const call = beginCall(state, request, extra);
    if (call === undefined) return handler.call(this, request, extra);
    let threw = false;
    let result: unknown;
    let error: unknown;
    try {
      result = await handler.call(this, request, extra);
      return result;
    } catch (thrown) {
      threw = true;
      error = thrown;
      throw thrown;
    } finally {
      // Exactly once, whether the handler returned, threw or was cancelled (SPEC §4).
      finishCall(state, call, threw, result, error);
    }
  };
}
