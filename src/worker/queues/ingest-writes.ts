// The ingest queue (SPEC §1.1: a 202 is a promise): producer and consumer. A batch D1 could not take
// after its 202 goes here in parts (a message holds at most 128 KB), written later, deduplicated by
// batch id (ingest_receipts), then dead-lettered after max_retries.
import { z } from "zod";
import type { Env } from "../env.ts";
import { resolveProjectDatabase, type Database } from "../databases.ts";
import { INGEST_HEALTH_NAME, type IngestEvent } from "../health/ingest-health.ts";
import {
  DEFAULT_WRITE_RETRY_BASE_MS,
  persistBatch,
  splitTuples,
  storeBatchOnce,
  type BatchTuples,
  type StoredBatch,
} from "../db/raw-writes.ts";
import { errorName, log, withLogScope } from "../log.ts";

/** The queue's name in wrangler.toml (the worker's `queue()` tells its two queues apart by name). */
export const INGEST_QUEUE_NAME = "mcpulse-ingest";

const Tuple = z.array(z.unknown());
/** One part of one request's batch, as the queue carries it. */
export const IngestWriteMessage = z.object({
  v: z.literal(1),
  /** The request's batch id (its Idempotency-Key, or drawn by the worker). */
  request_id: z.string().min(1).max(80),
  /** `request_id#n`: the part's own id, what the receipt deduplicates on. */
  batch_id: z.string().min(1).max(90),
  project_id: z.string().min(1).max(64),
  received_at_ms: z.number().int().nonnegative(),
  calls: z.array(Tuple),
  startups: z.array(Tuple),
  agreements: z.array(Tuple),
});
export type IngestWriteMessage = z.infer<typeof IngestWriteMessage>;

/** A message's rows stay under this many JSON characters (Queues: 128 KB per message, 256 KB per sendBatch). */
export const MESSAGE_MAX_ROW_CHARS = 100_000;
/** Messages per sendBatch call: two full parts stay under its 256 KB. */
const MESSAGES_PER_SEND = 2;

/** How long the worker sends new batches straight to the queue after a write failed every attempt. */
export const D1_FAILING_HOLD_MS = 10_000;
/** Per database (SPEC §7): one database failing never sends another's batches to the queue. */
const d1FailingUntilMs = new Map<string, number>();

/** True while the last D1 write of this isolate to `database` failed every attempt (within D1_FAILING_HOLD_MS). */
export function d1WritesFailing(nowMs: number, database: string): boolean {
  return nowMs < (d1FailingUntilMs.get(database) ?? 0);
}

/** For tests: forget that D1 was failing. */
export function resetD1FailingForTests(): void {
  d1FailingUntilMs.clear();
}

export function messagesOf(batch: StoredBatch): IngestWriteMessage[] {
  return splitTuples(batch.tuples, MESSAGE_MAX_ROW_CHARS).map((tuples, part) => ({
    v: 1,
    request_id: batch.requestId,
    batch_id: `${batch.requestId}#${part}`,
    project_id: batch.projectId,
    received_at_ms: batch.receivedAtMs,
    ...tuples,
  }));
}

/** Sends a batch's parts to the queue; rejects if any could not be sent. Resolves to the parts sent. */
export async function enqueueBatch(env: Env, batch: StoredBatch): Promise<number> {
  const messages = messagesOf(batch);
  for (let i = 0; i < messages.length; i += MESSAGES_PER_SEND) {
    await env.INGEST_QUEUE.sendBatch(messages.slice(i, i + MESSAGES_PER_SEND).map((body) => ({ body })));
  }
  return messages.length;
}

/** Tells the health object about a slow-path event; a failure to tell is logged, never thrown. */
export async function noteIngestEvent(env: Env, event: IngestEvent): Promise<void> {
  try {
    await env.INGEST_HEALTH.get(env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME)).note(event);
  } catch (err) {
    log.error("ingest_health_unavailable", { kind: event.kind, project_id: event.project_id, error: errorName(err) });
  }
}

/**
 * After the 202: writes the batch to its project's database (resolved by the request) with retries,
 * and what still cannot be written goes to the queue. Only when the queue refuses too is the batch
 * lost — logged and counted, never silent.
 */
export async function writeOrEnqueue(env: Env, database: Database, batch: StoredBatch): Promise<void> {
  const retryBaseMs = Number(env.INGEST_RETRY_BASE_MS ?? DEFAULT_WRITE_RETRY_BASE_MS);
  const result = await persistBatch(database.db, batch, { retryBaseMs });
  const retries = result.stored ? result.failedAttempts : result.failedAttempts - 1;
  if (retries > 0) await noteIngestEvent(env, { kind: "write_retries", project_id: batch.projectId, count: retries });
  if (result.stored) return;
  d1FailingUntilMs.set(database.name, Date.now() + D1_FAILING_HOLD_MS);
  await enqueueOrCount(env, batch);
}

