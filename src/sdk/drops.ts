// Nothing is dropped silently (SPEC §3, §4): dropped payloads counted by reason and reported on
// stderr whatever `debug` says, at most one line a minute per destination.
import { toStderr, type DebugLog } from "./debug.ts";

/** At most one report line per destination in this long (SPEC §3: "once a minute at most"). */
export const DROP_REPORT_INTERVAL_MS = 60_000;
/**
 * Distinct reasons kept between two lines (each status and server text is its own reason); past
 * this, further ones are counted under OTHER_REASON, so a stream of different texts cannot grow
 * the tally or the line without bound.
 */
export const MAX_DROP_REASONS = 16;
export const OTHER_REASON = "other reasons";

/** The phrases of the report, in one place (docs/sdk.md "When payloads are given up" lists them). */
export const DROP_REASONS = {
  /** Still failing when the retry would come after the payloads' 10 minutes (SPEC §4). */
  age: (lastCause: string | undefined) => `age limit of 10 minutes reached${lastCause ? ` (last: ${lastCause})` : ""}`,
  /** A Retry-After that ends after the payloads' 10 minutes: reported at once. */
  retryAfter: (cause: string | undefined, retryAfterMs: number) =>
    `${cause ?? "ingest answered"} with Retry-After ${formatSeconds(retryAfterMs)}, past their 10-minute age limit`,
  /** A 4xx (or any status but 2xx, 5xx and 429), which can never succeed (SPEC §4). */
  rejected: (cause: string | undefined) => `${cause ?? "ingest refused the batch"}, which can never succeed`,
  /** The 1,000-payload bound (SPEC §4). */
  bound: (maxBuffered: number) => `buffer full (${maxBuffered.toLocaleString("en-US")} held, oldest dropped)`,
  /** The exit flush sent the batch and it failed (any status, a network error); never retried at exit. */
  exitFailed: (cause: string | undefined) => `exit flush failed (${cause ?? "unknown cause"})`,
  /** What the exit flush could not send or see answered within its deadline (SPEC §4: 1 second). */
  exitDeadline: (deadlineMs: number) => `exit flush out of time (${formatSeconds(deadlineMs)}: not sent or not confirmed)`,
  /** Held at exit while the ingest's Retry-After had not ended: never sent inside it. */
  exitHeld: (cause: string | undefined) => `exit before the ingest's Retry-After ended${cause ? ` (${cause})` : ""}`,
  /** The process ended at once (`process.exit()`, which skips the exit flush) while they were held or unanswered. */
  exitAbrupt: "process exited before they were sent or confirmed",
  /** The batch could not be sent at all (its send threw before any request). */
  unsendable: (message: string) => `could not be sent (${message})`,
} as const;

/** Time for the report: the wall clock and unref'd timers by default; tests pass their own. */
export interface ReportClock {
  now(): number;
  /** Runs `run` after `ms`; the timer must never keep the process alive. Returns a cancel function. */
  schedule(run: () => void, ms: number): () => void;
}

export const realReportClock: ReportClock = {
  now: () => Date.now(),
  schedule(run, ms) {
    const timer = setTimeout(run, ms);
    // A pending report must never keep the process alive (SPEC §4); the exit paths write it.
    (timer as { unref?: () => unknown }).unref?.();
    return () => clearTimeout(timer);
  },
};

/** Payloads given up since the process started, by reason (the same phrases as the lines). */
export interface DropCounts {
  total: number;
  byReason: Record<string, number>;
}

export class DropReporter {
  private readonly pending = new Map<string, number>();
  private pendingTotal = 0;
  private readonly totals = new Map<string, number>();
  private total = 0;
  private lastLineAtMs: number | null = null;
  private cancelTimer: (() => void) | null = null;
  private readonly name: string;
  private readonly write: DebugLog;
  private readonly clock: ReportClock;

  /** `name` says which destination a line is about (its ingest URL and key id, never the key). */
  constructor(name: string, write: DebugLog = toStderr, clock: ReportClock = realReportClock) {
    this.name = name;
    this.write = write;
    this.clock = clock;
  }

  /**
   * Counts `payloads` given up for `reason`. Written at once when no line went out in the last
   * minute (or `now` is set: a Retry-After that surely costs payloads is never held back), else
   * merged into the line due when the minute is up.
   */
  record(reason: string, payloads: number, now = false): void {
    if (!(payloads > 0)) return;
    const key = this.pending.has(reason) || this.pending.size < MAX_DROP_REASONS ? reason : OTHER_REASON;
    this.pending.set(key, (this.pending.get(key) ?? 0) + payloads);
    this.pendingTotal += payloads;
    const totalKey = this.totals.has(reason) || this.totals.size < MAX_DROP_REASONS ? reason : OTHER_REASON;
    this.totals.set(totalKey, (this.totals.get(totalKey) ?? 0) + payloads);
    this.total += payloads;
    const sinceLastMs = this.lastLineAtMs === null ? Infinity : this.clock.now() - this.lastLineAtMs;
    if (now || sinceLastMs >= DROP_REPORT_INTERVAL_MS) {
      this.writePending();
    } else if (this.cancelTimer === null) {
      this.cancelTimer = this.clock.schedule(() => {
        this.cancelTimer = null;
        this.writePending();
      }, DROP_REPORT_INTERVAL_MS - sinceLastMs);
    }
  }

  /** Payloads counted but not yet written. */
  get unreported(): number {
    return this.pendingTotal;
  }

  /** Everything given up since the process started (the lines' counts added up). */
  counts(): DropCounts {
    return { total: this.total, byReason: Object.fromEntries(this.totals) };
  }

  /** Writes the pending line now, whatever the minute: the process is about to end. */
  writePending(): void {
    if (this.cancelTimer !== null) {
      this.cancelTimer();
      this.cancelTimer = null;
    }
    if (this.pendingTotal === 0) return;
    const parts = [...this.pending].map(([reason, count]) => `${count} ${reason}`);
    const since = this.lastLineAtMs === null ? "" : " since the last report";
    this.pending.clear();
    const total = this.pendingTotal;
    this.pendingTotal = 0;
    this.lastLineAtMs = this.clock.now();
    this.write(`gave up on ${total} payload(s) for ${this.name}${since}: ${parts.join("; ")}`);
  }
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`;
}
