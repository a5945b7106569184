// POST /v1/traces (SPEC §10) in workerd: both encodings and their answers (partial_success, the
// Status error body), the key in either header, and hostile bodies — a gzip bomb, deep nesting,
// huge attribute values, wrong types, truncated protobuf, wrong content types, empty bodies — with
// every limit at, just under and just over it. Calls land where SDK calls land (storedRows).
import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { fromBinary, fromJsonString } from "@bufbuild/protobuf";
import { MAX_BATCH_ITEMS, MAX_BODY_BYTES } from "../../src/shared/index.ts";
import type { Env } from "../../src/worker/env.ts";
import { StatusSchema } from "../../src/worker/otlp/gen/google/rpc/status_pb.ts";
import { ExportTraceServiceResponseSchema } from "../../src/worker/otlp/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.ts";
import { resetD1FailingForTests } from "../../src/worker/queues/ingest-writes.ts";
import { capturingQueue, failingD1 } from "./helpers/faults.ts";
import { storedRows } from "./helpers/ingest.ts";
import { exportRequest, otherSpan, otlpJsonOf, postTraces, protobufOf, Status_StatusCode, toolSpan } from "./helpers/otlp.ts";
import { createProject, setPayloadBudget } from "./helpers/projects.ts";

beforeEach(() => resetD1FailingForTests());
afterEach(() => vi.restoreAllMocks());

const JSON_TYPE = "application/json";

