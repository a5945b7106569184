// watch() options (SPEC §4): checked once; anything but an object with a usable key disables the
// SDK silently, with a debug line. The package reads no environment variables itself.
import { codePointLength } from "../shared/hash.ts";
import { MAX_AGREE_DECLARED_FIELDS, MAX_AGREE_DECLARED_TOOLS, MAX_AGREEMENT_FIELD_CHARS, MAX_TOOL_NAME_CHARS } from "../shared/limits.ts";
import { DEFAULT_AGREE_WINDOW_MS } from "./constants.ts";

const MAX_AGREE_WINDOW_MS = 86_400_000;

export interface ToolPolicy {
  /** The tool needs the user to authorise it; clients may rightly leave it alone. */
  requires_authorization?: boolean;
  /** The tool needs a verified identity. */
  requires_verified_identity?: boolean;
}

export interface WatchOptions {
  /** Ingest key (`mp_live_…`). Required; blank or whitespace-only disables the SDK. */
  key: string | undefined | null;
  /**
   * Required: the base URL of your own worker; payloads go to `POST {endpoint}/v1/ingest`. There is
   * no default host. Missing or not an http(s) URL disables the SDK; a trailing slash is ignored.
   */
  endpoint: string | undefined | null;
  /** Default `true`; `false` returns the server untouched. */
  enabled?: boolean;
  /** Default `false`; when on, every payload sent is logged to stderr (never stdout). */
  debug?: boolean;
  /** Declared per tool, so a tool clients deliberately withhold is not reported as dead. */
  policy?: Record<string, ToolPolicy>;
  /** Opt-in agreement: `{ field: { toolName: "dotted.path.in.result" } }`. */
  agree?: Record<string, Record<string, string>>;
  /** How far back a value counts for agreement, per field. Default 300,000 ms. */
  agreeWindowMs?: number;
  /**
   * Your own conversation or user handle for a request, tried first (SPEC §4 "Sessions are
   * conversations"). A non-empty string names the session (HMAC'd before sending; the value stays in
   * the process); anything else or a throw falls through. Called on every tool call: keep it cheap.
   */
  sessionKey?: (request: SessionKeyRequest) => string | undefined | null;
}

/** What `sessionKey` receives about a request. */
export interface SessionKeyRequest {
  /** The transport session (`Mcp-Session-Id` of stateful streamable HTTP, or the SSE connection). */
  sessionId?: string;
  /** The request's `_meta`. */
  meta?: Record<string, unknown>;
  /** The request's verified auth info, as the MCP SDK hands it to handlers (`authInfo`). */
  authInfo?: unknown;
  /** The client behind the request (`"unknown"` when it gave no name). */
  clientName: string;
}

export interface ResolvedOptions {
  key: string;
  endpoint: string;
  debug: boolean;
  policy: Map<string, { requires_authorization: boolean; requires_verified_identity: boolean }>;
  /** field → (tool → path) */
  agree: Map<string, Map<string, string>>;
  /** tool → fields it declares */
  agreeByTool: Map<string, { field: string; path: string }[]>;
  agreeWindowMs: number;
  sessionKey: ((request: SessionKeyRequest) => unknown) | undefined;
}

export type OptionsVerdict = { ok: true; options: ResolvedOptions } | { ok: false; reason: string; debug: boolean };

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `https://x/` and `https://x` are the same destination (SPEC §4). */
export function normaliseEndpoint(endpoint: string): string | null {
  let text = endpoint.trim();
  while (text.endsWith("/")) text = text.slice(0, -1);
  try {
    const url = new URL(text);
    if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  } catch {
    return null;
  }
  return text;
}

export function resolveOptions(raw: unknown): OptionsVerdict {
  if (!isRecord(raw)) return { ok: false, reason: "options must be an object", debug: false };
  const debug = raw.debug === true;
  if (raw.enabled === false) return { ok: false, reason: "disabled by enabled: false", debug };
  if (typeof raw.key !== "string" || raw.key.trim() === "") {
    return { ok: false, reason: "no usable key; the SDK is disabled", debug };
  }
  // No default host: data never goes anywhere the user did not name (SPEC §4).
  if (raw.endpoint === undefined || raw.endpoint === null) {
    return { ok: false, reason: "no endpoint (the URL of your own worker); the SDK is disabled", debug };
  }
  const endpoint = typeof raw.endpoint === "string" ? normaliseEndpoint(raw.endpoint) : null;
  if (endpoint === null) return { ok: false, reason: "endpoint is not an http(s) URL; the SDK is disabled", debug };

  const policy: ResolvedOptions["policy"] = new Map();
  if (isRecord(raw.policy)) {
    for (const [tool, declared] of Object.entries(raw.policy)) {
      if (!isRecord(declared)) continue;
      policy.set(tool, {
        requires_authorization: declared.requires_authorization === true,
        requires_verified_identity: declared.requires_verified_identity === true,
      });
    }
  }

  const agree: ResolvedOptions["agree"] = new Map();
  const agreeByTool: ResolvedOptions["agreeByTool"] = new Map();
  if (isRecord(raw.agree)) {
    // Names are capped in code points, and a startup declares at most 64 fields of at most 64 tools
    // (SPEC §1.2): beyond that the ingest would drop the whole startup, so the rest is left out here.
    for (const [field, tools] of Object.entries(raw.agree)) {
      if (agree.size === MAX_AGREE_DECLARED_FIELDS) break;
      if (field.length === 0 || codePointLength(field) > MAX_AGREEMENT_FIELD_CHARS || !isRecord(tools)) continue;
      const paths = new Map<string, string>();
      for (const [tool, path] of Object.entries(tools)) {
        if (paths.size === MAX_AGREE_DECLARED_TOOLS) break;
        if (tool.length === 0 || codePointLength(tool) > MAX_TOOL_NAME_CHARS) continue;
        if (typeof path !== "string" || path.length === 0) continue;
        paths.set(tool, path);
        let declared = agreeByTool.get(tool);
        if (!declared) agreeByTool.set(tool, (declared = []));
        declared.push({ field, path });
      }
      if (paths.size > 0) agree.set(field, paths);
    }
  }

  const window = raw.agreeWindowMs;
  const agreeWindowMs =
    typeof window === "number" && Number.isInteger(window) && window > 0 && window <= MAX_AGREE_WINDOW_MS
      ? window
      : DEFAULT_AGREE_WINDOW_MS;

  const sessionKey = typeof raw.sessionKey === "function" ? (raw.sessionKey as ResolvedOptions["sessionKey"]) : undefined;

  return { ok: true, options: { key: raw.key.trim(), endpoint, debug, policy, agree, agreeByTool, agreeWindowMs, sessionKey } };
}
