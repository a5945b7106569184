// The per-destination payload buffer and its flush policy (SPEC §4): flush at 30 payloads or 5 s
// after the first waiting one, at most 1,000 held (oldest dropped), at most 500 per request, one
// send in flight, a send that failed retryably is tried again with the same Idempotency-Key after a
// backoff while its payloads are under 10 minutes old (./retry.ts), and nothing here keeps the
// process alive.
import {
  EXIT_FLUSH_TIMEOUT_MS,
  FLUSH_AT_PAYLOADS,
  FLUSH_INTERVAL_MS,
  MAX_BUFFERED_PAYLOADS,
  MAX_PAYLOADS_PER_REQUEST,
} from "./constants.ts";
import { RETRY_MAX_AGE_MS, newIdempotencyKey, retryDelayMs, type SendOutcome } from "./retry.ts";

export interface BufferTuning {
  flushAtPayloads: number;
  flushIntervalMs: number;
  maxBuffered: number;
  maxPerRequest: number;
}

export const DEFAULT_BUFFER_TUNING: Readonly<BufferTuning> = Object.freeze({
  flushAtPayloads: FLUSH_AT_PAYLOADS,
  flushIntervalMs: FLUSH_INTERVAL_MS,
  maxBuffered: MAX_BUFFERED_PAYLOADS,
  maxPerRequest: MAX_PAYLOADS_PER_REQUEST,
});

/**
 * Sends one batch; must settle once the send has ended, with what to do next: "sent", "drop", or
 * retry (nothing, or a rejection, counts as sent: the batch is not kept). `final` marks the exit
 * flush, which may keep the process alive for its short deadline and is never retried.
 * `idempotencyKey` is the batch's, the same on every attempt.
 */
export type SendBatch = (batch: readonly object[], final: boolean, idempotencyKey: string) => Promise<SendOutcome | void>;

/** A batch sent at least once: its payloads, its key, its retries so far and its oldest payload's time. */
interface Attempted {
  batch: object[];
  idempotencyKey: string;
  retries: number;
  oldestAtMs: number;
}

export class PayloadBuffer {
  private waiting: object[] = [];
  /** When each waiting payload was added (for the 10-minute retry age, SPEC §4). */
  private waitingSince: number[] = [];
  /** The batch that failed and waits for its retry; nothing else is sent before it. */
  private retrying: Attempted | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  /** Batches given up: a 4xx, or still failing when 10 minutes old (for debug output and tests). */
  droppedBatches = 0;
  /** Source of jitter (tests make it fixed). */
  random: () => number = Math.random;
  private inFlight: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The 5-second timer fired while a send was in flight: send as soon as it ends. */
  private due = false;
  /** The exit flush owns the buffer while it runs; ordinary sends stand aside. */
  private finalFlushing = false;
  /** Payloads dropped because the buffer was full (for debug output and tests). */
  droppedOldest = 0;
  /** A flush is scheduled for the next macrotask (see add). */
  private flushScheduled = false;

  private readonly send: SendBatch;
  private readonly tuning: BufferTuning;

  constructor(send: SendBatch, tuning: BufferTuning = DEFAULT_BUFFER_TUNING) {
    this.send = send;
    this.tuning = tuning;
  }

  /** Payloads held: waiting, and the batch waiting for its retry (one 1,000 bound for both, SPEC §4). */
  get size(): number {
    return this.waiting.length + (this.retrying?.batch.length ?? 0);
  }

  get sending(): boolean {
    return this.inFlight !== null;
  }

  /** Queues one payload. Synchronous and cheap: nothing here waits on the network (rule 2). */
  add(payload: object): void {
    this.waiting.push(payload);
    this.waitingSince.push(Date.now());
    if (this.size > this.tuning.maxBuffered) {
      // Bounded memory beats completeness: drop the oldest (SPEC §4) — from the batch waiting for
      // its retry first. It keeps its Idempotency-Key: what is left is part of what the ingest may
      // have accepted under it, so a resend still counts once.
      let excess = this.size - this.tuning.maxBuffered;
      if (this.retrying) {
        const fromRetry = Math.min(excess, this.retrying.batch.length);
        this.retrying.batch.splice(0, fromRetry);
        excess -= fromRetry;
        if (this.retrying.batch.length === 0) this.abandonRetry();
      }
      this.waiting.splice(0, excess);
      this.waitingSince.splice(0, excess);
      this.droppedOldest++;
    }
    if (this.waiting.length >= this.tuning.flushAtPayloads) {
      this.scheduleFlush();
    } else if (this.timer === null) {
      this.armTimer();
    }
  }

