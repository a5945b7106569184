// POST /v1/ingest (SPEC §1.1). Checks run in the SPEC's order and the first that fails answers:
// key (401) → content type (415) → body size (413) → JSON and envelope (400) → item count (413)
// → budget (429). Then 202 with an empty body, and the writes happen after it, in waitUntil.
import { Hono, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { MAX_BATCH_ITEMS, MAX_BODY_BYTES, parseBatch, type Payload } from "../../shared/index.ts";
import type { AppEnv } from "../env.ts";
import { writeCallDataPoints, callDataPoints } from "../analytics/calls-dataset.ts";
import { requireKey } from "../auth.ts";
import type { BudgetDecision } from "../budget/key-budget.ts";
import { persistBatch } from "../db/raw-writes.ts";
import type { Env } from "../env.ts";

export const ingestRoutes = new Hono<AppEnv>();

/** `application/json`, any case, with or without parameters (`; charset=utf-8`). */
const requireJsonContentType: MiddlewareHandler<AppEnv> = async (c, next) => {
  const mediaType = c.req.header("content-type")?.split(";", 1)[0]?.trim().toLowerCase();
  if (mediaType !== "application/json") throw new HTTPException(415, { message: "content type must be application/json" });
  await next();
};

const tooLarge = (): never => {
  throw new HTTPException(413, { message: `body over ${MAX_BODY_BYTES} bytes` });
};

// Errors never quote the input (SPEC §1.1), so parseBatch's own messages are not passed through.
const ENVELOPE_ERRORS = {
  400: "body must be a JSON object with a batch array",
  413: `more than ${MAX_BATCH_ITEMS} items in batch`,
} as const;

ingestRoutes.post(
  "/",
  requireKey("ingest"),
  requireJsonContentType,
  // Counts the bytes actually read when there is no Content-Length (chunked or streamed bodies).
  bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge }),
  async (c) => {
    const bytes = await c.req.arrayBuffer();
    // A Content-Length that understates the body is caught here, on the bytes themselves.
    if (bytes.byteLength > MAX_BODY_BYTES) tooLarge();
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
    } catch {
      throw new HTTPException(400, { message: "body is not JSON" });
    }
    const receivedAtMs = Date.now();
    const parsed = parseBatch(body, receivedAtMs);
    if (!parsed.ok) throw new HTTPException(parsed.status, { message: ENVELOPE_ERRORS[parsed.status] });

    // The budget counts every item sent, valid or not: each costs the worker the same to examine.
    const items = parsed.payloads.length + parsed.dropped.length;
    if (items > 0) {
      const decision = await takeBudget(c.env, c.var.keyId, items, c.var.payloadBudgetPerMinute);
      if (!decision.admitted) {
        return c.json({ error: "payload budget exceeded" }, 429, { "Retry-After": String(decision.retryAfterSeconds) });
      }
    }
    if (parsed.payloads.length > 0) {
      c.executionCtx.waitUntil(recordBatch(c.env, c.var.projectId, parsed.payloads, receivedAtMs));
    }
    return c.body(null, 202);
  },
);

/**
 * Asks the key's budget object. If it cannot answer (a platform fault), the batch is admitted and
 * the fault logged: the budget protects the service, and losing a producer's data over it would be
 * the worse failure.
 */
async function takeBudget(env: Env, keyId: string, items: number, budgetPerMinute: number): Promise<BudgetDecision> {
  try {
    const stub = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(keyId));
    return await stub.take(items, budgetPerMinute);
  } catch (err) {
    console.error(JSON.stringify({ event: "budget_unavailable", key_id: keyId, items, error: err instanceof Error ? err.name : typeof err }));
    return { admitted: true };
  }
}

/**
 * After the 202: the Analytics Engine points (not awaited — writeDataPoint is fire-and-forget), then
 * the D1 rows. An Analytics Engine failure is logged and never stops the D1 write.
 */
export async function recordBatch(env: Env, projectId: string, payloads: readonly Payload[], receivedAtMs: number): Promise<void> {
  // Yield once so that nothing is written before the response has been handed back.
  await Promise.resolve();
  const calls = payloads.filter((p) => p.type === "call");
  if (calls.length > 0) {
    try {
      writeCallDataPoints(env.CALLS_AE, callDataPoints(projectId, calls));
    } catch (err) {
      console.error(JSON.stringify({ event: "analytics_write_failed", project_id: projectId, calls: calls.length, error: err instanceof Error ? err.name : typeof err }));
    }
  }
  await persistBatch(env.DB, projectId, payloads, receivedAtMs);
}
