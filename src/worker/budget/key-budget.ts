// The per-key payload budget (SPEC §1.1), one Durable Object per key so every isolate asks the same
// counter. A token bucket (never the 2× a fixed-minute counter allows at a minute's edge), stored only
// below 90 % of capacity: each write is a billed row (bench:cost), and a lost fuller bucket costs at
// most that 10 %. Writes are not awaited (`allowUnconfirmed`) so ingest never waits on a flush.
// It also answers the key check without D1 (SPEC §1.1) and remembers admitted Idempotency-Keys for
// an hour in memory (docs/ingest.md says what a restart leaves to the D1 guard).
import { DurableObject } from "cloudflare:workers";
import { IDEMPOTENCY_WINDOW_MS } from "../time.ts";

export type BudgetDecision =
  | { admitted: true; duplicate?: boolean }
  | { admitted: false; retryAfterSeconds: number };

/** What the key check needs, as the object holds it. `null` fields: no such key in D1. */
export type KeyState = {
  key_sha256: string;
  project_id: string;
  kind: "ingest" | "read";
  revoked: boolean;
  payload_budget_per_minute: number;
  /** The project's database (SPEC §7); null or absent (a state stored before there were several): the first. */
  database?: string | null;
};

/** A key's state is read from D1 again when it is older than this (SPEC §1.1: a revocation within 60 s). */
export const KEY_STATE_MAX_AGE_MS = 60_000;
/** At most this many remembered per key (oldest forgotten first): bounded memory whatever a producer sends. */
export const MAX_REMEMBERED_IDEMPOTENCY_KEYS = 100_000;

const KEY_STATE_KEY = "key_state";

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
  /** The key's state: `undefined` not known yet, `null` no such key (as D1 said at loadedAtMs). */
  #keyState: KeyState | null | undefined;
  // Not `#private`: tests age the state and clear the remembered keys, as time and a restart would.
  private keyStateLoadedAtMs = 0;
  #keyStateRead = false;
  /** Idempotency-Key → when it was admitted, oldest first (a Map keeps insertion order). */
  private idempotencyKeys = new Map<string, number>();

  /**
   * What this object knows about its key: the state (or null: D1 had no such key), and whether it
   * is fresh enough to answer without D1. `state: undefined` when nothing is known at all.
   */
  async keyState(): Promise<{ state: KeyState | null | undefined; fresh: boolean }> {
    if (!this.#keyStateRead) {
      // After a restart the stored state answers, stale, until the worker refreshes it.
      this.#keyState = (await this.ctx.storage.get<KeyState>(KEY_STATE_KEY)) ?? undefined;
      this.#keyStateRead = true;
    }
    const fresh = this.keyStateLoadedAtMs > 0 && Date.now() - this.keyStateLoadedAtMs < KEY_STATE_MAX_AGE_MS;
    return { state: this.#keyState, fresh };
  }

  /** The state the worker has just read from D1 (null: no such key). Stored only when it changed. */
  async setKeyState(state: KeyState | null): Promise<void> {
    await this.keyState();
    const changed = JSON.stringify(state) !== JSON.stringify(this.#keyState ?? null);
    this.#keyState = state;
    this.keyStateLoadedAtMs = Date.now();
    if (!changed) return;
    if (state) await this.ctx.storage.put(KEY_STATE_KEY, state);
    else await this.ctx.storage.delete(KEY_STATE_KEY);
  }

  /** The key was revoked or its project deleted: refuse it from now on, without waiting for D1. */
  async revoke(): Promise<void> {
    await this.keyState();
    if (this.#keyState) await this.setKeyState({ ...this.#keyState, revoked: true });
    else this.keyStateLoadedAtMs = 0;
  }

  /**
   * The key's project moved to another database (SPEC §7): ingest writes there from now on, without
   * waiting for the state's refresh. Nothing to do when the object holds no state (it reads D1 first).
   */
  async moveTo(database: string): Promise<void> {
    await this.keyState();
    if (this.#keyState) await this.setKeyState({ ...this.#keyState, database });
  }

  /** Forgets an Idempotency-Key admitted by `take` whose batch could not be accepted after all (a 503). */
  async release(idempotencyKey: string): Promise<void> {
    this.idempotencyKeys.delete(idempotencyKey);
  }

  /**
   * Takes `payloads` from this key's budget, or says how many seconds to wait. A batch whose
   * Idempotency-Key was admitted within the hour is a duplicate: admitted, nothing taken.
   */
  async take(payloads: number, budgetPerMinute: number, idempotencyKey: string | null = null): Promise<BudgetDecision> {
    const nowMs = Date.now();
    if (idempotencyKey !== null) {
      this.#forgetIdempotencyKeysBefore(nowMs - IDEMPOTENCY_WINDOW_MS);
      if (this.idempotencyKeys.has(idempotencyKey)) return { admitted: true, duplicate: true };
    }
    const decision = await this.#takeTokens(payloads, budgetPerMinute, nowMs);
    if (decision.admitted && idempotencyKey !== null) {
      this.idempotencyKeys.set(idempotencyKey, nowMs);
      if (this.idempotencyKeys.size > MAX_REMEMBERED_IDEMPOTENCY_KEYS) {
        this.idempotencyKeys.delete(this.idempotencyKeys.keys().next().value!);
      }
    }
    return decision;
  }

  #forgetIdempotencyKeysBefore(cutoffMs: number): void {
    for (const [key, atMs] of this.idempotencyKeys) {
      if (atMs >= cutoffMs) break;
      this.idempotencyKeys.delete(key);
    }
  }

  async #takeTokens(payloads: number, budgetPerMinute: number, nowMs: number): Promise<BudgetDecision> {
    if (payloads === 0) return { admitted: true };
    if (!this.#loaded) {
      // The input gate holds other calls while this first read is in flight, so none sees a half-loaded bucket.
      this.#bucket = await this.ctx.storage.get<BucketState>(STATE_KEY);
      this.#loaded = true;
    }
    const { state, decision } = takeTokens(this.#bucket, payloads, budgetPerMinute, nowMs);
    this.#bucket = state;
    if (state.tokens < state.budgetPerMinute * PERSIST_BELOW_SHARE) {
      this.ctx.storage.put(STATE_KEY, state, { allowUnconfirmed: true }).catch(() => {});
    }
    return decision;
  }
}
