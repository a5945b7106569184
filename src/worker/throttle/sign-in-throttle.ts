// The sign-in throttle's counter: one Durable Object per client network or key prefix, so every isolate
// counts a guess in one place. A failure over the limit writes nothing; an alarm deletes the storage
// once the window has passed.
import { DurableObject } from "cloudflare:workers";

/** At most `maxFailures` failures within any `windowMs`. */
export type FailureRule = { maxFailures: number; windowMs: number };

/** What a counter says: its failures in the window, and how long to wait when it is full. */
export type FailureVerdict = { failures: number; retryAfterSeconds: number | null };

const STATE_KEY = "failures";

/** The failures still inside the window at `nowMs`, oldest first. */
export function recentFailures(failures: readonly number[], nowMs: number, rule: FailureRule): number[] {
  return failures.filter((at) => at > nowMs - rule.windowMs && at <= nowMs);
}

/**
 * The verdict of a window (pure, exported for tests): full when it holds `maxFailures` failures,
 * until the oldest of them leaves it — a sliding window, so a blocked client regains one attempt
 * each time an old failure ages out, never a fresh burst.
 */
export function verdictOf(recent: readonly number[], nowMs: number, rule: FailureRule): FailureVerdict {
  if (recent.length < rule.maxFailures) return { failures: recent.length, retryAfterSeconds: null };
  const oldestThatBlocks = recent[recent.length - rule.maxFailures]!;
  return { failures: recent.length, retryAfterSeconds: Math.max(1, Math.ceil((oldestThatBlocks + rule.windowMs - nowMs) / 1000)) };
}

type StoredFailures = { windowMs: number; failures: number[] };

export class SignInThrottle extends DurableObject {
  // No copy in memory: the object's SQLite storage is local to it, so a read is cheap, and the
  // alarm's clean-up can never disagree with a cached copy.
  async #load(): Promise<StoredFailures> {
    return (await this.ctx.storage.get<StoredFailures>(STATE_KEY)) ?? { windowMs: 0, failures: [] };
  }

  /** The verdict now, without counting anything: what a correct credential costs (a read). */
  async peek(nowMs: number, rule: FailureRule): Promise<FailureVerdict> {
    return verdictOf(recentFailures((await this.#load()).failures, nowMs, rule), nowMs, rule);
  }

  /**
   * Counts one failure unless the window is already full — then nothing is written and the failure
   * is `refused` (the caller answers 429) — and answers the verdict after it.
   */
  async fail(nowMs: number, rule: FailureRule): Promise<FailureVerdict & { refused: boolean }> {
    const recent = recentFailures((await this.#load()).failures, nowMs, rule);
    const before = verdictOf(recent, nowMs, rule);
    if (before.retryAfterSeconds !== null) return { ...before, refused: true };
    if (recent.length === 0) await this.ctx.storage.setAlarm(nowMs + rule.windowMs);
    recent.push(nowMs);
    await this.ctx.storage.put(STATE_KEY, { windowMs: rule.windowMs, failures: recent } satisfies StoredFailures);
    return { ...verdictOf(recent, nowMs, rule), refused: false };
  }

  /** A window has passed since the first failure: forget what aged out, and everything once nothing is left. */
  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    const { windowMs, failures } = await this.#load();
    const recent = failures.filter((at) => at > nowMs - windowMs);
    if (recent.length === 0) {
      await this.ctx.storage.deleteAll();
      return;
    }
    await this.ctx.storage.put(STATE_KEY, { windowMs, failures: recent } satisfies StoredFailures);
    await this.ctx.storage.setAlarm(recent[0]! + windowMs);
  }
}
