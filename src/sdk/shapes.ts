// Recognises the MCP server shapes by their structure, never by importing the MCP SDK (a peer):
// SPEC §4 "Facts about the MCP SDKs". `Server._requestHandlers` is a Map of method → handler in
// every version; `McpServer` wraps a `Server` in `.server` and keeps `_registeredTools` by name.
import { MAX_MCP_SDK_VERSION_CHARS } from "../shared/limits.ts";

export type RequestHandler = (request: unknown, extra: unknown) => unknown;

export interface LowLevelServer {
  _requestHandlers: Map<string, RequestHandler>;
  transport?: unknown;
  getClientVersion?: () => { name?: unknown } | undefined;
  _negotiatedProtocolVersion?: unknown;
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
  if (transport === null || typeof transport !== "object") return "unknown";
  const name = (transport as { constructor?: { name?: unknown } }).constructor?.name;
  if (typeof name !== "string") return "unknown";
  if (/stdio/i.test(name)) return "stdio";
  if (/sse/i.test(name)) return "sse";
  if (/http/i.test(name)) return "http";
  return "unknown";
}

const versionCache = new Map<string, string | null>();

type NodeFs = typeof import("node:fs");
type NodePath = typeof import("node:path");
type NodeUrl = typeof import("node:url");

/**
 * The installed version of an MCP SDK package, read from its package.json on disk — without
 * importing the package — by walking up node_modules from the entry script, this module and the
 * working directory. `null` where that cannot be known (workerd, bundles, no file system).
 */
export function mcpSdkVersion(major: 1 | 2): string | null {
  const packageName = major === 2 ? "@modelcontextprotocol/server" : "@modelcontextprotocol/sdk";
  const cached = versionCache.get(packageName);
  if (cached !== undefined) return cached;
  let version: string | null = null;
  try {
    version = readInstalledVersion(packageName);
  } catch {
    version = null;
  }
  versionCache.set(packageName, version);
  return version;
}

function readInstalledVersion(packageName: string): string | null {
  const proc = (globalThis as {
    process?: { release?: { name?: string }; getBuiltinModule?: (id: string) => unknown; argv?: string[]; cwd?: () => string };
    navigator?: { userAgent?: string };
  }).process;
  if ((globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers") return null;
  if (proc?.release?.name !== "node" || typeof proc.getBuiltinModule !== "function") return null;
  const fs = proc.getBuiltinModule("node:fs") as NodeFs | undefined;
  const path = proc.getBuiltinModule("node:path") as NodePath | undefined;
  const url = proc.getBuiltinModule("node:url") as NodeUrl | undefined;
  if (!fs || !path || !url) return null;

  const starts: string[] = [];
  const script = proc.argv?.[1];
  if (typeof script === "string" && script.length > 0) starts.push(path.dirname(path.resolve(script)));
  try {
    if (import.meta.url.startsWith("file:")) starts.push(path.dirname(url.fileURLToPath(import.meta.url)));
  } catch {
    // not a file URL (bundled)
  }
  if (typeof proc.cwd === "function") starts.push(proc.cwd());

  for (const start of starts) {
    let dir = start;
    for (let depth = 0; depth < 64; depth++) {
      const manifest = path.join(dir, "node_modules", ...packageName.split("/"), "package.json");
      if (fs.existsSync(manifest)) {
        const parsed = JSON.parse(fs.readFileSync(manifest, "utf8")) as { name?: unknown; version?: unknown };
        if (parsed.name === packageName && typeof parsed.version === "string" && parsed.version.length <= MAX_MCP_SDK_VERSION_CHARS) {
          return parsed.version;
        }
      }
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return null;
}