async function gzip(bytes: Uint8Array | string): Promise<Uint8Array> {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  return new Uint8Array(await new Response(new Blob([data]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

/**
 * The google.rpc.Status of an error answer, decoded in the answer's encoding. Its message ends with
 * the request's id, the answer's X-Request-Id (checked here, and left off what is returned).
 */
async function statusOf(res: Response, httpStatus: number): Promise<{ code: number; message: string }> {
  expect(res.status).toBe(httpStatus);
  const type = res.headers.get("content-type");
  let status: { code: number; message: string };
  if (type === "application/x-protobuf") status = fromBinary(StatusSchema, new Uint8Array(await res.arrayBuffer()));
  else {
    expect(type).toBe(JSON_TYPE);
    status = fromJsonString(StatusSchema, await res.text());
  }
  const requestId = res.headers.get("x-request-id");
  expect(requestId).toMatch(/^[\w-]+$/);
  const suffix = ` (request id ${requestId})`;
  expect(status.message.endsWith(suffix), status.message).toBe(true);
  return { code: status.code, message: status.message.slice(0, -suffix.length) };
}

const sample = () =>
  exportRequest([
    toolSpan("get_weather", { durationMs: 120, attrs: { "mcp.session.id": "sess-1", "mcp.client.name": "claude-ai" } }),
    toolSpan("get_weather", { durationMs: 80, attrs: { "error.type": "tool_error" }, status: Status_StatusCode.ERROR }),
    toolSpan("get_forecast", { durationMs: 9, attrs: { "error.type": "-32602" } }),
    otherSpan("POST /mcp"),
    toolSpan("x", { attrs: { "mcp.method.name": "tools/list" } }),
  ]);

describe("POST /v1/traces: both encodings", () => {
  it("protobuf: tool calls stored as calls, the other spans in partial_success, the answer in protobuf", async () => {
    const p = await createProject();
    const res = await postTraces(protobufOf(sample()), { key: p.ingest_key });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-protobuf");
    const answer = fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await res.arrayBuffer()));
    expect(answer.partialSuccess?.rejectedSpans).toBe(2n);
    expect(answer.partialSuccess?.errorMessage).toBe("2 spans not counted as MCP tool calls: 2 × not an MCP tools/call span");
    const { calls } = await storedRows(p.project_id);
    expect(calls.map((c) => [c.tool_name, c.outcome, c.duration_ms, c.client_name])).toEqual([
      ["get_weather", "ok", 120, "claude-ai"],
      ["get_weather", "tool_error", 80, "unknown"],
      ["get_forecast", "bad_args", 9, "unknown"],
    ]);
    expect(calls[0]!.session_id).toMatch(/^s_[0-9a-f]{12}$/);
    expect(calls[1]!.session_id).toBe("");
    expect(calls.map((c) => c.args_hash)).toEqual(["", "", ""]);
  });

  it("JSON: the same calls, the answer in OTLP JSON's lowerCamelCase", async () => {
    const p = await createProject();
    const res = await postTraces(otlpJsonOf(sample()), { key: p.ingest_key, contentType: "application/json; charset=utf-8" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(JSON_TYPE);
    expect(await res.json()).toEqual({ partialSuccess: { rejectedSpans: "2", errorMessage: "2 spans not counted as MCP tool calls: 2 × not an MCP tools/call span" } });
    expect((await storedRows(p.project_id)).calls.map((c) => c.tool_name)).toEqual(["get_weather", "get_weather", "get_forecast"]);
  });

  it("reads JSON with int64 as numbers and enums as integers, as some exporters write them", async () => {
    const p = await createProject();
    const json = JSON.parse(otlpJsonOf(exportRequest([toolSpan("num_tool", { durationMs: 5 })])));
    const span = json.resourceSpans[0].scopeSpans[0].spans[0];
    span.startTimeUnixNano = Number(span.startTimeUnixNano);
    span.endTimeUnixNano = Number(span.endTimeUnixNano);
    span.kind = 2;
    const res = await postTraces(JSON.stringify(json), { key: p.ingest_key, contentType: JSON_TYPE });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    expect((await storedRows(p.project_id)).calls.map((c) => c.tool_name)).toEqual(["num_tool"]);
  });

  it("all spans counted: an empty ExportTraceServiceResponse, no partial_success", async () => {
    const p = await createProject();
    const res = await postTraces(protobufOf(exportRequest([toolSpan("a")])), { key: p.ingest_key });
    expect(res.status).toBe(200);
    expect(fromBinary(ExportTraceServiceResponseSchema, new Uint8Array(await res.arrayBuffer())).partialSuccess).toBeUndefined();
  });

  it("gzip bodies, in both encodings", async () => {
    const p = await createProject();
    expect((await postTraces(await gzip(protobufOf(sample())), { key: p.ingest_key, headers: { "content-encoding": "gzip" } })).status).toBe(200);
    expect((await postTraces(await gzip(otlpJsonOf(sample())), { key: p.ingest_key, contentType: JSON_TYPE, headers: { "content-encoding": "gzip" } })).status).toBe(200);
    expect((await storedRows(p.project_id)).calls).toHaveLength(6);
  });
});

describe("keys", () => {
  it("takes the ingest key as Authorization: Bearer or x-mcpulse-key", async () => {
    const p = await createProject();
    const body = protobufOf(exportRequest([toolSpan("a")]));
    expect((await postTraces(body, { key: p.ingest_key })).status).toBe(200);
    expect((await postTraces(body, { key: p.ingest_key, keyHeader: "x-mcpulse-key" })).status).toBe(200);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });

  it("401 with a Status body for no key, a wrong key and a read key; nothing stored", async () => {
    const p = await createProject();
    const body = protobufOf(exportRequest([toolSpan("a")]));
    const none = await statusOf(await postTraces(body), 401);
    expect(none).toMatchObject({ code: 16, message: "missing bearer key" });
    await statusOf(await postTraces(body, { key: "mp_live_" + "0".repeat(32), keyHeader: "x-mcpulse-key" }), 401);
    const read = await postTraces(body, { key: p.read_key });
    expect(read.headers.get("www-authenticate")).toBe('Bearer realm="mcpulse"');
    await statusOf(read, 401);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("a key of project A writes only project A's calls", async () => {
    const a = await createProject();
    const b = await createProject();
    await postTraces(protobufOf(exportRequest([toolSpan("only_a")])), { key: a.ingest_key });
    expect((await storedRows(a.project_id)).calls).toHaveLength(1);
    expect((await storedRows(b.project_id)).calls).toHaveLength(0);
  });
});

describe("hostile and wrong bodies", () => {
  it("415 for other content types and encodings (the error in JSON when the request named neither encoding)", async () => {
    const p = await createProject();
    const body = protobufOf(exportRequest([toolSpan("a")]));
    for (const contentType of ["text/plain", "application/protobuf", "application/grpc", "application/x-www-form-urlencoded"]) {
      expect((await statusOf(await postTraces(body, { key: p.ingest_key, contentType }), 415)).code).toBe(3);
    }
    await statusOf(await postTraces(body, { key: p.ingest_key, contentType: null }), 415);
    for (const encoding of ["br", "deflate", "zstd"]) await statusOf(await postTraces(body, { key: p.ingest_key, headers: { "content-encoding": encoding } }), 415);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("400 for truncated protobuf, bytes that are not protobuf, JSON that is not JSON, and invalid gzip", async () => {
    const p = await createProject();
    const whole = protobufOf(sample());
    const truncated = await statusOf(await postTraces(whole.slice(0, whole.length - 7), { key: p.ingest_key }), 400);
    expect(truncated).toEqual(expect.objectContaining({ code: 3, message: "body is not an OTLP ExportTraceServiceRequest (protobuf)" }));
    await statusOf(await postTraces(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), { key: p.ingest_key }), 400);
    await statusOf(await postTraces('{"resourceSpans": [', { key: p.ingest_key, contentType: JSON_TYPE }), 400);
    await statusOf(await postTraces("not gzip", { key: p.ingest_key, headers: { "content-encoding": "gzip" } }), 400);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("400 for JSON with wrong types (a string for spans, an object for a time, a number for a name)", async () => {
    const p = await createProject();
    const good = JSON.parse(otlpJsonOf(exportRequest([toolSpan("a")])));
    const variants = [
      { resourceSpans: "x" },
      { resourceSpans: [{ scopeSpans: [{ spans: "x" }] }] },
      (() => { const j = structuredClone(good); j.resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano = { n: 1 }; return j; })(),
      (() => { const j = structuredClone(good); j.resourceSpans[0].scopeSpans[0].spans[0].name = 42; return j; })(),
      (() => { const j = structuredClone(good); j.resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value = { stringValue: 7 }; return j; })(),
      [1, 2, 3],
    ];
    for (const v of variants) await statusOf(await postTraces(JSON.stringify(v), { key: p.ingest_key, contentType: JSON_TYPE }), 400);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("an empty body: an empty protobuf request is valid (200, nothing stored); an empty JSON body is a 400", async () => {
    const p = await createProject();
    const res = await postTraces(new Uint8Array(), { key: p.ingest_key });
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
    await statusOf(await postTraces("", { key: p.ingest_key, contentType: JSON_TYPE }), 400);
    expect((await postTraces("{}", { key: p.ingest_key, contentType: JSON_TYPE })).status).toBe(200);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("deep nesting: an attribute value nested past the decoder's limit is a 400 (protobuf and JSON), never a crash", async () => {
    const p = await createProject();
    // AnyValue{kvlist{KeyValue{key, AnyValue{…}}}}, 300 levels, hand-encoded from the inside out.
    const tag = (field: number, bytes: Uint8Array) => Uint8Array.from([(field << 3) | 2, ...varint(bytes.length), ...bytes]);
    let value = tag(1, new TextEncoder().encode("deep"));
    for (let i = 0; i < 300; i++) value = tag(6, tag(1, Uint8Array.from([...tag(1, new TextEncoder().encode("k")), ...tag(2, value)])));
    // Request.resource_spans(1) → ResourceSpans.resource(1) → Resource.attributes(1) → KeyValue.value(2),
    // followed by a valid request (repeated fields concatenate): the deep value is refused whole.
    const resourceSpans = tag(1, tag(1, tag(2, value)));
    const body = Uint8Array.from([...tag(1, resourceSpans), ...protobufOf(exportRequest([toolSpan("a")]))]);
    await statusOf(await postTraces(body, { key: p.ingest_key }), 400);
    let json: unknown = { stringValue: "deep" };
    for (let i = 0; i < 300; i++) json = { kvlistValue: { values: [{ key: "k", value: json }] } };
    const jsonBody = JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: "deep", value: json }] }, scopeSpans: [] }] });
    await statusOf(await postTraces(jsonBody, { key: p.ingest_key, contentType: JSON_TYPE }), 400);
    // 20 levels is a value like any other.
    let shallow: unknown = { stringValue: "x" };
    for (let i = 0; i < 20; i++) shallow = { kvlistValue: { values: [{ key: "k", value: shallow }] } };
    const okJson = JSON.parse(otlpJsonOf(exportRequest([toolSpan("nested_ok")])));
    okJson.resourceSpans[0].scopeSpans[0].spans[0].attributes.push({ key: "gen_ai.tool.call.arguments", value: shallow });
    expect((await postTraces(JSON.stringify(okJson), { key: p.ingest_key, contentType: JSON_TYPE })).status).toBe(200);
    expect((await storedRows(p.project_id)).calls.map((c) => c.tool_name)).toEqual(["nested_ok"]);
  });

  it("huge attribute values (arguments, session id, client name of ~300 KB each) cost the call nothing and are never stored", async () => {
    const p = await createProject();
    const big = "Z".repeat(300_000);
    const span = toolSpan("big_tool", { attrs: { "gen_ai.tool.call.arguments": JSON.stringify({ q: big }), "mcp.session.id": big, "mcp.client.name": big } });
    const res = await postTraces(protobufOf(exportRequest([span])), { key: p.ingest_key });
    expect(res.status).toBe(200);
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(1);
    expect(rows.calls[0]).toMatchObject({ tool_name: "big_tool", client_name: "Z".repeat(128) });
    expect(rows.calls[0]!.args_hash).toMatch(/^[0-9a-f]{12}$/);
    expect(JSON.stringify(rows)).not.toContain("Z".repeat(129));
  });

  it("a gzip bomb stops inflating at the limit: 413", async () => {
    const p = await createProject();
    const bomb = await gzip(new Uint8Array(64 * MAX_BODY_BYTES));
    expect(bomb.byteLength).toBeLessThan(MAX_BODY_BYTES / 8);
    await statusOf(await postTraces(bomb, { key: p.ingest_key, headers: { "content-encoding": "gzip" } }), 413);
  });
});

describe("limits, at, just under and just over", () => {
  /** A protobuf request of exactly `bytes` bytes: one tool span, padded by one more attribute. */
  function requestOfExactly(bytes: number): Uint8Array {
    let pad = bytes - 200;
    for (;;) {
      const body = protobufOf(exportRequest([toolSpan("padded", { attrs: { pad: "p".repeat(pad) } })]));
      if (body.length === bytes) return body;
      pad += bytes - body.length;
      if (pad < 0) throw new Error("cannot pad");
    }
  }

  it("body: exactly 1 MiB and 1 byte under are accepted; 1 byte over is a 413 — raw and inflated alike", async () => {
    const p = await createProject();
    expect((await postTraces(requestOfExactly(MAX_BODY_BYTES), { key: p.ingest_key })).status).toBe(200);
    expect((await postTraces(requestOfExactly(MAX_BODY_BYTES - 1), { key: p.ingest_key })).status).toBe(200);
    expect((await statusOf(await postTraces(requestOfExactly(MAX_BODY_BYTES + 1), { key: p.ingest_key }), 413)).message).toBe(`body over ${MAX_BODY_BYTES} bytes`);
    const gz = { "content-encoding": "gzip" };
    expect((await postTraces(await gzip(requestOfExactly(MAX_BODY_BYTES)), { key: p.ingest_key, headers: gz })).status).toBe(200);
    await statusOf(await postTraces(await gzip(requestOfExactly(MAX_BODY_BYTES + 1)), { key: p.ingest_key, headers: gz }), 413);
    expect((await storedRows(p.project_id)).calls).toHaveLength(3);
  });

  it("spans per request: 999 and 1,000 are accepted; 1,001 is a 413 and nothing is stored", async () => {
    const p = await createProject();
    const spans = (n: number) => protobufOf(exportRequest(Array.from({ length: n }, (_, i) => (i % 2 === 0 ? toolSpan("t") : otherSpan("db")))));
    expect((await postTraces(spans(MAX_BATCH_ITEMS - 1), { key: p.ingest_key })).status).toBe(200);
    expect((await postTraces(spans(MAX_BATCH_ITEMS), { key: p.ingest_key })).status).toBe(200);
    expect((await statusOf(await postTraces(spans(MAX_BATCH_ITEMS + 1), { key: p.ingest_key }), 413)).message).toBe(`more than ${MAX_BATCH_ITEMS} spans in request`);
    expect((await storedRows(p.project_id)).calls).toHaveLength(500 + 500);
  });
});

describe("throttling and durability: 429 and 503 with Retry-After", () => {
  it("a key over its payload budget gets 429 with Retry-After; spans count against it as items do", async () => {
    const p = await createProject();
    await setPayloadBudget(p.project_id, 3);
    const body = protobufOf(exportRequest([toolSpan("a"), otherSpan("db"), toolSpan("b")]));
    expect((await postTraces(body, { key: p.ingest_key })).status).toBe(200);
    const res = await postTraces(body, { key: p.ingest_key });
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect((await statusOf(res, 429)).code).toBe(8);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });

  it("while D1 fails and the queue refuses too: 503 with Retry-After, never 500", async () => {
    const p = await createProject();
    const body = protobufOf(exportRequest([toolSpan("a")]));
    expect((await postTraces(body, { key: p.ingest_key })).status).toBe(200);
    const d1 = failingD1();
    d1.failing = true;
    const queue = capturingQueue();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const bindings: Env = { ...env, INGEST_RETRY_BASE_MS: "1", DB: d1.db, INGEST_QUEUE: queue.queue };
    expect((await postTraces(body, { key: p.ingest_key, env: bindings })).status).toBe(200); // queued after the answer
    expect(queue.sent).toHaveLength(1);
    queue.refuse = true;
    const refused = await postTraces(otlpJsonOf(exportRequest([toolSpan("a")])), { key: p.ingest_key, env: bindings, contentType: JSON_TYPE });
    expect(refused.headers.get("retry-after")).toBe("10");
    expect(await statusOf(refused, 503)).toEqual(expect.objectContaining({ code: 14, message: "ingest temporarily unavailable; retry later" }));
  });
});

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}
