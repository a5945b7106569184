// What watch() keeps per watched server object: its shape, options and destination, the client of
// its own initialize, and what it learnt once (the MCP SDK's version, the 2.x codec's growth).
import type { DebugLog } from "./debug.ts";
import type { Destination } from "./destination.ts";
import { learnMcpSdkVersion } from "./mcp-sdk-version.ts";
import type { ResolvedOptions } from "./options.ts";
import type { ServerShape } from "./shapes.ts";

export interface WatchState {
  shape: ServerShape;
  options: ResolvedOptions;
  destination: Destination;
  log: DebugLog;
  /** The client named in this server object's own initialize. */
  connectionClient: string | undefined;
  /** The version the initialize of this server object's connection named (`clientInfo.version`). */
  connectionClientVersion?: string | null;
  /** The protocol revision the initialize of this server object's connection settled on. */
  connectionProtocolVersion?: string | null;
  /** The version of the MCP SDK this server object comes from, once read from its calls (null: not yet, or unknowable). */
  mcpSdkVersion: string | null;
  /** Stack readings left before giving up (code that is not the MCP SDK on disk: bundled, workerd). */
  versionReadingsLeft: number;
  /** 2.x: what the negotiated codec adds to a plain tools/call result (see sentLength). */
  codecGrowth: CodecGrowth | undefined;
}

export const MAX_VERSION_READINGS = 4;

/**
 * Reads `mcp_sdk_version` from the current call stack: called only inside hooks that the MCP SDK
 * itself calls (its setRequestHandler, its dispatch of initialize or of a first per-request
 * client), a few times at most, never once it is known.
 */
export function learnVersion(state: WatchState): void {
  if (state.mcpSdkVersion !== null || state.versionReadingsLeft <= 0) return;
  state.versionReadingsLeft--;
  try {
    state.mcpSdkVersion = learnMcpSdkVersion(state.shape.low, learnVersion);
  } catch {
    state.mcpSdkVersion = null;
  }
}

/** What the negotiated codec adds to a plain tools/call result's JSON, learnt once per codec and server identity. */
export interface CodecGrowth {
  codec: object;
  serverInfo: unknown;
  addedChars: number;
}
