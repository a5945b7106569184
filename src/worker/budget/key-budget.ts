// The per-key payload budget (SPEC §1.1: default 10,000 payloads per minute, counted per key
// across all isolates). One Durable Object per key: a Durable Object is single-threaded and
// globally unique, so every isolate that serves the key asks the same counter.
//
// The counter is a token bucket: it holds at most `budgetPerMinute` tokens and refills at
// `budgetPerMinute / 60` per second, so in any window of T seconds a key gets at most
// budget × (1 + T/60) — never the 2× within seconds that a fixed-minute counter allows at a
// minute's edge. The bucket lives in the object's memory and is written to its SQLite storage
// when it holds less than 90 % of its capacity, so an eviction or a restart does not reset a key
// that is using its budget. A fuller bucket is not written: each write is a billed row (one per
// ingest request was ~0.55 rows per call at the SDK's batching, bench:cost), and losing it costs at
// most the 10 % it is short of full, because the stored state it falls back to, refilled for the
// time since, is never below the true count and never above the capacity. The write is not
// awaited and does not hold the answer (`allowUnconfirmed`): waiting for each write to be
// confirmed made every ingest request wait on a storage flush.
import { DurableObject } from "cloudflare:workers";

export type BudgetDecision = { admitted: true } | { admitted: false; retryAfterSeconds: number };

type BucketState = { tokens: number; updatedAtMs: number; budgetPerMinute: number };

const STATE_KEY = "bucket";
const MS_PER_MINUTE = 60_000;
/** The bucket is stored only below this share of its capacity (see above). */
export const PERSIST_BELOW_SHARE = 0.9;

/**
 * Pure token-bucket step, exported for tests. A batch larger than the whole budget is admitted
 * only from a full bucket, which it leaves in debt, so the long-run rate still holds.
 */
export function takeTokens(
  state: BucketState | undefined,
  payloads: number,
  budgetPerMinute: number,
  nowMs: number,
): { state: BucketState; decision: BudgetDecision } {
  const capacity = budgetPerMinute;
  const refillPerMs = budgetPerMinute / MS_PER_MINUTE;
  const elapsedMs = state ? Math.max(0, nowMs - state.updatedAtMs) : 0;
  // A changed budget takes effect at once; tokens never exceed the (new) capacity.
  const tokens = state ? Math.min(capacity, state.tokens + elapsedMs * refillPerMs) : capacity;
  const enough = payloads <= tokens || (payloads > capacity && tokens >= capacity);
  if (enough) {
    return { state: { tokens: tokens - payloads, updatedAtMs: nowMs, budgetPerMinute }, decision: { admitted: true } };
  }
  const needed = Math.min(payloads, capacity) - tokens;
  const retryAfterSeconds = Math.max(1, Math.ceil(needed / refillPerMs / 1000));
  return { state: { tokens, updatedAtMs: nowMs, budgetPerMinute }, decision: { admitted: false, retryAfterSeconds } };
}

export class KeyBudget extends DurableObject {
  #bucket: BucketState | undefined;
  #loaded = false;

  /** Takes `payloads` from this key's budget, or says how many seconds to wait. */
  async take(payloads: number, budgetPerMinute: number): Promise<BudgetDecision> {
    if (!this.#loaded) {
      // The input gate holds other calls while this first read is in flight, so none sees a half-loaded bucket.
      this.#bucket = await this.ctx.storage.get<BucketState>(STATE_KEY);
      this.#loaded = true;
    }
    const { state, decision } = takeTokens(this.#bucket, payloads, budgetPerMinute, Date.now());
    this.#bucket = state;
    if (state.tokens < state.budgetPerMinute * PERSIST_BELOW_SHARE) {
      this.ctx.storage.put(STATE_KEY, state, { allowUnconfirmed: true }).catch(() => {});
    }
    return decision;
  }
}
