// Every private member of the MCP SDKs that watch() reads or patches, with the versions each was
// checked on (SPEC §4 "Facts about the MCP SDKs"). The peer ranges are open, so `missingInternals`
// lets watch() say on stderr when a release renamed one (`npm run test:mcp-latest` checks the newest).
import { recogniseServer } from "./shapes.ts";

/** The MCP SDK releases the internals below were checked on (the installed devDependencies). */
export const CHECKED_MCP_SDK_VERSIONS = {
  "@modelcontextprotocol/sdk": ["1.17.5", "1.32.2"],
  "@modelcontextprotocol/server": ["2.4.0"],
} as const;

export type McpSdkInternal = {
  /** `Class.member` as the SDK's source names it. */
  readonly name: string;
  /** The majors that have it (where it is looked for). */
  readonly majors: readonly (1 | 2)[];
  /** What watch() does with it, and what is lost without it. */
  readonly use: string;
};

/** Every private member watch() relies on. Public API (setRequestHandler, getClientVersion …) is not listed. */
export const MCP_SDK_INTERNALS = {
  requestHandlers: {
    name: "Server._requestHandlers",
    majors: [1, 2],
    use: "a Map of method → handler: its tools/call, tools/list and initialize entries are wrapped and its set() hooked; without it nothing is recorded",
  },
  registeredTools: {
    name: "McpServer._registeredTools",
    majors: [1, 2],
    use: "the tools by name, whose callbacks are wrapped at dispatch to tell bad_args, tool_error and crashed apart; without it outcomes fall back to the answer",
  },
  toolCallback: {
    name: "RegisteredTool.callback (1.17) / .handler (1.32) / .executor (2.x)",
    majors: [1, 2],
    use: "the tool's function as the SDK calls it; without it a call's outcome is read from the answer only",
  },
  wrapHandler: {
    name: "Server._wrapHandler",
    majors: [2],
    use: "present on 2.x only: tells the majors apart (their callbacks and codecs differ)",
  },
  negotiatedWireCodec: {
    name: "Server._negotiatedWireCodec",
    majors: [2],
    use: "encodes a result as it goes on the wire: response_bytes and schema_bytes are measured on its output; without it they are measured on the handler's result",
  },
  outboundServerInfo: {
    name: "Server._outboundServerInfo",
    majors: [2],
    use: "the server identity the 2.x codec stamps into _meta, measured with it",
  },
  negotiatedProtocolVersion: {
    name: "Server._negotiatedProtocolVersion",
    majors: [2],
    use: "protocol_version of a per-request client's startup (MCP 2026-07-28 has no initialize); without it protocol_version is null unless the request's _meta carries it",
  },
} as const satisfies Record<string, McpSdkInternal>;

export type McpSdkInternalKey = keyof typeof MCP_SDK_INTERNALS;

const TOOL_CALLBACK_MEMBERS: Record<1 | 2, readonly string[]> = { 1: ["callback", "handler"], 2: ["executor"] };

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object";

/**
 * The internals `server` lacks, or null when it is not an MCP server; `[]`: everything works. Members
 * that appear only after a connection or a first tool are checked once they exist. Never throws.
 */
export function missingInternals(server: unknown): McpSdkInternalKey[] | null {
  try {
    if (!isRecord(server)) return null;
    const shape = recogniseServer(server);
    if (shape === null) {
      // Not recognised: an MCP server (it has the public setRequestHandler) whose internals moved, or not one at all.
      const low = isRecord(server.server) ? server.server : server;
      if (typeof low.setRequestHandler !== "function") return null;
      const missing: McpSdkInternalKey[] = [];
      if (!(low._requestHandlers instanceof Map)) missing.push("requestHandlers");
      if (low !== server && !isRecord(server._registeredTools)) missing.push("registeredTools");
      return missing;
    }
    const missing: McpSdkInternalKey[] = [];
    const low = shape.low as unknown as Record<string, unknown>;
    // A 2.x server (it has the codec) that lost the hook the majors are told apart by.
    if (shape.major === 1 && typeof low._negotiatedWireCodec === "function") missing.push("wrapHandler");
    if (shape.major === 2) {
      if (typeof low._negotiatedWireCodec !== "function") missing.push("negotiatedWireCodec");
      if (typeof low._outboundServerInfo !== "function") missing.push("outboundServerInfo");
      // A class field (undefined until a revision is negotiated): present from construction.
      if (!("_negotiatedProtocolVersion" in low)) missing.push("negotiatedProtocolVersion");
    }
    if (shape.kind === "mcp") {
      const members = TOOL_CALLBACK_MEMBERS[shape.major];
      const tools = Object.values(shape.high._registeredTools).filter(isRecord);
      // A task tool keeps a handler object, not a function: that one is answered from its result by design.
      const plainTools = tools.filter((tool) => !isRecord(tool.handler) || typeof tool.handler === "function");
      if (plainTools.length > 0 && !plainTools.some((tool) => members.some((m) => typeof tool[m] === "function"))) {
        missing.push("toolCallback");
      }
    }
    return missing;
  } catch {
    return null;
  }
}

/** The one stderr line for a server that lacks some internals, naming them and what is lost. */
export function missingInternalsMessage(missing: readonly McpSdkInternalKey[]): string {
  const names = missing.map((key) => MCP_SDK_INTERNALS[key].name).join(", ");
  const checked = Object.entries(CHECKED_MCP_SDK_VERSIONS)
    .map(([pkg, versions]) => `${pkg} ${versions.join(", ")}`)
    .join("; ");
  return `this MCP SDK lacks ${names}, which mcpulse-edge relies on (checked on ${checked}); some figures will be missing or measured on the handler's result`;
}
