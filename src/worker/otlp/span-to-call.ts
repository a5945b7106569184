// OTLP spans → calls (SPEC §10): a pure map from a span and its resource to a call or the reason it
// is not one. docs/otlp.md's table is its test table; the call then takes the SDK's validation path.
import {
  argsHash,
  codePointLength,
  hmacSha256HexPrefix,
  HASH_HEX_CHARS,
  MAX_CLIENT_NAME_CHARS,
  parsePayload,
  UNKNOWN_CLIENT_NAME,
  type CallPayload,
} from "../../shared/index.ts";
import type { AnyValue, KeyValue } from "./gen/opentelemetry/proto/common/v1/common_pb.ts";
import type { Resource } from "./gen/opentelemetry/proto/resource/v1/resource_pb.ts";
import { Span_SpanKind, Status_StatusCode, type Span } from "./gen/opentelemetry/proto/trace/v1/trace_pb.ts";

/**
 * `args_hash` of a call whose arguments were not recorded (SPEC §10: opt-in). Never sent by an SDK;
 * counted by `calls_without_args_hash`, and never a retry (SPEC §2.2: a same-hash repeat).
 */
export const NO_ARGS_HASH = "";

/** The attributes each fact is read from, first present wins: the current name first, then older ones. */
export const SPAN_ATTRIBUTES = {
  method: ["mcp.method.name", "mcp.method", "rpc.method"],
  tool: ["gen_ai.tool.name", "mcp.tool.name"],
  session: ["mcp.session.id"],
  arguments: ["gen_ai.tool.call.arguments", "mcp.tool.arguments", "mcp.request.arguments"],
  /** Per-argument attributes (`mcp.request.argument.<key>`), used only when none of `arguments` is there. */
  argumentPrefix: "mcp.request.argument.",
  errorType: ["error.type"],
  jsonRpcCode: ["rpc.response.status_code", "rpc.jsonrpc.error_code", "jsonrpc.error.code", "mcp.error.code"],
  toolIsError: ["mcp.tool.result.is_error", "gen_ai.tool.result.is_error"],
  clientName: ["mcp.client.name", "gen_ai.client.name", "client.name"],
  clientVersion: ["mcp.client.version", "gen_ai.client.version", "client.version"],
  protocolVersion: ["mcp.protocol.version"],
  serverVersion: ["mcp.server.version"],
  transport: ["mcp.transport"],
  networkTransport: ["network.transport"],
  networkProtocol: ["network.protocol.name"],
} as const;

/** JSON-RPC's "invalid params" (SPEC §4: the SDK's bad_args on a low-level server). */
const INVALID_PARAMS = -32602;

/** Why a span is not counted; `not_tool_call` spans are expected (HTTP, DB, tools/list…), the rest are invalid. */
export type SpanRejection = { kind: "not_tool_call" | "invalid"; reason: string };
export type SpanResult = { ok: true; call: CallPayload } | ({ ok: false } & SpanRejection);

/**
 * What mapping needs besides the span: the ingest key (the HMAC key of session ids, SPEC §4), the
 * worker's clock (the 7-day/5-minute window), and whether the span's parent is a span of this
 * request that is not itself a tool call (`parentIsOtherSpan`; decides INTERNAL spans).
 */
export type SpanContext = {
  ingestKey: string;
  nowMs: number;
  parentIsOtherSpan: boolean;
  /** Session ids already derived in this request, by mcp.session.id: one HMAC per conversation, not per span. */
  sessionIds?: Map<string, string>;
};

/** A span's attributes by key (the first of a repeated key wins), so each lookup is one get. */
type Attributes = ReadonlyMap<string, AnyValue>;

function attributesOf(list: readonly KeyValue[]): Attributes {
  const map = new Map<string, AnyValue>();
  for (const kv of list) if (kv.value !== undefined && kv.value.value.case !== undefined && !map.has(kv.key)) map.set(kv.key, kv.value);
  return map;
}

/** Whether a span is about `tools/call` at all (any kind): its method, else its name. */
export function isToolCallSpan(span: Span, attributes: Attributes = attributesOf(span.attributes)): boolean {
  const method = stringAttribute(attributes, SPAN_ATTRIBUTES.method);
  if (method !== undefined) return method === "tools/call";
  return /^tools\/call(\s|$)/.test(span.name);
}

/**
 * The call one span stands for (SPEC §10). SERVER tools/call spans are calls; INTERNAL ones only when
 * no SERVER span can count the same call (a root, or under a non-tool span of the same request), so
 * a call is never counted twice. CLIENT spans never count.
 */
