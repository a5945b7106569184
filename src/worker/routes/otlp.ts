// POST /v1/traces (SPEC §10): OTLP/HTTP spans decoded, mapped to calls and accepted by /v1/ingest's
// path (acceptPayloads) — no second write path. Answers per OTLP/HTTP, in the request's encoding.
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { MAX_BATCH_ITEMS, MAX_BODY_BYTES, type CallPayload } from "../../shared/index.ts";
import { credentialOf } from "../auth.ts";
import type { AppEnv } from "../env.ts";
import { apiError, errorResponse } from "../errors.ts";
import { errorName, log } from "../log.ts";
import { decodeExportRequest, exportResponseBody, otlpEncodingOf, statusBody, type OtlpEncoding } from "../otlp/decode.ts";
import { spanCount, spansToCalls } from "../otlp/spans.ts";
import { acceptPayloads, contentEncoding, idempotencyKeyOf, ingestKeyMiddleware, readBodyWithinLimit, tooLarge } from "./ingest.ts";

export const otlpRoutes = new Hono<AppEnv>();

/** The header an exporter can carry the ingest key in, beside `Authorization: Bearer` (SPEC §10). */
export const OTLP_KEY_HEADER = "x-mcpulse-key";

/** The encoding answers are written in: the request's, or JSON when it named neither. */
function answerEncoding(c: Context<AppEnv>): OtlpEncoding {
  return otlpEncodingOf(c.req.header("content-type")) ?? "json";
}

const CONTENT_TYPES: Record<OtlpEncoding, string> = { protobuf: "application/x-protobuf", json: "application/json" };

// Every error of this route, the app's own error model (status, message, headers such as Retry-After
// and WWW-Authenticate) written as OTLP's Status body: exporters read it, and retry on 429/503. The
// Status has no field of ours, so its message ends with the request's id (what an exporter logs).
otlpRoutes.onError((err, c) => {
  const shaped = errorResponse(err, c.var.requestId);
  const message = err instanceof HTTPException && err.message !== "" ? err.message : shaped.status >= 500 ? "internal error" : "bad request";
  if (!(err instanceof HTTPException)) log.error("unhandled_error", { route: "otlp", name: errorName(err) });
  const encoding = answerEncoding(c);
  const headers = new Headers(shaped.headers);
  headers.set("content-type", CONTENT_TYPES[encoding]);
  return new Response(statusBody(shaped.status, `${message} (request id ${c.var.requestId})`, encoding), { status: shaped.status, headers });
});

otlpRoutes.post(
  "/",
  ingestKeyMiddleware({ keyHeader: OTLP_KEY_HEADER }),
  async (c, next) => {
    if (otlpEncodingOf(c.req.header("content-type")) === null) {
      throw apiError("UNSUPPORTED_MEDIA_TYPE", "content type must be application/x-protobuf or application/json");
    }
    if (contentEncoding(c.req.header("content-encoding")) === null) throw apiError("UNSUPPORTED_MEDIA_TYPE", "content encoding must be gzip or identity");
    await next();
  },
  bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge }),
  async (c) => {
    const encoding = otlpEncodingOf(c.req.header("content-type")) as OtlpEncoding;
    const bytes = await readBodyWithinLimit(c);
    const idempotencyKey = idempotencyKeyOf(c);
    const request = decodeExportRequest(bytes, encoding);
    if (request === null) throw apiError("BAD_REQUEST", encoding === "protobuf" ? "body is not an OTLP ExportTraceServiceRequest (protobuf)" : "body is not an OTLP ExportTraceServiceRequest (JSON)");
    // SPEC §1.1's batch limit, counted in spans (each costs the worker the same to examine), before any is mapped.
    if (spanCount(request) > MAX_BATCH_ITEMS) throw apiError("PAYLOAD_TOO_LARGE", `more than ${MAX_BATCH_ITEMS} spans in request`);
    const receivedAtMs = Date.now();
    const ingestKey = credentialOf(c.req.raw, OTLP_KEY_HEADER).token as string;
    const mapped = spansToCalls(request, { ingestKey, nowMs: receivedAtMs });
    const calls: CallPayload[] = mapped.calls;
    await acceptPayloads(c, calls, mapped.spans, receivedAtMs, idempotencyKey);
    const body = exportResponseBody(mapped.rejected, mapped.message, encoding);
    return c.body(typeof body === "string" ? body : (body as Uint8Array<ArrayBuffer>), 200, { "content-type": CONTENT_TYPES[encoding] });
  },
);
