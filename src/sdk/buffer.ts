// The per-destination payload buffer and its flush policy (SPEC §4): flush at 30 payloads or 5 s
// after the first waiting one, at most 1,000 waiting (oldest dropped), at most 500 per request, one
// send in flight, a failed send drops its batch, and nothing here keeps the process alive.
import {
  EXIT_FLUSH_TIMEOUT_MS,
  FLUSH_AT_PAYLOADS,
  FLUSH_INTERVAL_MS,
  MAX_BUFFERED_PAYLOADS,
  MAX_PAYLOADS_PER_REQUEST,
} from "./constants.ts";

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
 * Sends one batch; must settle (never reject) once the send has ended, successfully or not.
 * `final` marks the exit flush, which may keep the process alive for its short deadline.
 */
export type SendBatch = (batch: readonly object[], final: boolean) => Promise<void>;

export class PayloadBuffer {
  private waiting: object[] = [];
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

  get size(): number {
    return this.waiting.length;
  }

  get sending(): boolean {
    return this.inFlight !== null;
  }

  /** Queues one payload. Synchronous and cheap: nothing here waits on the network (rule 2). */
  add(payload: object): void {
    this.waiting.push(payload);
    if (this.waiting.length > this.tuning.maxBuffered) {
      // Bounded memory beats completeness: drop the oldest (SPEC §4).
      this.waiting.splice(0, this.waiting.length - this.tuning.maxBuffered);
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

  /** Starts one send of up to `maxPerRequest` payloads unless one is already in flight. */
  flush(): void {
    if (this.waiting.length === 0) return;
    if (this.inFlight !== null || this.finalFlushing) return;
    this.clearTimer();
    this.due = false;
    const batch = this.waiting.splice(0, this.tuning.maxPerRequest);
    this.inFlight = this.send(batch, false)
      .catch(() => undefined)
      .then(() => {
        this.inFlight = null;
        this.afterSend();
      });
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
      while (this.waiting.length > 0 && Date.now() < deadline) {
        const batch = this.waiting.splice(0, this.tuning.maxPerRequest);
        await this.send(batch, true).catch(() => undefined);
      }
    };
    try {
      await Promise.race([drain(), timeUp]);
    } finally {
      // Best effort: what could not go within the deadline is dropped, so the process can end
      // (otherwise every later beforeExit would start another flush of the same payloads).
      if (this.waiting.length > 0) this.waiting.length = 0;
      clearTimeout(deadlineTimer);
      this.finalFlushing = false;
    }
  }

  private afterSend(): void {
    if (this.waiting.length === 0) return;
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
