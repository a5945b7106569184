// POST /v1/ingest (SPEC §1.1): checks in the SPEC's order, then 202 and the writes in waitUntil (a 202
// is a promise: D1 retried, then the ingest queue); 503 with Retry-After when it cannot be durable.
import { ApiError, apiError, rateLimited } from "../errors.ts";
import { waitInWords } from "../throttle/credentials.ts";
import { Hono, type Context, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { MAX_BATCH_ITEMS, MAX_BODY_BYTES, parseBatch, type Payload } from "../../shared/index.ts";
import type { AppEnv } from "../env.ts";
import { writeCallDataPoints, callDataPoints, type RequestFacts } from "../analytics/calls-dataset.ts";
import { authenticateIngestKey, checkBearerKey, setAuthenticated, type AuthenticatedKey } from "../auth.ts";
import type { IngestRefusalCause } from "../health/ingest-health.ts";
import { directoryDb, type Database } from "../databases.ts";
import type { BudgetDecision } from "../budget/key-budget.ts";
import { batchTuples, type StoredBatch } from "../db/raw-writes.ts";
import type { Env } from "../env.ts";
import { d1WritesFailing, enqueueBeforeAnswer, noteIngestEvent, writeOrEnqueue } from "../queues/ingest-writes.ts";
import { errorName, log } from "../log.ts";

export const ingestRoutes = new Hono<AppEnv>();

/** Seconds a producer is asked to wait after a 503 (the SDK retries after it, SPEC §4). */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 10;

/** SPEC §1.1: 8–64 characters of [A-Za-z0-9_-]. */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

/** Counts a 503 or a 429 in the health object (GET /v1/admin/health), after the answer. */
function noteRefusal(c: Context<AppEnv>, cause: IngestRefusalCause, projectId: string | null): void {
  c.executionCtx.waitUntil(noteIngestEvent(c.env, { kind: "refused", cause, project_id: projectId }));
}

const unavailable = (): never => {
  throw apiError("SERVICE_UNAVAILABLE", "ingest temporarily unavailable; retry later", {
    "Retry-After": String(UNAVAILABLE_RETRY_AFTER_SECONDS),
  });
};

/**
 * The ingest key, checked by its Durable Object without D1 (auth.ts) before any network rule: 401,
 * 429 for a key id over its failures (SPEC §3), 503 when nobody can tell. `keyHeader`: OTLP exporters
 * are configured with headers (SPEC §10).
 */
export function ingestKeyMiddleware(options: { keyHeader?: string } = {}): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    let key: AuthenticatedKey;
    try {
      key = await checkBearerKey(
        c.env,
        c.req.raw,
        "ingest key",
        async (token) => {
          const check = await authenticateIngestKey(c.env, directoryDb(c.env), token);
          if (check.ok) return check.key;
          return check.status === 503 ? unavailable() : null;
        },
        { countNetwork: false, ...(options.keyHeader ? { keyHeader: options.keyHeader } : {}) },
      );
    } catch (err) {
      if (err instanceof ApiError && err.code === "SERVICE_UNAVAILABLE") noteRefusal(c, "key_unverifiable", null);
      if (err instanceof ApiError && err.code === "TOO_MANY_REQUESTS") noteRefusal(c, "failed_key", null);
      throw err;
    }
    setAuthenticated(c, key);
    await next();
  };
}

const requireIngestKey = ingestKeyMiddleware();

/** `application/json`, any case, with or without parameters (`; charset=utf-8`); gzip or identity encoding. */
const requireJsonContentType: MiddlewareHandler<AppEnv> = async (c, next) => {
  const mediaType = c.req.header("content-type")?.split(";", 1)[0]?.trim().toLowerCase();
  if (mediaType !== "application/json") throw apiError("UNSUPPORTED_MEDIA_TYPE", "content type must be application/json");
  if (contentEncoding(c.req.header("content-encoding")) === null) {
    throw apiError("UNSUPPORTED_MEDIA_TYPE", "content encoding must be gzip or identity");
  }
  await next();
};

/** "gzip", "identity" (also for no header), or null for anything else. */
export function contentEncoding(header: string | undefined): "gzip" | "identity" | null {
  const value = (header ?? "").trim().toLowerCase();
  if (value === "" || value === "identity") return "identity";
  return value === "gzip" ? "gzip" : null;
}

