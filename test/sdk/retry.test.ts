// The SDK's retries (SPEC §4, revised turn 3): which answers are retried, the schedule (1 s, 2 s,
// 4 s … jittered, at most 60 s, Retry-After honoured), the 10-minute age limit, the 1,000 bound
// shared with the waiting payloads, the same Idempotency-Key on every attempt, and timers that never
// keep the process alive. The buffer runs on a fake clock here; test/sdk/transport.test.ts sends
// to a real local server.
import { webcrypto } from "node:crypto";
import { afterEach, describe, expect, test, vi } from "vitest";
import { DEFAULT_BUFFER_TUNING, PayloadBuffer } from "../../src/sdk/buffer.ts";
import {
  RETRY_MAX_AGE_MS,
  newIdempotencyKey,
  outcomeOfAnswer,
  parseRetryAfter,
  randomBase64UrlKey,
  retryDelayMs,
  type SendOutcome,
} from "../../src/sdk/retry.ts";

afterEach(() => vi.useRealTimers());

const item = (seq: number) => ({ v: 1, type: "call", seq });
const RETRY: SendOutcome = { retry: true, retryAfterMs: null };

describe("which answers are retried", () => {
  test("2xx is sent; 5xx and 429 are retried (with their Retry-After); every other status drops the batch", () => {
    expect(outcomeOfAnswer(202)).toBe("sent");
    expect(outcomeOfAnswer({ status: 200, retryAfterMs: null })).toBe("sent");
    for (const status of [500, 502, 503, 504, 599]) expect(outcomeOfAnswer(status)).toEqual({ retry: true, retryAfterMs: null });
    expect(outcomeOfAnswer({ status: 429, retryAfterMs: 7_000 })).toEqual({ retry: true, retryAfterMs: 7_000 });
    for (const status of [400, 401, 403, 404, 413, 415, 422, 0, 302]) expect(outcomeOfAnswer(status)).toBe("drop");
  });

  test("Retry-After in seconds or as an HTTP date; anything else is no hint", () => {
    const now = Date.parse("2026-12-01T12:00:00Z");
    expect(parseRetryAfter("10", now)).toBe(10_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("Tue, 01 Dec 2026 12:00:30 GMT", now)).toBe(30_000);
    expect(parseRetryAfter("Tue, 01 Dec 2026 11:00:00 GMT", now)).toBe(0);
    for (const bad of ["soon", "-5", "1.5", "", null, undefined]) expect(parseRetryAfter(bad, now)).toBeNull();
  });
});

describe("the schedule", () => {
  test("1 s, 2 s, 4 s … doubling up to 60 s (jitter at its middle)", () => {
    expect(Array.from({ length: 9 }, (_, i) => retryDelayMs(i + 1, null, 0.5))).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  });

  test("jitter spreads each wait by ±20 % and never past 60 s", () => {
    expect(retryDelayMs(1, null, 0)).toBe(800);
    expect(retryDelayMs(1, null, 0.999_999)).toBe(1_200);
    expect(retryDelayMs(6, null, 0.999_999)).toBe(38_400);
    expect(retryDelayMs(7, null, 0.999_999)).toBe(60_000);
    expect(retryDelayMs(7, null, 0)).toBe(48_000);
  });

  test("Retry-After is honoured: never sooner, even past 60 s", () => {
    expect(retryDelayMs(1, 5_000, 0.5)).toBe(5_000);
    expect(retryDelayMs(1, 120_000, 0.5)).toBe(120_000);
    expect(retryDelayMs(5, 1_000, 0.5)).toBe(16_000);
  });

  test("an Idempotency-Key per batch: a random UUID, within [A-Za-z0-9_-]{8,64} (SPEC §1.1), never repeated", () => {
    const keys = new Set(Array.from({ length: 1_000 }, () => newIdempotencyKey()));
    expect(keys.size).toBe(1_000);
    for (const k of keys) {
      expect(k).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(k).toMatch(/^[A-Za-z0-9_-]{8,64}$/);
    }
  });

  test("without crypto.randomUUID: 22 base64url characters of 16 random bytes, never repeated", () => {
    vi.stubGlobal("crypto", { getRandomValues: (bytes: Uint8Array) => webcrypto.getRandomValues(bytes) });
    try {
      const keys = new Set(Array.from({ length: 1_000 }, () => newIdempotencyKey()));
      expect(keys.size).toBe(1_000);
      for (const k of keys) expect(k).toMatch(/^[A-Za-z0-9_-]{22}$/);
    } finally {
      vi.unstubAllGlobals();
    }
  });

  test("the fallback encodes every bit: all-zero and all-one bytes", () => {
    expect(randomBase64UrlKey({ getRandomValues: (bytes) => bytes.fill(0) })).toBe("AAAAAAAAAAAAAAAAAAAAAA");
    expect(randomBase64UrlKey({ getRandomValues: (bytes) => bytes.fill(255) })).toBe("_____________________w");
  });
});

