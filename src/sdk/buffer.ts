// The per-destination payload buffer and its flush policy (SPEC §4). Every payload given up goes to
// `onDrop` with its reason (./drops.ts), and nothing here keeps the process alive.
import {
  EXIT_FLUSH_TIMEOUT_MS,
  FLUSH_AT_PAYLOADS,
  FLUSH_INTERVAL_MS,
  MAX_BUFFERED_PAYLOADS,
  MAX_PAYLOADS_PER_REQUEST,
} from "./constants.ts";
import { DROP_REASONS } from "./drops.ts";
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
 * Sends one batch and settles once the send has ended: "sent", "drop", or retry; a rejection drops
 * it. `final` (the exit flush) may hold the process for its deadline and is never retried.
 */
export type SendBatch = (batch: readonly object[], final: boolean, idempotencyKey: string) => Promise<SendOutcome | void>;

/**
 * Told of every payload given up: the reason in words (./drops.ts DROP_REASONS), how many, and
 * whether to report it at once (a Retry-After that surely costs them).
 */
export type OnDrop = (reason: string, payloads: number, reportNow: boolean) => void;

/** A batch sent at least once: its payloads, when each was added, its key and its retries so far. */
interface Attempted {
  batch: object[];
  addedAtMs: number[];
  idempotencyKey: string;
  retries: number;
  /** Still unanswered when the exit flush ran out of time, and reported then: nothing more is done with it. */
  givenUpAtExit?: boolean;
}

export class PayloadBuffer {
  private waiting: object[] = [];
  /** When each waiting payload was added (for the 10-minute retry age, SPEC §4). */
  private waitingSince: number[] = [];
  /** The batch that failed and waits for its retry; nothing else is sent before it. */
  private retrying: Attempted | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  /** Batches given up whole: a 4xx, or still failing when 10 minutes old (for tests; onDrop reports every payload). */
  droppedBatches = 0;
  /** Payloads given up for any reason (what onDrop was told, added up). */
  droppedPayloads = 0;
  /**
   * No send before this time: the ingest's Retry-After (SPEC §4 "Retry-After honoured" — for the
   * failed batch and for everything waiting behind it, so the ingest is never asked again inside it).
   */
  private holdUntilMs = 0;
  /** The answer that set the hold or the last retry, in words (for the reasons of later drops). */
  private lastCause: string | undefined;
  /** Source of jitter (tests make it fixed). */
  random: () => number = Math.random;
  private inFlight: Promise<void> | null = null;
  /** The batch of the ordinary send in flight. */
  private inFlightEntry: Attempted | null = null;
  /** The exit flush's send under way: counted at its deadline if still unanswered, else when it ends. */
  private finalSend: { payloads: number; settled: boolean; counted: boolean } | null = null;
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
  private readonly onDrop: OnDrop;

  constructor(send: SendBatch, tuning: BufferTuning = DEFAULT_BUFFER_TUNING, onDrop: OnDrop = () => {}) {
    this.send = send;
    this.tuning = tuning;
    this.onDrop = onDrop;
  }

  private drop(reason: string, payloads: number, reportNow = false): void {
    if (payloads <= 0) return;
    this.droppedPayloads += payloads;
    try {
      this.onDrop(reason, payloads, reportNow);
    } catch {
      // Rule 1 (SPEC §4): reporting must not break the buffer.
    }
  }