export const tooLarge = (): never => {
  throw apiError("PAYLOAD_TOO_LARGE", `body over ${MAX_BODY_BYTES} bytes`);
};

/**
 * Inflates a gzip body, stopping as soon as it passes MAX_BODY_BYTES (413: a gzip bomb costs the
 * worker at most the limit, never its inflated size); a body that is not valid gzip is a 400.
 */
export async function gunzipWithinLimit(bytes: ArrayBuffer, maxBytes: number = MAX_BODY_BYTES): Promise<Uint8Array | "too large" | "invalid"> {
  const reader = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return "too large";
      }
      chunks.push(value);
    }
  } catch {
    return "invalid";
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

// Errors never quote the input (SPEC §1.1), so parseBatch's own messages are not passed through.
const ENVELOPE_ERRORS = {
  400: "body must be a JSON object with a batch array",
  413: `more than ${MAX_BATCH_ITEMS} items in batch`,
} as const;

/**
 * The body's bytes within MAX_BODY_BYTES, read and (for `Content-Encoding: gzip`) inflated within
 * it: 413 over the limit either way, 400 for a body that is not valid gzip. The body limit
 * middleware before it has already refused a Content-Length over the limit.
 */
export async function readBodyWithinLimit(c: Context<AppEnv>): Promise<Uint8Array> {
  const raw = await c.req.arrayBuffer();
  // A Content-Length that understates the body is caught here, on the bytes themselves.
  if (raw.byteLength > MAX_BODY_BYTES) tooLarge();
  if (contentEncoding(c.req.header("content-encoding")) !== "gzip") return new Uint8Array(raw);
  const inflated = await gunzipWithinLimit(raw);
  if (inflated === "too large") tooLarge();
  if (inflated === "invalid") throw apiError("BAD_REQUEST", "body is not valid gzip");
  return inflated as Uint8Array;
}

/** The `Idempotency-Key` header when it is well-formed (SPEC §1.1), null without one, else 400. */
export function idempotencyKeyOf(c: Context<AppEnv>): string | null {
  const idempotencyKey = c.req.header("idempotency-key") ?? null;
  if (idempotencyKey !== null && !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
    throw apiError("BAD_REQUEST", "Idempotency-Key must be 8 to 64 characters of A-Z, a-z, 0-9, _ and -");
  }
  return idempotencyKey;
}

/**
 * Everything after validation, for /v1/ingest and /v1/traces alike (SPEC §10: one write path). The
 * budget counts every item examined, valid or not (each costs the same to examine).
 */
export async function acceptPayloads(
  c: Context<AppEnv>,
  payloads: readonly Payload[],
  examined: number,
  receivedAtMs: number,
  idempotencyKey: string | null,
): Promise<"accepted" | "duplicate"> {
  const stub = budgetStub(c.env, c.var.keyId);
  if (examined > 0) {
    const decision = await takeBudget(stub, c.var.keyId, examined, c.var.payloadBudgetPerMinute, idempotencyKey);
    if (!decision.admitted) {
      noteRefusal(c, "payload_budget", c.var.projectId);
      throw rateLimited("payload_budget", `payload budget exceeded (${c.var.payloadBudgetPerMinute} payloads a minute for this key); try again in ${waitInWords(decision.retryAfterSeconds)}`, decision.retryAfterSeconds);
    }
    if (decision.duplicate) return "duplicate";
  }
  if (payloads.length === 0) return "accepted";
  const requestId = idempotencyKey ?? crypto.randomUUID();
  const batch: StoredBatch = {
    projectId: c.var.projectId,
    receivedAtMs,
    requestId,
    batchId: requestId,
    resendGuard: idempotencyKey !== null,
    tuples: batchTuples(payloads),
  };
  if (d1WritesFailing(receivedAtMs, c.var.database)) {
    // D1 failed every attempt moments ago: the queue takes the batch before the answer, or
    // nothing is promised (503, and the producer resends with the same key).
    if (!(await enqueueBeforeAnswer(c.env, batch))) {
      if (idempotencyKey !== null) await releaseIdempotencyKey(stub, idempotencyKey);
      noteRefusal(c, "queue_unavailable", c.var.projectId);
      unavailable();
    }
    c.executionCtx.waitUntil(recordAnalytics(c.env, c.var.projectId, payloads, requestFacts(c.req.raw)));
    return "accepted";
  }
  c.executionCtx.waitUntil(recordBatch(c.env, { name: c.var.database, db: c.var.db }, batch, payloads, requestFacts(c.req.raw)));
  return "accepted";
}

ingestRoutes.post(
  "/",
  requireIngestKey,
  requireJsonContentType,
  // Counts the bytes actually read when there is no Content-Length (chunked or streamed bodies).
  bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge }),
  async (c) => {
    const bytes = await readBodyWithinLimit(c);
    const idempotencyKey = idempotencyKeyOf(c);
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
    } catch {
      throw apiError("BAD_REQUEST", "body is not JSON");
    }
    const receivedAtMs = Date.now();
    const parsed = parseBatch(body, receivedAtMs);
    if (!parsed.ok) throw apiError(parsed.status === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST", ENVELOPE_ERRORS[parsed.status]);
    await acceptPayloads(c, parsed.payloads, parsed.payloads.length + parsed.dropped.length, receivedAtMs, idempotencyKey);
    return c.body(null, 202);
  },
);

