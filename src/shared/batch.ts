// The ingest envelope (SPEC §1.1): `{"batch": [payload, …]}`, validated item by item so one bad
// item never costs the good ones.
import { z } from "zod";
import { MAX_BATCH_ITEMS } from "./limits.ts";
import { parsePayload, type Payload } from "./payload.ts";

/** The envelope's shape; items are validated one by one by parseBatch, not here. */
export const ingestEnvelopeSchema = z.object({
  batch: z.array(z.unknown()).max(MAX_BATCH_ITEMS),
});

export type DroppedItem = { index: number; reason: string };

export type ParsedBatch =
  | { ok: true; payloads: Payload[]; dropped: DroppedItem[] }
  | { ok: false; status: 400 | 413; error: string };

/**
 * The one validation entry point of ingest; `nowMs` is the worker's clock for the SPEC §1.2 window.
 * Dropped items come back with their index and a reason that never echoes the value.
 */
export function parseBatch(body: unknown, nowMs: number): ParsedBatch {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return { ok: false, status: 400, error: "body must be a JSON object" };
  }
  const batch = (body as { batch?: unknown }).batch;
  if (!Array.isArray(batch)) {
    return { ok: false, status: 400, error: "batch must be an array" };
  }
  if (batch.length > MAX_BATCH_ITEMS) {
    return { ok: false, status: 413, error: `batch has more than ${MAX_BATCH_ITEMS} items` };
  }
  const payloads: Payload[] = [];
  const dropped: DroppedItem[] = [];
  for (let index = 0; index < batch.length; index++) {
    const result = parsePayload(batch[index], nowMs);
    if (result.ok) payloads.push(result.payload);
    else dropped.push({ index, reason: result.reason });
  }
  return { ok: true, payloads, dropped };
}