  /** Whether a Retry-After still holds sends back. */
  get holding(): boolean {
    return Date.now() < this.holdUntilMs;
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
    const now = Date.now();
    this.waiting.push(payload);
    this.waitingSince.push(now);
    if (this.size > this.tuning.maxBuffered) {
      // Bounded memory beats completeness: drop the oldest (SPEC §4) — from the batch waiting for
      // its retry first. It keeps its Idempotency-Key: what is left is part of what the ingest may
      // have accepted under it, so a resend still counts once.
      let excess = this.size - this.tuning.maxBuffered;
      this.drop(DROP_REASONS.bound(this.tuning.maxBuffered), excess);
      if (this.retrying) {
        const fromRetry = Math.min(excess, this.retrying.batch.length);
        this.retrying.batch.splice(0, fromRetry);
        this.retrying.addedAtMs.splice(0, fromRetry);
        excess -= fromRetry;
        if (this.retrying.batch.length === 0) this.abandonRetry();
      }
      this.waiting.splice(0, excess);
      this.waitingSince.splice(0, excess);
      this.droppedOldest++;
    }
    // Inside a Retry-After the interval timer comes back to it (flush re-arms it for the hold's end).
    if (this.waiting.length >= this.tuning.flushAtPayloads && now >= this.holdUntilMs) {
      // With a send in flight nothing goes before it ends, and then the next goes at once (afterSend).
      if (this.inFlight === null) this.scheduleFlush();
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
    const heldMs = this.holdUntilMs - Date.now();
    if (heldMs > 0) {
      // Inside the ingest's Retry-After nothing is sent; the flush happens when it ends.
      this.due = true;
      if (this.timer === null) this.armTimer(heldMs);
      return;
    }
    this.clearTimer();
    this.due = false;
    const batch = this.waiting.splice(0, this.tuning.maxPerRequest);
    const addedAtMs = this.waitingSince.splice(0, batch.length);
    this.attempt({ batch, addedAtMs, idempotencyKey: newIdempotencyKey(), retries: 0 });
  }

  private attempt(entry: Attempted): void {
    this.inFlightEntry = entry;
    this.inFlight = this.send(entry.batch, false, entry.idempotencyKey)
      .catch((error: unknown) => {
        // The send threw before any request could go: the batch cannot be kept (it would throw again).
        if (entry.givenUpAtExit) return;
        this.droppedBatches++;
        this.drop(DROP_REASONS.unsendable(messageOf(error)), entry.batch.length);
      })
      .then((outcome) => {
        this.inFlight = null;
        this.inFlightEntry = null;
        if (entry.givenUpAtExit) {
          // Already reported at the exit flush's deadline; a retry now would outlive the process.
        } else if (outcome && typeof outcome === "object" && "retry" in outcome) {
          if (entry.batch.length > 0) this.scheduleRetry(entry, outcome.retryAfterMs, outcome.cause);
        } else if (outcome === "drop" || (outcome && typeof outcome === "object")) {
          this.droppedBatches++;
          this.drop(DROP_REASONS.rejected(typeof outcome === "object" ? outcome.cause : undefined), entry.batch.length);
        }
        this.afterSend();
      });
  }

  /**
   * Keeps the batch for its next attempt, without the payloads whose 10 minutes end before it
   * (SPEC §4): a Retry-After past the age limit costs the oldest, reported at once; the younger ones
   * are tried again when it ends, with the same Idempotency-Key.
   */
  private scheduleRetry(entry: Attempted, retryAfterMs: number | null, cause: string | undefined): void {
    entry.retries++;
    const now = Date.now();
    const delayMs = retryDelayMs(entry.retries, retryAfterMs, this.random());
    this.lastCause = cause;
    if (retryAfterMs !== null && retryAfterMs > 0) this.holdUntilMs = Math.max(this.holdUntilMs, now + retryAfterMs);
    const retryAtMs = now + delayMs;
    let expired = 0;
    while (expired < entry.addedAtMs.length && retryAtMs - entry.addedAtMs[expired]! >= RETRY_MAX_AGE_MS) expired++;
    if (expired > 0) {
      // What made them miss their 10 minutes: the ingest's Retry-After (said at once, it is news
      // an operator can act on), or simply failing for that long.
      const oldestAtMs = entry.addedAtMs[0]!;
      const byRetryAfter = retryAfterMs !== null && now + retryAfterMs - oldestAtMs >= RETRY_MAX_AGE_MS;
      if (byRetryAfter) this.drop(DROP_REASONS.retryAfter(cause, retryAfterMs), expired, true);
      else this.drop(DROP_REASONS.age(cause), expired);
      entry.batch.splice(0, expired);
      entry.addedAtMs.splice(0, expired);
      if (entry.batch.length === 0) {
        this.droppedBatches++;
        return;
      }
    }
    // Back in the buffer, the batch counts in the 1,000 bound again: its oldest payloads go first.
    const excess = this.size + entry.batch.length - this.tuning.maxBuffered;
    if (excess > 0) {
      this.drop(DROP_REASONS.bound(this.tuning.maxBuffered), Math.min(excess, entry.batch.length));
      entry.batch.splice(0, excess);
      entry.addedAtMs.splice(0, excess);
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
   * the other, ending within `deadlineMs` whatever the endpoint does (SPEC §4: 1 second). Never
   * inside the ingest's Retry-After. Whatever does not make it is reported to onDrop.
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
    const sendFinal = async (batch: object[], idempotencyKey: string) => {
      const mine = { payloads: batch.length, settled: false, counted: false };
      this.finalSend = mine;
      let outcome: SendOutcome | void;
      try {
        outcome = await this.send(batch, true, idempotencyKey);
      } catch (error) {
        outcome = { drop: true, cause: DROP_REASONS.unsendable(messageOf(error)) };
      }
      mine.settled = true;
      if (mine.counted || !outcome || outcome === "sent") return;
      this.drop(DROP_REASONS.exitFailed(outcome === "drop" ? undefined : outcome.cause), mine.payloads);
    };
    const drain = async () => {
      if (this.inFlight) await this.inFlight;
      // The batch waiting for its retry goes first, once, with its own key.
      const retrying = this.retrying;
      this.abandonRetry();
      if (Date.now() < this.holdUntilMs) {
        // The ingest asked for a pause that outlasts the process: asking again now would only be
        // refused, so what is held is given up (and said so).
        const held = (retrying?.batch.length ?? 0) + this.waiting.length;
        this.waiting.length = 0;
        this.waitingSince.length = 0;
        this.drop(DROP_REASONS.exitHeld(this.lastCause), held);
        return;
      }
      if (retrying && retrying.batch.length > 0 && Date.now() < deadline) {
        await sendFinal(retrying.batch, retrying.idempotencyKey);
      } else if (retrying) {
        this.drop(DROP_REASONS.exitDeadline(deadlineMs), retrying.batch.length);
      }
      while (this.waiting.length > 0 && Date.now() < deadline) {
        const batch = this.waiting.splice(0, this.tuning.maxPerRequest);
        this.waitingSince.splice(0, batch.length);
        await sendFinal(batch, newIdempotencyKey());
      }
    };
    try {
      await Promise.race([drain(), timeUp]);
    } finally {
      // Best effort: what could not go within the deadline is dropped, so the process can end
      // (otherwise every later beforeExit would start another flush of the same payloads).
      const unanswered = this.finalSend;
      if (unanswered && !unanswered.settled && !unanswered.counted) {
        unanswered.counted = true;
        this.drop(DROP_REASONS.exitDeadline(deadlineMs), unanswered.payloads);
      }
      // An ordinary send still unanswered: the process is about to end without its answer.
      const ordinary = this.inFlightEntry;
      if (ordinary && !ordinary.givenUpAtExit) {
        ordinary.givenUpAtExit = true;
        this.drop(DROP_REASONS.exitDeadline(deadlineMs), ordinary.batch.length);
      }
      const left = this.waiting.length + (this.retrying?.batch.length ?? 0);
      this.drop(DROP_REASONS.exitDeadline(deadlineMs), left);
      this.waiting.length = 0;
      this.waitingSince.length = 0;
      this.abandonRetry();
      clearTimeout(deadlineTimer);
      this.finalFlushing = false;
    }
  }

  /**
   * The process is ending now, without (or in the middle of) the exit flush — `process.exit()`
   * skips `beforeExit`: everything still held, and any send not yet answered, is given up and
   * reported. Synchronous: an `exit` listener can run nothing else.
   */
  giveUpAtExit(): void {
    const reason = DROP_REASONS.exitAbrupt;
    const ordinary = this.inFlightEntry;
    if (ordinary && !ordinary.givenUpAtExit) {
      ordinary.givenUpAtExit = true;
      this.drop(reason, ordinary.batch.length);
    }
    const final = this.finalSend;
    if (final && !final.settled && !final.counted) {
      final.counted = true;
      this.drop(reason, final.payloads);
    }
    this.drop(reason, this.waiting.length + (this.retrying?.batch.length ?? 0));
    this.waiting.length = 0;
    this.waitingSince.length = 0;
    this.abandonRetry();
    this.clearTimer();
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

  private armTimer(delayMs: number = this.tuning.flushIntervalMs): void {
    if (this.finalFlushing) return;
    const timer = setTimeout(() => {
      this.timer = null;
      if (this.inFlight !== null) this.due = true;
      else this.flush();
    }, delayMs);
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

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
