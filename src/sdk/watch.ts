// watch(server, options): instruments an MCP server in place (SPEC §4). Hooks the low-level Server's
// `_requestHandlers` (and its `set`, so later handlers are wrapped too) and McpServer's tool callbacks
// at dispatch time, so tools registered after watch() are covered.
import { MAX_DURATION_MS } from "../shared/limits.ts";
import { valueInResult } from "./agreement.ts";
import { argsHashText } from "./args-hash.ts";
import { sentLength } from "./as-sent.ts";
import { CallPayload } from "./call-payload.ts";
import { elapsedMs, perfNow, wallMsAt, wireTimestamp } from "./clock.ts";
import { UNKNOWN_CLIENT } from "./constants.ts";
import { debugLog, toStderr } from "./debug.ts";
import { destinationFor, enqueueCallOn } from "./destination.ts";
import { isEmptyResult } from "./empty.ts";
import { missingInternals, missingInternalsMessage } from "./internals.ts";
import { knownMcpSdkVersion } from "./mcp-sdk-version.ts";
import { resolveOptions, type WatchOptions } from "./options.ts";
import { outcomeOfHandler, outcomeOfToolCallback, type CallbackRecord } from "./outcome.ts";
import {
  clientName,
  clientOfRequest,
  clientVersionOf,
  clientVersionText,
  isRecord,
  perRequestClient,
  requestProtocolVersion,
  serverVersionOf,
  sessionFacts,
  transportSessionId,
  versionText,
} from "./request-facts.ts";
import { sessionSource } from "./session.ts";
import { recogniseServer, transportKind, type RequestHandler } from "./shapes.ts";
import { sendStartup, sessionAndKindOfRequest, sessionOfRequest, startupIfAlreadyInitialized, type SessionKindSent } from "./startup.ts";
import { callbackBySignal, isInstrumented, markInstrumented, signalOf, wrapToolCallbackAtDispatch } from "./tool-callbacks.ts";
import { learnVersion, MAX_VERSION_READINGS, type WatchState } from "./watch-state.ts";

/**
 * Server objects already watched (an McpServer and its inner Server both count); kept on
 * globalThis so a second copy of this package in the process sees the first one's.
 */
const WATCHED_KEY = Symbol.for("mcpulse-edge.sdk.watched");
const watched: WeakSet<object> = ((globalThis as unknown as Record<symbol, WeakSet<object> | undefined>)[WATCHED_KEY] ??= new WeakSet<object>());

interface CallInProgress {
  /** `""` when nothing tells this request's conversation apart (SPEC §2.2, §4). */
  sessionId: string;
  toolName: string;
  /** What args_hash is the digest of, taken before the handler runs (args-hash.ts). */
  argsText: string | null;
  clientName: string;
  /** Descriptive facts of the call (SPEC §1.2), for the worker's Analytics Engine dimensions. */
  clientVersion: string | null;
  protocolVersion: string | null;
  sessionKind: SessionKindSent;
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
  warnOnceIfInternalsMissing(server);
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

const INTERNALS_WARNED = Symbol.for("mcpulse-edge.sdk.internals-warned");

/**
 * An MCP SDK release that renamed a private member the SDK relies on (src/sdk/internals.ts) would
 * make watch() measure less, or nothing: say so on stderr, once per process, debug or not.
 */
function warnOnceIfInternalsMissing(server: unknown): void {
  const holder = globalThis as unknown as Record<symbol, boolean | undefined>;
  if (holder[INTERNALS_WARNED]) return;
  const missing = missingInternals(server);
  if (missing === null || missing.length === 0) return;
  holder[INTERNALS_WARNED] = true;
  toStderr(missingInternalsMessage(missing));
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

function instrumentHandler(state: WatchState, method: string, handler: RequestHandler): RequestHandler {
  if (typeof handler !== "function" || isInstrumented(handler)) return handler;
  if (method === "tools/call") return markInstrumented(toolsCallHandler(state, handler));
  if (method === "initialize") return markInstrumented(initializeHandler(state, handler));
  return markInstrumented(identityHandler(state, handler));
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
      state.connectionClientVersion = clientVersionText(isRecord(params) && isRecord(params.clientInfo) ? params.clientInfo.version : undefined);
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
            state.connectionProtocolVersion = version;
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

// ---- calls ----

function beginCall(state: WatchState, request: unknown, extra: unknown): CallInProgress | undefined {
  try {
    const params = isRecord(request) ? request.params : undefined;
    const toolName = isRecord(params) ? params.name : undefined;
    if (typeof toolName !== "string" || toolName.length === 0) return undefined;
    const perRequest = perRequestClient(request, extra);
    const namedPerRequest = perRequest !== undefined;
    if (namedPerRequest) learnVersion(state); // inside the MCP SDK's dispatch of this request
    const clientName = clientOfRequest(state, extra, perRequest);
    const session = sessionAndKindOfRequest(state, request, extra, clientName, namedPerRequest);
    const call: CallInProgress = {
      sessionId: session.id,
      toolName,
      // Over the arguments exactly as the request carried them, before any validation (SPEC §4).
      argsText: argsHashText(isRecord(params) ? params.arguments : undefined),
      clientName,
      clientVersion: clientVersionOf(state, request, extra),
      protocolVersion: requestProtocolVersion(state, request, extra) ?? state.connectionProtocolVersion ?? null,
      sessionKind: session.kind,
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
    enqueueCallOn(
      state.destination,
      new CallPayload(
        call.sessionId,
        call.clientName,
        call.toolName,
        wireTimestamp(call.startedAtMs),
        durationMs,
        outcome,
        responseBytes,
        outcome === "ok" && isEmptyResult(result),
        call.clientVersion,
        serverVersionOf(state),
        call.protocolVersion,
        call.sessionKind,
        transportKind(state.shape.low.transport),
      ),
      call.argsText,
    );
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
        checked_at: wireTimestamp(nowMs),
        window_ms: windowMs,
      });
    }
  }
}

/**
 * As an async function around the handler would be (always a promise, settled as the handler's
 * answer), without its frame: the answer's own `then` records the call exactly once (SPEC §4).
 */
function toolsCallHandler(state: WatchState, handler: RequestHandler): RequestHandler {
  return function toolsCall(this: unknown, request: unknown, extra: unknown) {
    const call = beginCall(state, request, extra);
    let answer: unknown;
    try {
      answer = handler.call(this, request, extra);
    } catch (thrown) {
      if (call !== undefined) finishCall(state, call, true, undefined, thrown);
      return Promise.reject(thrown);
    }
    if (call === undefined) return Promise.resolve(answer);
    return Promise.resolve(answer).then(
      (result) => {
        finishCall(state, call, false, result, undefined);
        return result;
      },
      (thrown: unknown) => {
        finishCall(state, call, true, undefined, thrown);
        throw thrown;
      },
    );
  };
}