export function spanToCall(span: Span, resource: Resource | undefined, ctx: SpanContext): SpanResult {
  const attributes = attributesOf(span.attributes);
  if (!isToolCallSpan(span, attributes)) return { ok: false, kind: "not_tool_call", reason: "not an MCP tools/call span" };
  if (span.kind === Span_SpanKind.CLIENT || span.kind === Span_SpanKind.PRODUCER || span.kind === Span_SpanKind.CONSUMER) {
    return { ok: false, kind: "not_tool_call", reason: "tools/call span of the caller (kind not SERVER)" };
  }
  if (span.kind !== Span_SpanKind.SERVER && span.parentSpanId.length > 0 && !ctx.parentIsOtherSpan) {
    return { ok: false, kind: "not_tool_call", reason: "INTERNAL tools/call span under another span (its SERVER span counts)" };
  }
  const toolName = stringAttribute(attributes, SPAN_ATTRIBUTES.tool) ?? toolFromSpanName(span.name);
  if (toolName === undefined) return { ok: false, kind: "invalid", reason: "tool_name: missing" };

  const startedAt = isoFromUnixNano(span.startTimeUnixNano);
  if (startedAt === null) return { ok: false, kind: "invalid", reason: "started_at: invalid" };
  const durationNanos = span.endTimeUnixNano - span.startTimeUnixNano;
  const argsText = argumentsHash(attributes);
  const sessionValue = stringAttribute(attributes, SPAN_ATTRIBUTES.session);
  const wire = {
    v: 1,
    type: "call",
    // SPEC §4 case 3: the transport session (Mcp-Session-Id), derived as the SDK derives it, so
    // the same conversation reads as one session whichever way it was reported.
    session_id: sessionValue === undefined || sessionValue === "" ? "" : sessionIdOf(sessionValue, ctx),
    client_name: clientName(attributes),
    tool_name: toolName,
    started_at: startedAt,
    // Whole milliseconds, as the SDK sends them; a negative span (end before start) fails validation.
    duration_ms: Math.round(Number(durationNanos) / 1_000_000),
    outcome: outcomeOf(span, attributes),
    // Spans carry neither the result's size nor whether it was empty (docs/otlp.md).
    response_bytes: 0,
    is_empty: false,
    // A placeholder that passes the wire's hash check when the arguments are unknown; replaced below.
    args_hash: argsText ?? "0000",
    client_version: stringAttribute(attributes, SPAN_ATTRIBUTES.clientVersion),
    server_version: stringAttribute(attributes, SPAN_ATTRIBUTES.serverVersion) ?? stringAttribute(attributesOf(resource?.attributes ?? []), ["service.version"]),
    protocol_version: stringAttribute(attributes, SPAN_ATTRIBUTES.protocolVersion),
    session_kind: sessionValue === undefined || sessionValue === "" ? "none" : "transport",
    transport: transportOf(attributes),
  };
  const parsed = parsePayload(wire, ctx.nowMs);
  if (!parsed.ok) return { ok: false, kind: "invalid", reason: parsed.reason };
  const call = parsed.payload as CallPayload;
  return { ok: true, call: argsText === undefined ? { ...call, args_hash: NO_ARGS_HASH } : call };
}

/** `s_` + hex12 of HMAC-SHA256(ingest key, `transport:` + value) (SPEC §4 case 3), once per value and request. */
function sessionIdOf(value: string, ctx: SpanContext): string {
  const known = ctx.sessionIds?.get(value);
  if (known !== undefined) return known;
  const id = `s_${hmacSha256HexPrefix(ctx.ingestKey, `transport:${value}`, HASH_HEX_CHARS)}`;
  ctx.sessionIds?.set(value, id);
  return id;
}

/** SPEC §10: `tool_error` → tool_error; invalid params (−32602) → bad_args; any other error or status ERROR → crashed. */
function outcomeOf(span: Span, attributes: Attributes): CallPayload["outcome"] {
  const errorType = scalarAttribute(attributes, SPAN_ATTRIBUTES.errorType);
  const code = jsonRpcCode(attributes);
  if (errorType !== undefined) {
    const normalised = String(errorType).trim().toLowerCase().replace(/[^a-z0-9-]/g, "");
    if (normalised === "toolerror") return "tool_error";
    if (normalised === String(INVALID_PARAMS) || normalised === "invalidparams" || code === INVALID_PARAMS) return "bad_args";
    if (normalised !== "") return "crashed";
  }
  if (code === INVALID_PARAMS) return "bad_args";
  if (code !== undefined && code !== 0) return "crashed";
  if (scalarAttribute(attributes, SPAN_ATTRIBUTES.toolIsError) === true) return "tool_error";
  return span.status?.code === Status_StatusCode.ERROR ? "crashed" : "ok";
}

function jsonRpcCode(attributes: Attributes): number | undefined {
  const value = scalarAttribute(attributes, SPAN_ATTRIBUTES.jsonRpcCode);
  if (value === undefined || typeof value === "boolean") return undefined;
  const number = typeof value === "string" ? Number(value.trim()) : value;
  return Number.isInteger(number) ? number : undefined;
}

