// Test helpers for POST /v1/traces: spans built with the generated OTLP schemas, encoded as protobuf
// or OTLP JSON (hex ids, as exporters write them), and a runner that waits for the waitUntil writes.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { create, toBinary, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import worker from "../../../src/worker/index.ts";
import type { Env } from "../../../src/worker/env.ts";
import {
  ExportTraceServiceRequestSchema,
  type ExportTraceServiceRequest,
} from "../../../src/worker/otlp/gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.ts";
import { AnyValueSchema, type AnyValue } from "../../../src/worker/otlp/gen/opentelemetry/proto/common/v1/common_pb.ts";
import { Span_SpanKind, SpanSchema, Status_StatusCode, type Span } from "../../../src/worker/otlp/gen/opentelemetry/proto/trace/v1/trace_pb.ts";

export { Span_SpanKind, Status_StatusCode };

type Scalar = string | number | boolean | bigint;

/** An AnyValue from a JS value: whole numbers as intValue, other numbers as doubleValue. */
export function anyValue(value: Scalar | Scalar[] | { [k: string]: Scalar }): MessageInitShape<typeof AnyValueSchema> {
  if (typeof value === "string") return { value: { case: "stringValue", value } };
  if (typeof value === "boolean") return { value: { case: "boolValue", value } };
  if (typeof value === "bigint") return { value: { case: "intValue", value } };
  if (typeof value === "number") return Number.isInteger(value) ? { value: { case: "intValue", value: BigInt(value) } } : { value: { case: "doubleValue", value } };
  if (Array.isArray(value)) return { value: { case: "arrayValue", value: { values: value.map(anyValue) } } };
  return { value: { case: "kvlistValue", value: { values: Object.entries(value).map(([key, v]) => ({ key, value: anyValue(v) })) } } };
}

export function attributes(record: Record<string, Scalar | Scalar[]>): MessageInitShape<typeof SpanSchema>["attributes"] {
  return Object.entries(record).map(([key, value]) => ({ key, value: anyValue(value) }));
}

let nextId = 1;
/** 8 bytes, unique per call in this test file. */
export function spanId(): Uint8Array {
  const id = new Uint8Array(8);
  new DataView(id.buffer).setBigUint64(0, BigInt(nextId++));
  return id;
}
export const TRACE_ID = Uint8Array.from({ length: 16 }, (_, i) => i + 1);

export type SpanOptions = {
  name?: string;
  kind?: Span_SpanKind;
  startMs?: number;
  durationMs?: number;
  attrs?: Record<string, Scalar | Scalar[]>;
  status?: Status_StatusCode;
  parentSpanId?: Uint8Array;
  spanId?: Uint8Array;
  traceId?: Uint8Array;
  /** All the span's attributes, instead of the tool call's. */
  onlyAttrs?: Record<string, Scalar | Scalar[]>;
};

/** A SERVER `tools/call` span of `tool`, one minute ago, 42 ms, ok, by default. */
export function toolSpan(tool: string, options: SpanOptions = {}): Span {
  const startMs = options.startMs ?? Date.now() - 60_000;
  const startNanos = BigInt(Math.round(startMs * 1000)) * 1000n;
  return create(SpanSchema, {
    traceId: options.traceId ?? TRACE_ID,
    spanId: options.spanId ?? spanId(),
    parentSpanId: options.parentSpanId ?? new Uint8Array(),
    name: options.name ?? `tools/call ${tool}`,
    kind: options.kind ?? Span_SpanKind.SERVER,
    startTimeUnixNano: startNanos,
    endTimeUnixNano: startNanos + BigInt(Math.round((options.durationMs ?? 42) * 1_000_000)),
    attributes: attributes(options.onlyAttrs ?? { "mcp.method.name": "tools/call", "gen_ai.tool.name": tool, ...(options.attrs ?? {}) }),
    status: { code: options.status ?? Status_StatusCode.UNSET },
  });
}

/** Any other span (an HTTP SERVER span, a DB call…): never a call. */
export function otherSpan(name: string, options: SpanOptions = {}): Span {
  return toolSpan("x", { ...options, name, onlyAttrs: options.attrs ?? { "http.request.method": "POST" } });
}

export function exportRequest(spans: Span[], resourceAttrs: Record<string, Scalar> = { "service.name": "weather-server", "service.version": "1.4.0" }): ExportTraceServiceRequest {
  return create(ExportTraceServiceRequestSchema, {
    resourceSpans: [{ resource: { attributes: attributes(resourceAttrs) }, scopeSpans: [{ scope: { name: "test" }, spans }] }],
  });
}

export function protobufOf(request: ExportTraceServiceRequest): Uint8Array {
  return toBinary(ExportTraceServiceRequestSchema, request);
}

/** OTLP JSON: proto3 JSON with trace and span ids in hex, as the OTLP exporters write it. */
export function otlpJsonOf(request: ExportTraceServiceRequest): string {
  const json = toJson(ExportTraceServiceRequestSchema, request) as { resourceSpans?: { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[] };
  for (const rs of json.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) {
    for (const field of ["traceId", "spanId", "parentSpanId"]) {
      const value = span[field];
      if (typeof value === "string") span[field] = [...atob(value)].map((c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
    }
  }
  return JSON.stringify(json);
}

export type TracesOptions = { key?: string | null; keyHeader?: "authorization" | "x-mcpulse-key"; contentType?: string | null; headers?: Record<string, string>; env?: Env };

/** POSTs to /v1/traces through the real worker and waits for its waitUntil writes. */
export async function postTraces(body: BodyInit | null, options: TracesOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) {
    if (options.keyHeader === "x-mcpulse-key") headers["x-mcpulse-key"] = options.key;
    else headers.authorization = `Bearer ${options.key}`;
  }
  const contentType = options.contentType === undefined ? "application/x-protobuf" : options.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request("http://worker/v1/traces", { method: "POST", headers, body }) as never, options.env ?? env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

export type { AnyValue };
