// The ingest queue's dead-letter queue: kept in the health object, never dropped, until
// POST /v1/admin/health/requeue sends them back (docs/ingest.md).
import type { Env } from "../env.ts";
import { INGEST_HEALTH_NAME } from "../health/ingest-health.ts";
import { IngestWriteMessage } from "./ingest-writes.ts";
import { errorName, log, withLogScope } from "../log.ts";

/** The dead-letter queue's name in wrangler.toml. */
export const INGEST_DEAD_LETTER_QUEUE_NAME = "mcpulse-ingest-dead";

/** Keeps each dead letter in the health object; if that fails the message is retried. Each message's lines carry its id. */
export async function consumeDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const health = env.INGEST_HEALTH.get(env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME));
  for (const message of batch.messages) {
    const parsed = IngestWriteMessage.safeParse(message.body);
    const meta = parsed.success
      ? { batch_id: parsed.data.batch_id, project_id: parsed.data.project_id, received_at_ms: parsed.data.received_at_ms }
      : { batch_id: `invalid:${message.id}`, project_id: "unknown", received_at_ms: message.timestamp.getTime() };
    await withLogScope({ invocation_id: message.id }, async () => {
      try {
        await health.note({ kind: "dead_lettered", ...meta, message_json: JSON.stringify(message.body) ?? "null" });
        log.error("ingest_dead_lettered", { batch_id: meta.batch_id, project_id: meta.project_id });
        message.ack();
      } catch (err) {
        log.error("ingest_dead_letter_retry", { batch_id: meta.batch_id, error: errorName(err) });
        message.retry({ delaySeconds: 60 });
      }
    });
  }
}

/** Sends up to `limit` kept dead letters back to the ingest queue. Resolves to how many went. */
export async function requeueDeadLetters(env: Env, limit: number): Promise<number> {
  const health = env.INGEST_HEALTH.get(env.INGEST_HEALTH.idFromName(INGEST_HEALTH_NAME));
  const letters = await health.deadLetters(limit);
  const sent: { batch_id: string; project_id: string; received_at_ms: number }[] = [];
  for (const letter of letters) {
    let body: unknown;
    try {
      body = JSON.parse(letter.message_json);
    } catch {
      continue;
    }
    const parsed = IngestWriteMessage.safeParse(body);
    if (!parsed.success) continue;
    // The part keeps its batch id, so a part that did get written meanwhile is a duplicate.
    await env.INGEST_QUEUE.send(parsed.data);
    sent.push(letter);
  }
  await health.requeued(sent);
  return sent.length;
}
