// Ingest durability for operators (GET /v1/admin/health, docs/ingest.md). One Durable Object, because
// it must count while D1 is down; told only on slow paths, so a healthy request costs no row (bench:cost).
import { DurableObject } from "cloudflare:workers";

/** The one instance's name. */
export const INGEST_HEALTH_NAME = "ingest-health";

/** Counters of one UTC hour. */
export type HourCounters = {
  /** D1 write attempts that failed and were tried again. */
  write_retries: number;
  /** Batches whose writes all failed and that went to the ingest queue instead. */
  batches_queued: number;
  /** Batches the queue's consumer stored (duplicates of a stored batch included). */
  batches_written_from_queue: number;
  /** Batches neither written nor queued after their 202: lost (each also logged). */
  batches_lost: number;
  /** Requests ingest answered 503, whatever the cause (the two below add up to it). */
  requests_refused: number;
  /** 503: D1 was failing and the ingest queue refused the batch too. */
  refused_queue_unavailable: number;
  /** 503: the key could not be checked (D1 down, and the key's object knew nothing of it). */
  refused_key_unverifiable: number;
  /** Requests ingest answered 429, whatever the limit (the two below add up to it). */
  requests_throttled: number;
  /** 429: the key was over its payload budget (SPEC §1.1). */
  throttled_payload_budget: number;
  /** 429: an unknown or revoked ingest key whose key id failed too often (SPEC §3). */
  throttled_failed_key: number;
  /** Batches moved to the dead-letter queue after the consumer's retries. */
  batches_dead_lettered: number;
};

export const ZERO_HOUR: Readonly<HourCounters> = Object.freeze({
  write_retries: 0, batches_queued: 0, batches_written_from_queue: 0, batches_lost: 0,
  requests_refused: 0, refused_queue_unavailable: 0, refused_key_unverifiable: 0,
  requests_throttled: 0, throttled_payload_budget: 0, throttled_failed_key: 0, batches_dead_lettered: 0,
});

/** Why ingest answered 503 or 429, each counted in its own field of the hour (and in the status's total). */
export const INGEST_REFUSAL_CAUSES = {
  queue_unavailable: { status: 503, field: "refused_queue_unavailable", total: "requests_refused" },
  key_unverifiable: { status: 503, field: "refused_key_unverifiable", total: "requests_refused" },
  payload_budget: { status: 429, field: "throttled_payload_budget", total: "requests_throttled" },
  failed_key: { status: 429, field: "throttled_failed_key", total: "requests_throttled" },
} as const satisfies Record<string, { status: 503 | 429; field: keyof HourCounters; total: keyof HourCounters }>;
export type IngestRefusalCause = keyof typeof INGEST_REFUSAL_CAUSES;

export type PendingBatches = { project_id: string; batches: number; oldest_received_at_ms: number };
/** A dead-lettered part, kept whole (`message_json`: the queue message as JSON) so it can be sent again. */
export type DeadLetter = { batch_id: string; project_id: string; received_at_ms: number; dead_at_ms: number; message_json: string };

export type IngestEvent =
  | { kind: "write_retries"; project_id: string; count: number }
  | { kind: "queued"; project_id: string; batches: number; received_at_ms: number }
  | { kind: "written_from_queue"; project_id: string; batches: number }
  | { kind: "lost"; project_id: string; batches: number }
  | { kind: "refused"; project_id: string | null; cause: IngestRefusalCause }
  | { kind: "dead_lettered"; batch_id: string; project_id: string; received_at_ms: number; message_json: string };

export type IngestHealthSnapshot = {
  last_24h: HourCounters;
  pending: PendingBatches[];
  dead_letters: { batches: number; oldest_received_at_ms: number | null; projects: string[] };
};

const HOUR_MS = 3_600_000;
/** Hour counters are kept two days (the answer covers 24 h). */
const KEEP_HOURS_MS = 48 * HOUR_MS;
const hourKey = (hourStartMs: number) => `hour:${String(hourStartMs).padStart(15, "0")}`;
const pendingKey = (projectId: string) => `pending:${projectId}`;
const deadKey = (batchId: string) => `dead:${batchId}`;

