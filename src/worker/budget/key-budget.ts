// The per-key payload budget (SPEC §1.1: default 10,000 payloads per minute, counted per key
// across all isolates). One Durable Object per key: a Durable Object is single-threaded and
// globally unique, so every isolate that serves the key asks the same counter.
//
// The counter is a token bucket: it holds at most `budgetPerMinute` tokens and refills at
// `budgetPerMinute / 60` per second, so over any 60 s window a key gets at most one minute's budget
// plus what refilled during the window (never the 2× burst a fixed minute window allows at its
// edge). Its state is saved in the object's SQLite storage on every change, so an eviction or a
// restart does not reset it.
import { DurableObject } from "cloudflare:workers";

export type BudgetDecision = { admitted: true } | { admitted: false; retryAfterSeconds: number };

type BucketState = { tokens: number; updatedAtMs: number; budgetPerMinute: number };

const STATE_KEY = "bucket";
const MS_PER_MINUTE = 60_000;

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
  /** Takes `payloads` from this key's budget, or says how many seconds to wait. */
  async take(payloads: number, budgetPerMinute: number): Promise<BudgetDecision> {
    const kv = this.ctx.storage.kv;
    const { state, decision } = takeTokens(kv.get<BucketState>(STATE_KEY), payloads, budgetPerMinute, Date.now());
    kv.put(STATE_KEY, state);
    return decision;
  }
}