/** Sends the batch to the queue, counting it there; if the queue refuses, the batch is lost (logged, counted). */
async function enqueueOrCount(env: Env, batch: StoredBatch): Promise<void> {
  try {
    const parts = await enqueueBatch(env, batch);
    await noteIngestEvent(env, { kind: "queued", project_id: batch.projectId, batches: parts, received_at_ms: batch.receivedAtMs });
  } catch (err) {
    log.error("ingest_batch_lost", { project_id: batch.projectId, calls: batch.tuples.calls.length, startups: batch.tuples.startups.length, agreements: batch.tuples.agreements.length, error: errorName(err) });
    await noteIngestEvent(env, { kind: "lost", project_id: batch.projectId, batches: 1 });
  }
}

/**
 * Before the answer, while D1 is failing: the batch goes straight to the queue. Resolves false when
 * the queue refuses it — the request is then answered 503 and nothing of it is kept.
 */
export async function enqueueBeforeAnswer(env: Env, batch: StoredBatch): Promise<boolean> {
  try {
    const parts = await enqueueBatch(env, batch);
    await noteIngestEvent(env, { kind: "queued", project_id: batch.projectId, batches: parts, received_at_ms: batch.receivedAtMs });
    return true;
  } catch (err) {
    log.error("ingest_queue_unavailable", { project_id: batch.projectId, error: errorName(err) });
    return false;
  }
}

/** The consumer's wait before message attempt n+1: 10 s, 20 s, 40 s … at most 5 minutes. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(300, 10 * 2 ** Math.max(0, attempts - 1));
}

/** Receipts are kept this long: longer than a message can live in the queues (4 days by default). */
export const RECEIPT_RETENTION_MS = 8 * 86_400_000;

export function storedBatchOf(message: IngestWriteMessage): StoredBatch {
  const tuples: BatchTuples = { calls: message.calls as unknown[][], startups: message.startups as unknown[][], agreements: message.agreements as unknown[][] };
  return { projectId: message.project_id, receivedAtMs: message.received_at_ms, requestId: message.request_id, batchId: message.batch_id, resendGuard: true, tuples };
}

/**
 * The consumer. The project's database is looked up per invocation, so a part written after a move
 * lands where the project is now; a redelivery is a duplicate by batch id. Unparsable: logged, counted
 * lost, acknowledged.
 */
export async function consumeIngestWrites(batch: MessageBatch<unknown>, env: Env, nowMs: number = Date.now()): Promise<void> {
  const written = new Map<string, number>();
  const databaseOfProject = new Map<string, Database>();
  const writtenTo = new Map<string, D1Database>();
  for (const message of batch.messages) {
    await withLogScope({ invocation_id: message.id }, async () => {
      const parsed = IngestWriteMessage.safeParse(message.body);
      if (!parsed.success) {
        log.error("ingest_queue_message_invalid", { id: message.id });
        await noteIngestEvent(env, { kind: "lost", project_id: "unknown", batches: 1 });
        message.ack();
        return;
      }
      try {
        let database = databaseOfProject.get(parsed.data.project_id);
        if (!database) {
          database = await resolveProjectDatabase(env, parsed.data.project_id);
          databaseOfProject.set(parsed.data.project_id, database);
        }
        const outcome = await storeBatchOnce(database.db, storedBatchOf(parsed.data), nowMs);
        writtenTo.set(database.name, database.db);
        message.ack();
        written.set(parsed.data.project_id, (written.get(parsed.data.project_id) ?? 0) + 1);
        if (outcome === "duplicate") log.error("ingest_queue_duplicate", { project_id: parsed.data.project_id, batch_id: parsed.data.batch_id });
      } catch (err) {
        log.error("ingest_queue_write_retry", { project_id: parsed.data.project_id, attempt: message.attempts, error: errorName(err) });
        message.retry({ delaySeconds: retryDelaySeconds(message.attempts) });
      }
    });
  }
  for (const [projectId, batches] of written) await noteIngestEvent(env, { kind: "written_from_queue", project_id: projectId, batches });
  for (const db of writtenTo.values()) {
    try {
      await db.prepare("DELETE FROM ingest_receipts WHERE written_at_ms < ?1").bind(nowMs - RECEIPT_RETENTION_MS).run();
    } catch {
      // The next consumer run deletes them.
    }
  }
}
