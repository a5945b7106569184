// spanToCall (SPEC §10), the semantic conventions' table of docs/otlp.md as its test table: which
// spans are calls, and each call field from its attribute (current names and older spellings),
// with the limits of SPEC §1.2 at, just under and just over each.
import { describe, expect, it } from "vitest";
import { argsHash, MAX_CLIENT_NAME_CHARS, MAX_DURATION_MS, MAX_TOOL_NAME_CHARS } from "../../src/shared/index.ts";
import { derivedSessionId } from "../../src/sdk/session.ts";
import { NO_ARGS_HASH, spanToCall, isoFromUnixNano } from "../../src/worker/otlp/span-to-call.ts";
import { spansToCalls } from "../../src/worker/otlp/spans.ts";
import { exportRequest, otherSpan, spanId, Span_SpanKind, Status_StatusCode, toolSpan, type SpanOptions } from "./helpers/otlp.ts";

const KEY = "mp_live_0123456789abcdefghijklmnopqrstuv";
const ctx = { ingestKey: KEY, nowMs: Date.now(), parentIsOtherSpan: false };

function mapped(tool: string, options: SpanOptions = {}) {
  return spanToCall(toolSpan(tool, options), undefined, ctx);
}
function call(tool: string, options: SpanOptions = {}) {
  const result = mapped(tool, options);
  if (!result.ok) throw new Error(`not a call: ${result.reason}`);
  return result.call;
}

describe("which spans are calls", () => {
  it("a SERVER span with mcp.method.name = tools/call is a call with its tool, start and duration", () => {
    const startMs = Date.now() - 120_000;
    const c = call("get_weather", { startMs, durationMs: 137 });
    expect(c).toMatchObject({ type: "call", tool_name: "get_weather", duration_ms: 137, outcome: "ok", client_name: "unknown", session_id: "", session_kind: "none", response_bytes: 0, is_empty: false });
    expect(Math.round(c.started_at_ms)).toBe(startMs);
  });

  it("keeps the start to the microsecond (nanoseconds on the wire)", () => {
    expect(isoFromUnixNano(1_764_000_000_123_456_789n)).toBe("2025-11-24T16:00:00.123456789Z");
    expect(isoFromUnixNano(0n)).toBeNull();
  });

  it("reads the older mcp.tool.name, and the tool from the span name `tools/call <tool>` when no attribute says", () => {
    const older = toolSpan("x", { attrs: {} });
    older.attributes = older.attributes.filter((kv) => kv.key !== "gen_ai.tool.name");
    older.attributes.push({ ...older.attributes[0]!, key: "mcp.tool.name", value: { $typeName: "opentelemetry.proto.common.v1.AnyValue", value: { case: "stringValue", value: "legacy_tool" } } });
    const fromAttr = spanToCall(older, undefined, ctx);
    expect(fromAttr.ok && fromAttr.call.tool_name).toBe("legacy_tool");
    const nameOnly = toolSpan("x", { name: "tools/call from_name" });
    nameOnly.attributes = nameOnly.attributes.filter((kv) => kv.key !== "gen_ai.tool.name");
    const fromName = spanToCall(nameOnly, undefined, ctx);
    expect(fromName.ok && fromName.call.tool_name).toBe("from_name");
    const neither = toolSpan("x", { name: "tools/call" });
    neither.attributes = neither.attributes.filter((kv) => kv.key !== "gen_ai.tool.name");
    expect(spanToCall(neither, undefined, ctx)).toEqual({ ok: false, kind: "invalid", reason: "tool_name: missing" });
  });

  it("is not a call: another method, a span without MCP attributes, a CLIENT span of tools/call", () => {
    expect(mapped("t", { attrs: { "mcp.method.name": "tools/list" } })).toMatchObject({ ok: false, kind: "not_tool_call" });
    expect(spanToCall(otherSpan("POST /mcp"), undefined, ctx)).toMatchObject({ ok: false, kind: "not_tool_call" });
    expect(mapped("t", { kind: Span_SpanKind.CLIENT })).toMatchObject({ ok: false, kind: "not_tool_call" });
    expect(mapped("t", { kind: Span_SpanKind.PRODUCER })).toMatchObject({ ok: false, kind: "not_tool_call" });
  });

  it("INTERNAL spans: a root one is a call, one under an unknown parent is not (its SERVER span may count it)", () => {
    expect(mapped("t", { kind: Span_SpanKind.INTERNAL }).ok).toBe(true);
    expect(mapped("t", { kind: Span_SpanKind.UNSPECIFIED }).ok).toBe(true);
    expect(mapped("t", { kind: Span_SpanKind.INTERNAL, parentSpanId: spanId() })).toMatchObject({ ok: false, kind: "not_tool_call" });
    expect(spanToCall(toolSpan("t", { kind: Span_SpanKind.INTERNAL, parentSpanId: spanId() }), undefined, { ...ctx, parentIsOtherSpan: true }).ok).toBe(true);
  });

  it("never counts one call twice: a SERVER tools/call span and its INTERNAL child are one call; an INTERNAL one under an HTTP span is one", () => {
    const server = toolSpan("search");
    const child = toolSpan("search", { kind: Span_SpanKind.INTERNAL, parentSpanId: server.spanId });
    const http = otherSpan("POST /mcp");
    const underHttp = toolSpan("lookup", { kind: Span_SpanKind.INTERNAL, parentSpanId: http.spanId });
    const db = otherSpan("SELECT", { parentSpanId: server.spanId });
    const result = spansToCalls(exportRequest([child, server, http, underHttp, db]), { ingestKey: KEY, nowMs: Date.now() });
    expect(result.calls.map((c) => c.tool_name)).toEqual(["search", "lookup"]);
    expect(result.spans).toBe(5);
    expect(result.rejected).toBe(3);
    expect(result.message).toBe(
      "3 spans not counted as MCP tool calls: 2 × not an MCP tools/call span; 1 × INTERNAL tools/call span under another span (its SERVER span counts)",
    );
  });
});