export class IngestHealth extends DurableObject {
  /** Records one event. Called only on the slow paths (see the top of the file). */
  async note(event: IngestEvent, nowMs: number = Date.now()): Promise<void> {
    const hourStartMs = nowMs - (nowMs % HOUR_MS);
    const hour = { ...ZERO_HOUR, ...(await this.ctx.storage.get<HourCounters>(hourKey(hourStartMs))) };
    switch (event.kind) {
      case "write_retries":
        hour.write_retries += event.count;
        break;
      case "queued":
        hour.batches_queued += event.batches;
        await this.#pending(event.project_id, event.batches, event.received_at_ms);
        break;
      case "written_from_queue":
        hour.batches_written_from_queue += event.batches;
        await this.#pending(event.project_id, -event.batches, null);
        break;
      case "lost":
        hour.batches_lost += event.batches;
        break;
      case "refused": {
        const { field, total } = INGEST_REFUSAL_CAUSES[event.cause];
        hour[field] += 1;
        hour[total] += 1;
        break;
      }
      case "dead_lettered": {
        hour.batches_dead_lettered += 1;
        await this.#pending(event.project_id, -1, null);
        const letter: DeadLetter = { batch_id: event.batch_id, project_id: event.project_id, received_at_ms: event.received_at_ms, dead_at_ms: nowMs, message_json: event.message_json };
        await this.ctx.storage.put(deadKey(event.batch_id), letter);
        break;
      }
    }
    await this.ctx.storage.put(hourKey(hourStartMs), hour);
    const old = await this.ctx.storage.list({ prefix: "hour:", end: hourKey(nowMs - KEEP_HOURS_MS) });
    if (old.size > 0) await this.ctx.storage.delete([...old.keys()]);
  }

  async #pending(projectId: string, change: number, receivedAtMs: number | null): Promise<void> {
    const key = pendingKey(projectId);
    const now = await this.ctx.storage.get<PendingBatches>(key);
    const batches = Math.max(0, (now?.batches ?? 0) + change);
    if (batches === 0) {
      await this.ctx.storage.delete(key);
      return;
    }
    // The oldest receive time is kept while batches are waiting (an upper bound on their age once
    // the oldest has been written); it starts again when the project's backlog is empty.
    const oldest = Math.min(now?.oldest_received_at_ms ?? Infinity, receivedAtMs ?? Infinity);
    await this.ctx.storage.put(key, { project_id: projectId, batches, oldest_received_at_ms: Number.isFinite(oldest) ? oldest : Date.now() });
  }

  /** The counters of the last 24 hours, the queue's backlog per project and the dead letters. */
  async snapshot(nowMs: number = Date.now()): Promise<IngestHealthSnapshot> {
    const since = nowMs - (nowMs % HOUR_MS) - 23 * HOUR_MS;
    const hours = await this.ctx.storage.list<HourCounters>({ prefix: "hour:", start: hourKey(since) });
    const last_24h = { ...ZERO_HOUR };
    for (const hour of hours.values()) for (const name of Object.keys(last_24h) as (keyof HourCounters)[]) last_24h[name] += hour[name] ?? 0;
    const pending = [...(await this.ctx.storage.list<PendingBatches>({ prefix: "pending:" })).values()];
    const dead = [...(await this.ctx.storage.list<DeadLetter>({ prefix: "dead:" })).values()];
    return {
      last_24h,
      pending,
      dead_letters: {
        batches: dead.length,
        oldest_received_at_ms: dead.length === 0 ? null : Math.min(...dead.map((d) => d.received_at_ms)),
        projects: [...new Set(dead.map((d) => d.project_id))].sort(),
      },
    };
  }

  /** Up to `limit` dead letters, oldest first (for a replay). */
  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const dead = [...(await this.ctx.storage.list<DeadLetter>({ prefix: "dead:" })).values()];
    return dead.sort((a, b) => a.received_at_ms - b.received_at_ms).slice(0, limit);
  }

  /** Forgets dead letters that were sent to the ingest queue again; they count as waiting again. */
  async requeued(letters: { batch_id: string; project_id: string; received_at_ms: number }[]): Promise<void> {
    for (const letter of letters) {
      await this.ctx.storage.delete(deadKey(letter.batch_id));
      await this.#pending(letter.project_id, 1, letter.received_at_ms);
    }
  }

  /** A deleted project's backlog and dead letters are forgotten with it. */
  async forgetProject(projectId: string): Promise<void> {
    await this.ctx.storage.delete(pendingKey(projectId));
    const dead = await this.ctx.storage.list<DeadLetter>({ prefix: "dead:" });
    const keys = [...dead].filter(([, d]) => d.project_id === projectId).map(([k]) => k);
    if (keys.length > 0) await this.ctx.storage.delete(keys);
  }
}
