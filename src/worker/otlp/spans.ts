// One export request → its calls and what was not counted (SPEC §10): spanToCall over every span,
// with the one fact a span cannot tell alone (is its parent another span of this request?), and the
// partial_success message, which names reasons and counts and never a value sent.
import type { CallPayload } from "../../shared/index.ts";
import type { ExportTraceServiceRequest } from "./gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.ts";
import { isToolCallSpan, spanToCall } from "./span-to-call.ts";

export type MappedSpans = { spans: number; calls: CallPayload[]; rejected: number; message: string };

/** Reasons listed in the message, most frequent first; the rest are summed as "other". */
const MAX_REASONS_IN_MESSAGE = 5;

function idKey(traceId: Uint8Array, spanId: Uint8Array): string {
  let out = "";
  for (const byte of traceId) out += byte.toString(16).padStart(2, "0");
  out += ":";
  for (const byte of spanId) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** How many spans a request holds, counted before any is mapped (SPEC §1.1's batch limit applies to them). */
export function spanCount(request: ExportTraceServiceRequest): number {
  let spans = 0;
  for (const resourceSpans of request.resourceSpans) for (const scopeSpans of resourceSpans.scopeSpans) spans += scopeSpans.spans.length;
  return spans;
}

export function spansToCalls(request: ExportTraceServiceRequest, ctx: { ingestKey: string; nowMs: number }): MappedSpans {
  // Spans of this request that are not tool calls, by (trace, span) id: an INTERNAL tools/call span
  // under one of them has no SERVER tools/call span above it (span-to-call.ts).
  const otherSpans = new Set<string>();
  let spans = 0;
  for (const resourceSpans of request.resourceSpans) {
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        spans++;
        if (!isToolCallSpan(span)) otherSpans.add(idKey(span.traceId, span.spanId));
      }
    }
  }
  const calls: CallPayload[] = [];
  const reasons = new Map<string, number>();
  const sessionIds = new Map<string, string>();
  for (const resourceSpans of request.resourceSpans) {
    for (const scopeSpans of resourceSpans.scopeSpans) {
      for (const span of scopeSpans.spans) {
        const parentIsOtherSpan = span.parentSpanId.length > 0 && otherSpans.has(idKey(span.traceId, span.parentSpanId));
        const result = spanToCall(span, resourceSpans.resource, { ...ctx, parentIsOtherSpan, sessionIds });
        if (result.ok) calls.push(result.call);
        else reasons.set(result.reason, (reasons.get(result.reason) ?? 0) + 1);
      }
    }
  }
  const rejected = spans - calls.length;
  return { spans, calls, rejected, message: rejectionMessage(reasons, rejected) };
}

function rejectionMessage(reasons: Map<string, number>, rejected: number): string {
  if (rejected === 0) return "";
  const sorted = [...reasons].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const parts = sorted.slice(0, MAX_REASONS_IN_MESSAGE).map(([reason, count]) => `${count} × ${reason}`);
  const other = sorted.slice(MAX_REASONS_IN_MESSAGE).reduce((sum, [, count]) => sum + count, 0);
  if (other > 0) parts.push(`${other} × other reasons`);
  return `${rejected} span${rejected === 1 ? "" : "s"} not counted as MCP tool calls: ${parts.join("; ")}`;
}
