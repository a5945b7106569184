// `mcp_sdk_version` of the startup (SPEC §4): the version of the MCP SDK the watched server really
// comes from, not of another copy installed beside it — read from the package.json above the stack
// frame that calls the hooks watch() installed. Null when bundled, on workerd, or for any other caller.
import { MAX_MCP_SDK_VERSION_CHARS } from "../shared/limits.ts";

/** The packages a server object can come from, and the bundled-in core they may call through. */
const SERVER_PACKAGES = new Set(["@modelcontextprotocol/sdk", "@modelcontextprotocol/server"]);
const PASS_THROUGH_PACKAGES = new Set(["@modelcontextprotocol/core"]);

type NodeFs = typeof import("node:fs");
type NodePath = typeof import("node:path");
type NodeUrl = typeof import("node:url");
interface NodeBuiltins {
  fs: NodeFs;
  path: NodePath;
  url: NodeUrl;
}

let builtins: NodeBuiltins | null | undefined;

function nodeBuiltins(): NodeBuiltins | null {
  if (builtins !== undefined) return builtins;
  builtins = null;
  try {
    if ((globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers") return null;
    const proc = (globalThis as { process?: { release?: { name?: string }; getBuiltinModule?: (id: string) => unknown } }).process;
    if (proc?.release?.name !== "node" || typeof proc.getBuiltinModule !== "function") return null;
    const fs = proc.getBuiltinModule("node:fs") as NodeFs | undefined;
    const path = proc.getBuiltinModule("node:path") as NodePath | undefined;
    const url = proc.getBuiltinModule("node:url") as NodeUrl | undefined;
    if (fs && path && url) builtins = { fs, path, url };
  } catch {
    builtins = null;
  }
  return builtins;
}

/** This SDK's own directory: its frames are skipped (`src/sdk` in the repo, `dist/sdk` installed). */
let ownDirectory: string | null | undefined;

function ownDir(node: NodeBuiltins): string | null {
  if (ownDirectory !== undefined) return ownDirectory;
  ownDirectory = null;
  try {
    if (import.meta.url.startsWith("file:")) ownDirectory = node.path.dirname(node.url.fileURLToPath(import.meta.url)) + node.path.sep;
  } catch {
    ownDirectory = null;
  }
  return ownDirectory;
}

// `    at Server.setRequestHandler (file:///…/protocol.js:12:34)`, `    at /…/x.js:1:2`, `C:\…`.
const FRAME_FILE = /(?:\(|at )((?:file:\/\/|\/|[A-Za-z]:\\)[^()]*?):\d+:\d+\)?$/;

function frameFiles(stack: string, node: NodeBuiltins): string[] {
  const files: string[] = [];
  for (const line of stack.split("\n")) {
    const match = FRAME_FILE.exec(line.trim());
    if (!match) continue;
    let file = match[1]!;
    if (file.startsWith("file://")) {
      try {
        file = node.url.fileURLToPath(file);
      } catch {
        continue;
      }
    }
    files.push(file);
  }
  return files;
}

/** The named package a file belongs to: the nearest package.json with a `name` above it. */
const packageOfDirectory = new Map<string, { name: string; version: unknown } | null>();

function packageOf(file: string, node: NodeBuiltins): { name: string; version: unknown } | null {
  let dir = node.path.dirname(file);
  const visited: string[] = [];
  let found: { name: string; version: unknown } | null = null;
  for (let depth = 0; depth < 64; depth++) {
    const cached = packageOfDirectory.get(dir);
    if (cached !== undefined) {
      found = cached;
      break;
    }
    visited.push(dir);
    const manifest = node.path.join(dir, "package.json");
    if (node.fs.existsSync(manifest)) {
      // `dist/esm/package.json` is `{"type": "module"}`: no name, keep walking up.
      const parsed = JSON.parse(node.fs.readFileSync(manifest, "utf8")) as { name?: unknown; version?: unknown };
      if (typeof parsed.name === "string") {
        found = { name: parsed.name, version: parsed.version };
        break;
      }
    }
    const parent = node.path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const each of visited) packageOfDirectory.set(each, found);
  return found;
}

/**
 * The MCP SDK version of the code that made this call stack, or null when the calling code is not
 * an MCP SDK package on disk. `stack` is an `Error.captureStackTrace` text taken inside a hook.
 */
export function mcpSdkVersionOfStack(stack: string | undefined): string | null {
  if (typeof stack !== "string") return null;
  try {
    const node = nodeBuiltins();
    if (!node) return null;
    const own = ownDir(node);
    for (const file of frameFiles(stack, node)) {
      if (own !== null && file.startsWith(own)) continue; // this SDK's own wrappers
      if (file.startsWith("node:")) continue;
      const owner = packageOf(file, node);
      if (owner && PASS_THROUGH_PACKAGES.has(owner.name)) continue;
      if (owner && SERVER_PACKAGES.has(owner.name) && typeof owner.version === "string") {
        const version = owner.version;
        return version.length > 0 && version.length <= MAX_MCP_SDK_VERSION_CHARS ? version : null;
      }
      return null; // the first caller that is not ours is not the MCP SDK: unknowable, never a guess
    }
  } catch {
    // Rule 1, never throw (SPEC §4): reading a stack or a package.json is best effort; a failure
    // means the version is unknown (null), never an error in the host's initialize.
  }
  return null;
}

/** What was learnt per server class, so a fresh server object per request costs no stack reading. */
const versionByPrototype = new WeakMap<object, string>();

/** Reads the version from the current call stack, once per server class; cheap once known. */
export function learnMcpSdkVersion(server: object, from: Function): string | null {
  const prototype = Object.getPrototypeOf(server) as object | null;
  const key = prototype ?? server;
  const known = versionByPrototype.get(key);
  if (known !== undefined) return known;
  const holder: { stack?: string } = {};
  const limit = Error.stackTraceLimit;
  try {
    Error.stackTraceLimit = 12;
    Error.captureStackTrace(holder, from);
  } catch {
    return null;
  } finally {
    Error.stackTraceLimit = limit;
  }
  const version = mcpSdkVersionOfStack(holder.stack);
  if (version !== null) versionByPrototype.set(key, version);
  return version;
}

/** The version already learnt for this server's class, if any (no stack reading). */
export function knownMcpSdkVersion(server: object): string | null {
  const prototype = Object.getPrototypeOf(server) as object | null;
  return versionByPrototype.get(prototype ?? server) ?? null;
}