  /**
   * The 30th payload's flush — splitting, JSON of the batch, the request — runs on the next
   * macrotask, not inside add(): add() runs in the tool call's `finally`, before the MCP SDK has
   * sent the answer, and that answer must not wait on batching work (SPEC §4 rule 2).
   */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const run = () => {
      this.flushScheduled = false;
      this.flush();
    };
    const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;
    if (typeof immediate === "function") {
      immediate(run);
    } else {
      const timer = setTimeout(run, 0);
      (timer as { unref?: () => unknown }).unref?.();
    }
  }

  /** Starts one send of up to `maxPerRequest` payloads unless one is in flight or a retry is due first. */
  flush(): void {
    if (this.waiting.length === 0) return;
    if (this.inFlight !== null || this.finalFlushing) return;
    if (this.retrying !== null) {
      // The failed batch goes first; this flush happens after it.
      this.due = true;
      return;
    }
    this.clearTimer();
    this.due = false;
    const oldestAtMs = this.waitingSince[0] ?? Date.now();
    const batch = this.waiting.splice(0, this.tuning.maxPerRequest);
    this.waitingSince.splice(0, batch.length);
    this.attempt({ batch, idempotencyKey: newIdempotencyKey(), retries: 0, oldestAtMs });
  }

  private attempt(entry: Attempted): void {
    this.inFlight = this.send(entry.batch, false, entry.idempotencyKey)
      .catch((): SendOutcome => "sent")
      .then((outcome) => {
        this.inFlight = null;
        if (outcome && typeof outcome === "object" && entry.batch.length > 0) this.scheduleRetry(entry, outcome.retryAfterMs);
        else if (outcome === "drop") this.droppedBatches++;
        this.afterSend();
      });
  }

  /** Keeps the batch for its next attempt, or drops it when that would come after its 10 minutes. */
  private scheduleRetry(entry: Attempted, retryAfterMs: number | null): void {
    entry.retries++;
    const delayMs = retryDelayMs(entry.retries, retryAfterMs, this.random());
    if (Date.now() + delayMs - entry.oldestAtMs >= RETRY_MAX_AGE_MS) {
      this.droppedBatches++;
      return;
    }
    // Back in the buffer, the batch counts in the 1,000 bound again: its oldest payloads go first.
    const excess = this.size + entry.batch.length - this.tuning.maxBuffered;
    if (excess > 0) {
      entry.batch.splice(0, excess);
      this.droppedOldest++;
      if (entry.batch.length === 0) return;
    }
    this.retrying = entry;
    const timer = setTimeout(() => {
      this.retryTimer = null;
      const due = this.retrying;
      this.retrying = null;
      if (due && due.batch.length > 0 && this.inFlight === null && !this.finalFlushing) this.attempt(due);
      else if (due && due.batch.length > 0) this.retrying = due;
    }, delayMs);
    // A pending retry must never keep the process alive (SPEC §4); the exit flush covers it.
    (timer as { unref?: () => unknown }).unref?.();
    this.retryTimer = timer;
  }

  private abandonRetry(): void {
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.retrying = null;
  }

  /**
   * The exit flush: everything waiting, split into requests of at most `maxPerRequest`, one after
   * the other, ending within `deadlineMs` whatever the endpoint does (SPEC §4: 1 second).
   */
  async flushFinal(deadlineMs: number = EXIT_FLUSH_TIMEOUT_MS): Promise<void> {
    if (this.finalFlushing) return;
    this.finalFlushing = true;
    this.clearTimer();
    const deadline = Date.now() + deadlineMs;
    let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
    const timeUp = new Promise<void>((resolve) => {
      deadlineTimer = setTimeout(resolve, deadlineMs);
    });
    const drain = async () => {
      if (this.inFlight) await this.inFlight;
      // The batch waiting for its retry goes first, once, with its own key.
      const retrying = this.retrying;
      this.abandonRetry();
      if (retrying && retrying.batch.length > 0 && Date.now() < deadline) {
        await this.send(retrying.batch, true, retrying.idempotencyKey).catch(() => undefined);
      }
      while (this.waiting.length > 0 && Date.now() < deadline) {
        const batch = this.waiting.splice(0, this.tuning.maxPerRequest);
        this.waitingSince.splice(0, batch.length);
        await this.send(batch, true, newIdempotencyKey()).catch(() => undefined);
      }
    };
    try {
      await Promise.race([drain(), timeUp]);
    } finally {
      // Best effort: what could not go within the deadline is dropped, so the process can end
      // (otherwise every later beforeExit would start another flush of the same payloads).
      if (this.waiting.length > 0) this.waiting.length = 0;
      this.waitingSince.length = 0;
      this.abandonRetry();
      clearTimeout(deadlineTimer);
      this.finalFlushing = false;
    }
  }

  private afterSend(): void {
    if (this.waiting.length === 0 || this.retrying !== null) return;
    // One in flight at a time; when it ends with 30 or more waiting the next goes at once.
    if (this.waiting.length >= this.tuning.flushAtPayloads || this.due) {
      this.flush();
    } else if (this.timer === null) {
      this.armTimer();
    }
  }

  private armTimer(): void {
    if (this.finalFlushing) return;
    const timer = setTimeout(() => {
      this.timer = null;
      if (this.inFlight !== null) this.due = true;
      else this.flush();
    }, this.tuning.flushIntervalMs);
    // A pending flush must never keep the process alive (SPEC §4); the exit flush covers it.
    (timer as { unref?: () => unknown }).unref?.();
    this.timer = timer;
  }

  private clearTimer(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }
}
