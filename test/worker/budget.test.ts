// The per-key token bucket (SPEC §1.1): the pure step, and the Durable Object holding it.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { takeTokens } from "../../src/worker/budget/key-budget.ts";

describe("takeTokens", () => {
  it("starts full and refuses what exceeds the budget", () => {
    let r = takeTokens(undefined, 10_000, 10_000, 0);
    expect(r.decision).toEqual({ admitted: true });
    r = takeTokens(r.state, 1, 10_000, 0);
    // One token refills every 6 ms at 10,000/min: under a second → Retry-After 1.
    expect(r.decision).toEqual({ admitted: false, retryAfterSeconds: 1 });
  });

  it("refills at budget/60 per second and never above the budget", () => {
    let r = takeTokens(undefined, 60, 60, 0); // empty now
    r = takeTokens(r.state, 10, 60, 9_999);
    expect(r.decision.admitted).toBe(false); // 9.999 tokens
    r = takeTokens(r.state, 10, 60, 10_000);
    expect(r.decision.admitted).toBe(true);
    r = takeTokens(r.state, 61, 60, 10_000 + 3_600_000); // an hour later: full, not 3,600
    expect(r.state.tokens).toBe(-1);
  });

  it("says how long until the batch fits", () => {
    const r = takeTokens({ tokens: 0, updatedAtMs: 0, budgetPerMinute: 600 }, 25, 600, 0);
    expect(r.decision).toEqual({ admitted: false, retryAfterSeconds: 3 }); // 10/s → 2.5 s → 3
  });

  it("admits a batch larger than the whole budget only from a full bucket, leaving debt", () => {
    let r = takeTokens(undefined, 500, 100, 0);
    expect(r.decision.admitted).toBe(true);
    expect(r.state.tokens).toBe(-400);
    r = takeTokens(r.state, 500, 100, 60_000);
    expect(r.decision).toEqual({ admitted: false, retryAfterSeconds: 240 }); // 500 tokens at 100/min after 60 s
    r = takeTokens(r.state, 500, 100, 300_000);
    expect(r.decision.admitted).toBe(true);
  });

  it("applies a lowered budget at once", () => {
    let r = takeTokens(undefined, 1, 10_000, 0); // 9,999 left of the old budget
    r = takeTokens(r.state, 10, 10, 1); // capped at the new budget of 10
    expect(r.decision.admitted).toBe(true);
    r = takeTokens(r.state, 1, 10, 2);
    expect(r.decision.admitted).toBe(false);
  });
});

describe("KeyBudget Durable Object", () => {
  it("keeps one count per key, shared by every caller", async () => {
    const a = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName("mp_live_budgetA1"));
    const a2 = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName("mp_live_budgetA1"));
    const b = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName("mp_live_budgetB1"));
    expect(await a.take(3, 5)).toEqual({ admitted: true });
    expect(await a2.take(2, 5)).toEqual({ admitted: true });
    expect((await a.take(1, 5)).admitted).toBe(false);
    expect(await b.take(5, 5)).toEqual({ admitted: true });
  });

  it("writes nothing while the bucket stays at 90 % or more of its capacity (each write is a billed row)", async () => {
    const { runInDurableObject } = await import("cloudflare:test");
    const stub = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName("mp_live_budgetD1"));
    expect(await stub.take(1, 10)).toEqual({ admitted: true });
    await runInDurableObject(stub, async (_instance, state) => {
      expect(await state.storage.get("bucket")).toBeUndefined();
    });
    expect(await stub.take(1, 10)).toEqual({ admitted: true });
    await runInDurableObject(stub, async (_instance, state) => {
      const tokens = (await state.storage.get<{ tokens: number }>("bucket"))?.tokens;
      expect(tokens).toBeGreaterThanOrEqual(8);
      expect(tokens).toBeLessThan(9);
    });
  });

  it("writes the bucket to the object's storage, where a restarted instance reads it", async () => {
    const { runInDurableObject } = await import("cloudflare:test");
    const stub = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName("mp_live_budgetC1"));
    expect(await stub.take(4, 5)).toEqual({ admitted: true });
    await runInDurableObject(stub, async (_instance, state) => {
      const saved = await state.storage.get<{ tokens: number }>("bucket");
      expect(saved?.tokens).toBeCloseTo(1, 2);
    });
  });
});
