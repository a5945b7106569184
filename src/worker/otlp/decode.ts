// The OTLP/HTTP wire (SPEC §10): an ExportTraceServiceRequest read from protobuf or OTLP's JSON
// mapping with the generated code of ./gen (@bufbuild/protobuf: no eval, so it runs in Workers),
// and the answers written in the request's own encoding, as the OTLP specification asks.
import { create, fromBinary, fromJson, toBinary, toJsonString, type JsonValue } from "@bufbuild/protobuf";
import { StatusSchema } from "./gen/google/rpc/status_pb.ts";
import {
  ExportTraceServiceRequestSchema,
  ExportTraceServiceResponseSchema,
  type ExportTraceServiceRequest,
} from "./gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.ts";

export type OtlpEncoding = "protobuf" | "json";

/** The two media types OTLP/HTTP defines; anything else is a 415. */
export const OTLP_MEDIA_TYPES = { "application/x-protobuf": "protobuf", "application/json": "json" } as const satisfies Record<string, OtlpEncoding>;

/** `application/x-protobuf` or `application/json` (any case, parameters ignored), else null. */
export function otlpEncodingOf(contentType: string | undefined): OtlpEncoding | null {
  const media = contentType?.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  return (OTLP_MEDIA_TYPES as Record<string, OtlpEncoding>)[media] ?? null;
}

/**
 * How deep a message may nest: an attribute value that is a list in a list… The library's own
 * default (100) is kept and named here: no real span nests that deep, and a body that does is
 * refused with a 400 instead of exhausting the stack.
 */
export const MAX_MESSAGE_DEPTH = 100;

/**
 * The request, or null when the body cannot be decoded (400). Unknown fields are skipped (OTLP asks
 * receivers to). OTLP's JSON writes trace and span ids in hex where proto3 JSON has base64, so they
 * are converted back first.
 */
export function decodeExportRequest(bytes: Uint8Array, encoding: OtlpEncoding): ExportTraceServiceRequest | null {
  try {
    if (encoding === "protobuf") {
      return fromBinary(ExportTraceServiceRequestSchema, bytes, { readUnknownFields: false, recursionLimit: MAX_MESSAGE_DEPTH });
    }
    const json: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
    hexIdsToBase64(json);
    return fromJson(ExportTraceServiceRequestSchema, json as JsonValue, { ignoreUnknownFields: true, recursionLimit: MAX_MESSAGE_DEPTH });
  } catch {
    return null;
  }
}

const ID_FIELDS = ["traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"] as const;

/** Rewrites hex ids of spans and their links to base64 in place; anything unexpected is left for the decoder to refuse. */
function hexIdsToBase64(json: unknown): void {
  for (const resourceSpans of arrayAt(json, "resourceSpans", "resource_spans")) {
    for (const scopeSpans of arrayAt(resourceSpans, "scopeSpans", "scope_spans")) {
      for (const span of arrayAt(scopeSpans, "spans")) {
        rewriteIds(span);
        for (const link of arrayAt(span, "links")) rewriteIds(link);
      }
    }
  }
}

function arrayAt(value: unknown, ...keys: string[]): unknown[] {
  if (typeof value !== "object" || value === null) return [];
  for (const key of keys) {
    const found = (value as Record<string, unknown>)[key];
    if (Array.isArray(found)) return found;
  }
  return [];
}

function rewriteIds(value: unknown): void {
  if (typeof value !== "object" || value === null) return;
  const record = value as Record<string, unknown>;
  for (const field of ID_FIELDS) {
    const id = record[field];
    if (typeof id === "string" && /^(?:[0-9a-fA-F]{2})*$/.test(id)) record[field] = base64OfHex(id);
  }
}

function base64OfHex(hex: string): string {
  let binary = "";
  for (let i = 0; i < hex.length; i += 2) binary += String.fromCharCode(Number.parseInt(hex.slice(i, i + 2), 16));
  return btoa(binary);
}

/** The 200 answer: ExportTraceServiceResponse, with partial_success only when spans were rejected (OTLP). */
export function exportResponseBody(rejectedSpans: number, errorMessage: string, encoding: OtlpEncoding): Uint8Array | string {
  const response = create(ExportTraceServiceResponseSchema, rejectedSpans > 0 ? { partialSuccess: { rejectedSpans: BigInt(rejectedSpans), errorMessage } } : {});
  return encoding === "protobuf" ? toBinary(ExportTraceServiceResponseSchema, response) : toJsonString(ExportTraceServiceResponseSchema, response);
}

/** google.rpc.Code of each HTTP status the route answers with (the OTLP/HTTP error body is a Status). */
const RPC_CODE_OF_STATUS: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 413: 3, 415: 3, 429: 8, 500: 13, 503: 14 };

/** The body of every 4xx and 5xx answer: a google.rpc.Status in the request's encoding (OTLP/HTTP). */
export function statusBody(httpStatus: number, message: string, encoding: OtlpEncoding): Uint8Array | string {
  const status = create(StatusSchema, { code: RPC_CODE_OF_STATUS[httpStatus] ?? 2, message });
  return encoding === "protobuf" ? toBinary(StatusSchema, status) : toJsonString(StatusSchema, status);
}