describe("outcome (SPEC §10)", () => {
  const cases: [string, SpanOptions, string][] = [
    ["no error", {}, "ok"],
    ["status OK", { status: Status_StatusCode.OK }, "ok"],
    ["error.type = tool_error", { attrs: { "error.type": "tool_error" } }, "tool_error"],
    ["error.type = tool_error with status ERROR", { attrs: { "error.type": "tool_error" }, status: Status_StatusCode.ERROR }, "tool_error"],
    ["error.type = -32602", { attrs: { "error.type": "-32602" }, status: Status_StatusCode.ERROR }, "bad_args"],
    ["error.type = invalid_params", { attrs: { "error.type": "invalid_params" } }, "bad_args"],
    ["rpc.response.status_code = -32602", { attrs: { "rpc.response.status_code": "-32602" }, status: Status_StatusCode.ERROR }, "bad_args"],
    ["older rpc.jsonrpc.error_code = -32602 (an int)", { attrs: { "rpc.jsonrpc.error_code": -32602 } }, "bad_args"],
    ["error.type = -32603", { attrs: { "error.type": "-32603" } }, "crashed"],
    ["error.type = an exception class", { attrs: { "error.type": "TimeoutError" } }, "crashed"],
    ["rpc.jsonrpc.error_code = -32000", { attrs: { "rpc.jsonrpc.error_code": -32000 } }, "crashed"],
    ["status ERROR alone", { status: Status_StatusCode.ERROR }, "crashed"],
    ["mcp.tool.result.is_error = true (Sentry-style)", { attrs: { "mcp.tool.result.is_error": true } }, "tool_error"],
    ["mcp.tool.result.is_error = false", { attrs: { "mcp.tool.result.is_error": false } }, "ok"],
  ];
  it.each(cases)("%s → %s", (_name, options, outcome) => {
    expect(call("t", options).outcome).toBe(outcome);
  });
});