type BudgetStub = ReturnType<Env["KEY_BUDGET"]["get"]> | null;

function budgetStub(env: Env, keyId: string): BudgetStub {
  try {
    return env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(keyId));
  } catch (err) {
    log.error("budget_unavailable", { key_id: keyId, error: errorName(err) });
    return null;
  }
}

/**
 * Asks the key's budget object. If it cannot answer, the batch is admitted and the fault logged:
 * losing a producer's data is the worse failure, and the D1 guard (db/raw-writes.ts) catches a resend.
 */
async function takeBudget(stub: BudgetStub, keyId: string, items: number, budgetPerMinute: number, idempotencyKey: string | null): Promise<BudgetDecision> {
  try {
    if (!stub) return { admitted: true };
    return await stub.take(items, budgetPerMinute, idempotencyKey);
  } catch (err) {
    log.error("budget_unavailable", { key_id: keyId, items, error: errorName(err) });
    return { admitted: true };
  }
}

async function releaseIdempotencyKey(stub: BudgetStub, idempotencyKey: string): Promise<void> {
  try {
    await stub?.release(idempotencyKey);
  } catch {
    // A resend of the refused batch then reads as a duplicate only while the object keeps the key;
    // the 503 told the producer nothing was kept, and the object forgets it on restart.
  }
}

/** Where the request came in (Cloudflare sets `request.cf`; absent in some local runs): descriptive only. */
function requestFacts(request: Request): RequestFacts {
  const cf = (request as { cf?: { country?: unknown; colo?: unknown } }).cf;
  const text = (value: unknown) => (typeof value === "string" && value.length > 0 && value.length <= 8 ? value : null);
  return { country: text(cf?.country), colo: text(cf?.colo) };
}

/** Analytics Engine points (not awaited — writeDataPoint is fire-and-forget); a failure is logged and never stops D1. */
async function recordAnalytics(env: Env, projectId: string, payloads: readonly Payload[], request: RequestFacts): Promise<void> {
  // Yield once so that nothing is written before the response has been handed back.
  await Promise.resolve();
  const calls = payloads.filter((p) => p.type === "call");
  if (calls.length === 0) return;
  try {
    const points = callDataPoints(projectId, calls, request);
    writeCallDataPoints(env.CALLS_AE, points);
    if (env.ANALYTICS_LOCAL_URL) await postToLocalEngine(env.ANALYTICS_LOCAL_URL, points);
  } catch (err) {
    log.error("analytics_write_failed", { project_id: projectId, calls: calls.length, error: errorName(err) });
  }
}

/** The same points to the local stand-in for AE (scripts/analytics-local.ts); only ever set locally. */
async function postToLocalEngine(baseUrl: string, points: readonly AnalyticsEngineDataPoint[]): Promise<void> {
  const res = await fetch(new URL("/write", baseUrl), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ points }) });
  if (!res.ok) throw new Error(`local analytics engine answered ${res.status}`);
  await res.body?.cancel();
}

/** After the 202: the Analytics Engine points, then the D1 rows in the project's database (retried, else queued). */
export async function recordBatch(
  env: Env,
  database: Database,
  batch: StoredBatch,
  payloads: readonly Payload[],
  request: RequestFacts = { country: null, colo: null },
): Promise<void> {
  await recordAnalytics(env, batch.projectId, payloads, request);
  await writeOrEnqueue(env, database, batch);
}