/**
 * The client's name from the span's attributes, cut to SPEC §1.2's 128 code points: a descriptive
 * field never costs the call; not said (or not text) → `unknown`.
 */
function clientName(attributes: Attributes): string {
  const name = stringAttribute(attributes, SPAN_ATTRIBUTES.clientName);
  if (name === undefined || name.trim() === "") return UNKNOWN_CLIENT_NAME;
  return codePointLength(name) <= MAX_CLIENT_NAME_CHARS ? name : cutToCodePoints(name, MAX_CLIENT_NAME_CHARS);
}

function cutToCodePoints(text: string, max: number): string {
  let out = "";
  let count = 0;
  for (const char of text) {
    if (count === max) break;
    out += char;
    count++;
  }
  return out;
}

/** `mcp.transport` as said, else from `network.transport` (`pipe` is stdio; a socket under HTTP is http). */
function transportOf(attributes: Attributes): string | null {
  const said = stringAttribute(attributes, SPAN_ATTRIBUTES.transport);
  if (said !== undefined) return said === "streamable-http" || said === "streamable_http" ? "http" : said;
  const network = stringAttribute(attributes, SPAN_ATTRIBUTES.networkTransport);
  if (network === undefined) return null;
  if (network === "pipe") return "stdio";
  const protocol = stringAttribute(attributes, SPAN_ATTRIBUTES.networkProtocol);
  return protocol?.toLowerCase() === "http" ? "http" : "unknown";
}

/** Semantic conventions name a span `{method} {target}`: `tools/call get_weather`. */
function toolFromSpanName(name: string): string | undefined {
  const match = /^tools\/call\s+(\S.*)$/.exec(name);
  return match?.[1]?.trim() || undefined;
}

/**
 * args_hash (SPEC §1.3) of the arguments the emitter recorded, hashed as the SDK hashes the object;
 * undefined when none. Only the hash leaves this function.
 */
function argumentsHash(attributes: Attributes): string | undefined {
  for (const key of SPAN_ATTRIBUTES.arguments) {
    const value = attributes.get(key);
    if (value === undefined) continue;
    if (value.value.case === "stringValue") {
      const text = value.value.value;
      try {
        return argsHash(JSON.parse(text));
      } catch {
        return argsHash(text);
      }
    }
    return argsHash(jsonOf(value));
  }
  let perKey: Record<string, unknown> | undefined;
  for (const [key, value] of attributes) {
    if (!key.startsWith(SPAN_ATTRIBUTES.argumentPrefix)) continue;
    perKey ??= {};
    perKey[key.slice(SPAN_ATTRIBUTES.argumentPrefix.length)] = jsonOf(value);
  }
  return perKey === undefined ? undefined : argsHash(perKey);
}

/** An AnyValue as JSON: int64 as a number when exact, else as its decimal text; bytes as base64. */
function jsonOf(value: AnyValue): unknown {
  const v = value.value;
  switch (v.case) {
    case "stringValue":
    case "boolValue":
    case "doubleValue":
      return v.value;
    case "intValue":
      return v.value >= BigInt(Number.MIN_SAFE_INTEGER) && v.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v.value) : v.value.toString();
    case "arrayValue":
      return v.value.values.map(jsonOf);
    case "kvlistValue": {
      const out: Record<string, unknown> = {};
      for (const kv of v.value.values) out[kv.key] = kv.value === undefined ? null : jsonOf(kv.value);
      return out;
    }
    case "bytesValue":
      return btoa(String.fromCharCode(...v.value));
    default:
      return null;
  }
}

/** The first of `keys` present as a scalar (string, bool, int, double); int64 outside ±2^53 as text. */
function scalarAttribute(attributes: Attributes, keys: readonly string[]): string | number | boolean | undefined {
  for (const key of keys) {
    const value = attributes.get(key);
    if (value === undefined) continue;
    const v = value.value;
    if (v.case === "stringValue" || v.case === "boolValue" || v.case === "doubleValue") return v.value;
    if (v.case === "intValue") return jsonOf(value) as string | number;
  }
  return undefined;
}

/** The first of `keys` present, as text (numbers written out: some emitters send versions as numbers). */
function stringAttribute(attributes: Attributes, keys: readonly string[]): string | undefined {
  const value = scalarAttribute(attributes, keys);
  return value === undefined || typeof value === "boolean" ? undefined : String(value);
}

/** RFC 3339 with nanoseconds (SPEC §1.2 takes 0–9 fraction digits), or null outside Date's range. */
export function isoFromUnixNano(nanos: bigint): string | null {
  if (nanos <= 0n) return null;
  const ms = nanos / 1_000_000n;
  if (ms > 8_640_000_000_000_000n) return null;
  const iso = new Date(Number(ms)).toISOString();
  return `${iso.slice(0, -1)}${(nanos % 1_000_000n).toString().padStart(6, "0")}Z`;
}