describe("session, client and descriptive fields", () => {
  it("derives the session from mcp.session.id exactly as the SDK derives a transport session (SPEC §4)", () => {
    const c = call("t", { attrs: { "mcp.session.id": "3f1c-session" } });
    expect(c.session_id).toBe(derivedSessionId(KEY, "transport", "3f1c-session"));
    expect(c.session_id).toMatch(/^s_[0-9a-f]{12}$/);
    expect(c.session_kind).toBe("transport");
    expect(call("t", { attrs: { "mcp.session.id": "" } }).session_id).toBe("");
  });

  it("takes the client from mcp.client.name and its version, else unknown; a long name is cut at 128 code points, never dropped", () => {
    expect(call("t", { attrs: { "mcp.client.name": "claude-ai", "mcp.client.version": "0.9.1" } })).toMatchObject({ client_name: "claude-ai", client_version: "0.9.1" });
    expect(call("t", { attrs: { "mcp.client.name": "  " } }).client_name).toBe("unknown");
    expect(call("t", { attrs: { "mcp.client.name": true } }).client_name).toBe("unknown");
    const at = "é".repeat(MAX_CLIENT_NAME_CHARS);
    expect(call("t", { attrs: { "mcp.client.name": at } }).client_name).toBe(at);
    expect(call("t", { attrs: { "mcp.client.name": "😀".repeat(MAX_CLIENT_NAME_CHARS + 1) } }).client_name).toBe("😀".repeat(MAX_CLIENT_NAME_CHARS));
  });

  it("normalises descriptive fields instead of dropping the call", () => {
    const c = spanToCall(toolSpan("t", { attrs: { "mcp.protocol.version": "2025-06-18", "network.transport": "pipe" } }), { $typeName: "opentelemetry.proto.resource.v1.Resource", attributes: [], droppedAttributesCount: 0, entityRefs: [] }, ctx);
    expect(c.ok && c.call).toMatchObject({ protocol_version: "2025-06-18", transport: "stdio" });
    expect(call("t", { attrs: { "mcp.transport": "streamable-http" } }).transport).toBe("http");
    expect(call("t", { attrs: { "mcp.transport": "carrier-pigeon" } }).transport).toBe("unknown");
    expect(call("t", { attrs: { "network.transport": "tcp", "network.protocol.name": "http" } }).transport).toBe("http");
    expect(call("t", { attrs: { "mcp.protocol.version": "x".repeat(65) } }).protocol_version).toBeNull();
    expect(call("t", { attrs: { "mcp.client.version": 3 } }).client_version).toBe("3");
  });

  it("reads the server version from mcp.server.version, else the resource's service.version", () => {
    const request = exportRequest([toolSpan("t"), toolSpan("u", { attrs: { "mcp.server.version": "2.0.0" } })]);
    const { calls } = spansToCalls(request, { ingestKey: KEY, nowMs: Date.now() });
    expect(calls.map((c) => c.server_version)).toEqual(["1.4.0", "2.0.0"]);
  });
});

describe("arguments: hashed at ingest as the SDK hashes them (SPEC §1.3), never kept", () => {
  it("hashes gen_ai.tool.call.arguments (JSON text) like the object, whatever its key order", () => {
    const args = { city: "Paris", units: "metric", days: 3 };
    const c = call("t", { attrs: { "gen_ai.tool.call.arguments": '{"units":"metric","days":3,"city":"Paris"}' } });
    expect(c.args_hash).toBe(argsHash(args));
    expect(JSON.stringify(c)).not.toContain("Paris");
  });

  it("text that is not JSON is hashed as a string; per-argument attributes as one object; none → no hash", () => {
    expect(call("t", { attrs: { "gen_ai.tool.call.arguments": "{cut" } }).args_hash).toBe(argsHash("{cut"));
    expect(call("t", { attrs: { "mcp.request.argument.city": "Paris", "mcp.request.argument.days": 3 } }).args_hash).toBe(argsHash({ city: "Paris", days: 3 }));
    expect(call("t").args_hash).toBe(NO_ARGS_HASH);
  });
});

describe("limits (SPEC §1.2), at, just under and just over", () => {
  it("tool names of 199 and 200 code points are calls; 201 is refused", () => {
    expect(call("😀".repeat(MAX_TOOL_NAME_CHARS - 1)).tool_name).toHaveLength((MAX_TOOL_NAME_CHARS - 1) * 2);
    expect(mapped("😀".repeat(MAX_TOOL_NAME_CHARS)).ok).toBe(true);
    expect(mapped("a".repeat(MAX_TOOL_NAME_CHARS + 1))).toMatchObject({ ok: false, kind: "invalid" });
  });

  it("durations of 86,399,999 and 86,400,000 ms are calls; one more, or a span that ends before it starts, is refused", () => {
    const startMs = Date.now() - MAX_DURATION_MS - 120_000;
    expect(call("t", { startMs, durationMs: MAX_DURATION_MS - 1 }).duration_ms).toBe(MAX_DURATION_MS - 1);
    expect(call("t", { startMs, durationMs: MAX_DURATION_MS }).duration_ms).toBe(MAX_DURATION_MS);
    expect(mapped("t", { startMs, durationMs: MAX_DURATION_MS + 1 })).toMatchObject({ ok: false, kind: "invalid" });
    expect(mapped("t", { durationMs: -5 })).toMatchObject({ ok: false, kind: "invalid" });
  });

  it("a start more than 7 days old or 5 minutes ahead is refused, as for SDK calls", () => {
    const day = 86_400_000;
    expect(mapped("t", { startMs: Date.now() - 7 * day + 60_000 }).ok).toBe(true);
    expect(mapped("t", { startMs: Date.now() - 7 * day - 60_000 })).toMatchObject({ ok: false, reason: expect.stringMatching(/^started_at/) });
    expect(mapped("t", { startMs: Date.now() + 10 * 60_000 })).toMatchObject({ ok: false, reason: expect.stringMatching(/^started_at/) });
  });
});
