// Startups (SPEC §4): a session's tool list, read from the server's tools/list handler and sent once
// per new session. Imports the hashing modules, not src/shared/index.ts (which loads Zod).
import { descriptionNorm } from "../shared/description.ts";
import { codePointLength, descriptionHash, schemaHash, utf16Length } from "../shared/hash.ts";
import { MAX_STARTUP_TOOLS, MAX_TOOL_NAME_CHARS } from "../shared/limits.ts";
import { asSent } from "./as-sent.ts";
import { SDK_ID } from "./constants.ts";
import { knownMcpSdkVersion } from "./mcp-sdk-version.ts";
import { clientName, isRecord, requestProtocolVersion, sessionFacts, transportSessionId, versionText } from "./request-facts.ts";
import { sessionSource, transportKindOf } from "./session.ts";
import { transportKind, type LowLevelServer } from "./shapes.ts";
import type { WatchState } from "./watch-state.ts";

const MAX_TOOLS_LIST_PAGES = 50;

/**
 * watch() after the client's initialize (a server instrumented once it is connected): that
 * initialize was missed, so send its startup now, with the client the server already knows.
 */
export function startupIfAlreadyInitialized(state: WatchState): void {
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

/**
 * This request's `session_id` (SPEC §4 "Sessions are conversations"), `""` when none is known. A new
 * session gets its own startup. A sessionless per-request client's tools/call sends its tool list
 * once under the process's id; other sessionless requests send nothing (it would add empty sessions).
 */
export function sessionOfRequest(state: WatchState, request: unknown, extra: unknown, clientName: string, sessionlessStartup: boolean): string {
  return sessionAndKindOfRequest(state, request, extra, clientName, sessionlessStartup).id;
}

/** sessionOfRequest's id with the case that named it (`none` when nothing did): a call's `session_kind`. */
export function sessionAndKindOfRequest(
  state: WatchState,
  request: unknown,
  extra: unknown,
  clientName: string,
  sessionlessStartup: boolean,
): { id: string; kind: SessionKindSent } {
  const source = sessionSource(sessionFacts(state, request, extra, clientName));
  const destination = state.destination;
  if (source === null) {
    // A 2025-era stateless request names no client: its initialize already sent the tool list.
    if (sessionlessStartup && destination.claimSessionlessStartup(clientName)) {
      void sendStartup(state, destination.processSessionId, clientName, requestProtocolVersion(state, request, extra), state.shape.low.transport);
    }
    return { id: "", kind: "none" };
  }
  const { id, isNew } = destination.sessions.lookup(source);
  if (isNew) void sendStartup(state, id, clientName, requestProtocolVersion(state, request, extra), state.shape.low.transport);
  return { id, kind: source.kind };
}

/** The session kinds a call can send (SPEC §1.2); `unknown` is the worker's word for "not said". */
export type SessionKindSent = "key" | "conversation" | "transport" | "connection" | "none";

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

export async function sendStartup(state: WatchState, sessionId: string, client: string, protocolVersion: string | null, transport: unknown): Promise<void> {
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