/** A buffer on the fake clock whose sends answer from `answers` (then "sent"), recording each attempt. */
function bufferAnswering(answers: SendOutcome[], tuning = {}) {
  const attempts: { atMs: number; seqs: unknown[]; key: string; final: boolean }[] = [];
  const buffer = new PayloadBuffer(async (batch, final, idempotencyKey) => {
    attempts.push({ atMs: Date.now(), seqs: batch.map((p) => (p as { seq: number }).seq), key: idempotencyKey, final });
    return answers.shift() ?? "sent";
  }, { ...DEFAULT_BUFFER_TUNING, ...tuning });
  buffer.random = () => 0.5;
  return { buffer, attempts };
}

async function flushTimers(ms: number) {
  await vi.advanceTimersByTimeAsync(ms);
}

describe("the buffer's retries (fake clock)", () => {
  test("retried after 1, 2 and 4 s with the same key, then sent; nothing is sent in between", async () => {
    vi.useFakeTimers();
    const { buffer, attempts } = bufferAnswering([RETRY, RETRY, RETRY]);
    const t0 = Date.now();
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await flushTimers(0);
    for (let i = 30; i < 60; i++) buffer.add(item(i)); // waits behind the failed batch
    await flushTimers(999);
    expect(attempts).toHaveLength(1);
    await flushTimers(1);
    expect(attempts).toHaveLength(2);
    await flushTimers(2_000);
    expect(attempts).toHaveLength(3);
    await flushTimers(4_000);
    expect(attempts.map((a) => a.atMs - t0)).toEqual([0, 1_000, 3_000, 7_000, 7_000]);
    expect(new Set(attempts.slice(0, 4).map((a) => a.key)).size).toBe(1);
    expect(attempts[4]!.seqs).toEqual(Array.from({ length: 30 }, (_, i) => 30 + i));
    expect(attempts[4]!.key).not.toBe(attempts[0]!.key);
    expect(buffer.size).toBe(0);
  });

  test("a batch still failing when its payloads are 10 minutes old is dropped", async () => {
    vi.useFakeTimers();
    const { buffer, attempts } = bufferAnswering(Array.from({ length: 100 }, () => RETRY));
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await flushTimers(RETRY_MAX_AGE_MS + 120_000);
    const last = attempts.at(-1)!;
    expect(last.atMs - attempts[0]!.atMs).toBeLessThan(RETRY_MAX_AGE_MS);
    // 1+2+4+8+16+32 s, then every 60 s: the attempt after 9 × 60 s more would come at ≥ 10 minutes.
    expect(attempts).toHaveLength(1 + 6 + 8);
    expect(buffer.droppedBatches).toBe(1);
    expect(buffer.size).toBe(0);
  });

  test("Retry-After holds the retry back", async () => {
    vi.useFakeTimers();
    const { buffer, attempts } = bufferAnswering([{ retry: true, retryAfterMs: 30_000 }]);
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await flushTimers(29_999);
    expect(attempts).toHaveLength(1);
    await flushTimers(1);
    expect(attempts).toHaveLength(2);
  });

  test("a drop is final", async () => {
    vi.useFakeTimers();
    const { buffer, attempts } = bufferAnswering(["drop"]);
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await flushTimers(120_000);
    expect(attempts).toHaveLength(1);
    expect(buffer.droppedBatches).toBe(1);
  });

  test("the batch waiting for its retry counts in the 1,000 bound, and its oldest go first (same key)", async () => {
    vi.useFakeTimers();
    const { buffer, attempts } = bufferAnswering([RETRY], { flushIntervalMs: 600_000 });
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await flushTimers(0);
    expect(buffer.size).toBe(30);
    // No flush while the retry waits: fill the buffer behind it.
    for (let i = 30; i < 1_000; i++) buffer.add(item(i));
    expect(buffer.size).toBe(1_000);
    buffer.add(item(1_000));
    buffer.add(item(1_001));
    expect(buffer.size).toBe(1_000);
    await flushTimers(1_000);
    expect(attempts[1]!.seqs).toEqual(Array.from({ length: 28 }, (_, i) => 2 + i));
    expect(attempts[1]!.key).toBe(attempts[0]!.key);
  });

  test("the exit flush sends the batch waiting for its retry first, once, with its key", async () => {
    vi.useFakeTimers();
    const { buffer, attempts } = bufferAnswering([RETRY, RETRY], { flushIntervalMs: 600_000 });
    for (let i = 0; i < 30; i++) buffer.add(item(i));
    await flushTimers(0);
    buffer.add(item(30));
    const done = buffer.flushFinal(1_000);
    await flushTimers(0);
    await done;
    expect(attempts.map((a) => [a.seqs.length, a.final])).toEqual([[30, false], [30, true], [1, true]]);
    expect(attempts[1]!.key).toBe(attempts[0]!.key);
    await flushTimers(120_000);
    expect(attempts).toHaveLength(3);
  });
});

test("the retry timer never keeps the process alive (unref'd, real timers)", async () => {
  const buffer = new PayloadBuffer(async () => RETRY);
  for (let i = 0; i < 30; i++) buffer.add(item(i));
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const timer = (buffer as unknown as { retryTimer: NodeJS.Timeout | null }).retryTimer;
  expect(timer).not.toBeNull();
  expect(timer!.hasRef()).toBe(false);
  await buffer.flushFinal(10);
});
