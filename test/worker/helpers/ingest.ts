// Test helpers for POST /v1/ingest: payload builders and a request runner that waits for the
// worker's waitUntil writes (createExecutionContext + waitOnExecutionContext).
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../../src/worker/index.ts";
import type { Env } from "../../../src/worker/env.ts";

type Json = Record<string, unknown>;

/** An ISO timestamp `agoMs` before now (inside the accepted 7-day window by default). */
export function isoAgo(agoMs = 60_000): string {
  return new Date(Date.now() - agoMs).toISOString();
}

export function callPayload(overrides: Json = {}): Json {
  return {
    v: 1,
    type: "call",
    session_id: "s_0123456789ab",
    client_name: "claude-ai",
    tool_name: "search_orders",
    started_at: isoAgo(),
    duration_ms: 42,
    outcome: "ok",
    response_bytes: 1200,
    is_empty: false,
    args_hash: "52a4fe5fc814",
    ...overrides,
  };
}

export function startupPayload(overrides: Json = {}): Json {
  return {
    v: 1,
    type: "startup",
    session_id: "s_0123456789ab",
    client_name: "claude-ai",
    tools: [
      { name: "search_orders", schema_bytes: 480, schema_hash: "aaaaaaaaaaaa", description_hash: "bbbbbbbbbbbb", description_norm: "cccccccccccc", policy: null },
      { name: "delete_order", schema_bytes: 200, policy: { requires_authorization: true, requires_verified_identity: false } },
    ],
    sdk: "mcpulse-edge-ts/0.1.0",
    mcp_sdk_version: "1.32.0",
    transport: "stdio",
    protocol_version: "2025-06-18",
    agree_declared: [{ field: "order_total", tools: ["search_orders", "delete_order"] }],
    ...overrides,
  };
}

export function agreementPayload(overrides: Json = {}): Json {
  return {
    v: 1,
    type: "agreement",
    session_id: "s_0123456789ab",
    field: "order_total",
    tool_a: "search_orders",
    tool_b: "get_order",
    agreed: true,
    checked_at: isoAgo(),
    window_ms: 300_000,
    ...overrides,
  };
}

export type IngestOptions = {
  key?: string | null;
  contentType?: string | null;
  headers?: Record<string, string>;
  /** Bindings to use instead of the test runtime's (e.g. a failing DB or a fake Analytics Engine). */
  env?: Env;
  /** Cloudflare's request facts (`request.cf`), as the edge would set them. */
  cf?: Record<string, unknown>;
};

/**
 * Sends a request to the real worker's fetch handler and waits for everything it scheduled with
 * waitUntil, so D1 holds the batch's rows when this resolves. A string or object body is sent as
 * JSON text; a ReadableStream is sent without Content-Length.
 */
export async function postIngest(body: BodyInit | Json | null, options: IngestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  const contentType = options.contentType === undefined ? "application/json" : options.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  const isJsonObject =
    body !== null && typeof body === "object" && !(body instanceof ReadableStream) && !(body instanceof ArrayBuffer) &&
    !ArrayBuffer.isView(body) && !(body instanceof Blob) && !(body instanceof FormData) && !(body instanceof URLSearchParams);
  const init: RequestInit & { duplex?: "half" } = {
    method: "POST",
    headers,
    body: isJsonObject ? JSON.stringify(body) : (body as BodyInit | null),
  };
  if (body instanceof ReadableStream) init.duplex = "half";
  if (options.cf) (init as { cf?: unknown }).cf = options.cf;
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request("http://worker/v1/ingest", init) as never, options.env ?? env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** A body stream of `text` in chunks of `chunkBytes`, so the request carries no Content-Length. */
export function streamOf(text: string, chunkBytes = 64 * 1024): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunkBytes));
      offset += chunkBytes;
    },
  });
}

/** Every stored row of a project, across the tables ingest writes. */
export async function storedRows(projectId: string) {
  const all = async (table: string, order: string) =>
    (await env.DB.prepare(`SELECT * FROM ${table} WHERE project_id = ?1 ORDER BY ${order}`).bind(projectId).all<Json>()).results;
  return {
    // A request's calls are one call_batches row until the rollup numbers them into call_state
    // (one row per session, client and hour).
    calls: [
      ...(
        await env.DB.prepare(
          `SELECT s.project_id, s.session_id, s.client_name, j.value ->> 1 AS tool_name, j.value ->> 2 AS started_at_ms,
             j.value ->> 3 AS duration_ms, j.value ->> 4 AS outcome, j.value ->> 5 AS response_bytes, j.value ->> 6 AS is_empty,
             j.value ->> 7 AS args_hash, j.value ->> 0 AS call_seq
           FROM call_state s, json_each(s.calls_json) AS j WHERE s.project_id = ?1 ORDER BY call_seq`,
        ).bind(projectId).all<Json>()
      ).results,
      ...(
        await env.DB.prepare(
          `SELECT b.project_id, j.value ->> 0 AS session_id, j.value ->> 1 AS client_name, j.value ->> 2 AS tool_name,
             j.value ->> 3 AS started_at_ms, j.value ->> 4 AS duration_ms, j.value ->> 5 AS outcome, j.value ->> 6 AS response_bytes,
             j.value ->> 7 AS is_empty, j.value ->> 8 AS args_hash, j.value ->> 9 AS duration_bucket, b.received_at_ms
           FROM call_batches b, json_each(b.calls_json) AS j WHERE b.project_id = ?1 ORDER BY b.batch_seq, j.key`,
        ).bind(projectId).all<Json>()
      ).results,
    ],
    startups: await all("raw_startups", "startup_seq"),
    agreements: await all("raw_agreements", "agreement_seq"),
    sessions: await all("sessions", "session_id"),
  };
}
