// When and how a failed send is tried again (SPEC §4, revised turn 3): a network error, a timeout,
// a 5xx or a 429 is retried with the same Idempotency-Key after 1 s, 2 s, 4 s … (doubling,
// jittered, at most 60 s, Retry-After honoured) while the batch's payloads are under 10 minutes
// old; any other 4xx drops the batch (it can never succeed). Pure functions: the buffer keeps the time.

/** The first retry waits about this long; each further one twice as long (SPEC §4). */
export const RETRY_BASE_DELAY_MS = 1_000;
/** No wait between attempts is longer than this, unless the ingest's Retry-After asks for more (SPEC §4). */
export const RETRY_MAX_DELAY_MS = 60_000;
/** A batch is retried only while its oldest payload is younger than this (SPEC §4: 10 minutes). */
export const RETRY_MAX_AGE_MS = 600_000;
/** Each wait is its nominal length × a factor in [1 − JITTER, 1 + JITTER), so producers spread out. */
export const RETRY_JITTER = 0.2;

/** What the ingest answered: its status, and Retry-After when it sent one. */
export interface PostAnswer {
  status: number;
  /** Retry-After in milliseconds (from seconds or an HTTP date), or null. */
  retryAfterMs: number | null;
}

/** What the buffer does with a batch after one send. */
export type SendOutcome = "sent" | "drop" | { retry: true; retryAfterMs: number | null };

export const RETRY_WITHOUT_HINT: SendOutcome = Object.freeze({ retry: true, retryAfterMs: null }) as SendOutcome;

/** 2xx: sent. 5xx and 429: retry (honouring Retry-After). Any other status: drop. */
export function outcomeOfAnswer(answer: number | PostAnswer): SendOutcome {
  const { status, retryAfterMs } = typeof answer === "number" ? { status: answer, retryAfterMs: null } : answer;
  if (status >= 200 && status < 300) return "sent";
  if (status === 429 || (status >= 500 && status < 600)) return { retry: true, retryAfterMs };
  return "drop";
}

/** The debug line after a send. */
export function describeOutcome(answer: number | PostAnswer, outcome: SendOutcome, payloads: number): string {
  const status = typeof answer === "number" ? answer : answer.status;
  if (outcome === "sent") return `ingest answered ${status}`;
  if (outcome === "drop") return `ingest answered ${status}; batch of ${payloads} payload(s) dropped`;
  return `ingest answered ${status}; ${payloads} payload(s) to retry`;
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); null when absent or unusable. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // An HTTP date starts with its day name ("Tue, 01 Dec 2026 …"); Date.parse alone takes "-5" as a year.
  if (!/^[A-Za-z]{3}, /.test(text)) return null;
  const atMs = Date.parse(text);
  if (Number.isNaN(atMs)) return null;
  return Math.max(0, atMs - nowMs);
}

/**
 * The wait before retry number `retry` (1 for the first): 1 s × 2^(retry − 1), at most 60 s,
 * jittered; never shorter than the ingest's Retry-After. `random` is in [0, 1).
 */
export function retryDelayMs(retry: number, retryAfterMs: number | null, random: number = Math.random()): number {
  const nominal = Math.min(RETRY_MAX_DELAY_MS, RETRY_BASE_DELAY_MS * 2 ** Math.max(0, retry - 1));
  const jittered = Math.min(RETRY_MAX_DELAY_MS, Math.round(nominal * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random)));
  return Math.max(jittered, retryAfterMs ?? 0);
}

type WebCrypto = { getRandomValues(array: Uint8Array): Uint8Array; randomUUID?: () => string };

/**
 * One batch's Idempotency-Key (SPEC §1.1: 8–64 of [A-Za-z0-9_-]): a random UUID (36 characters of
 * hex digits and hyphens, 122 random bits). Node hands UUIDs out of a cached block of entropy, so
 * one costs a fraction of a getRandomValues call into the system's generator (about a tenth, timed
 * on Node 20 and 22); where randomUUID is missing, 22 base64url characters of 16 random bytes.
 */
export function newIdempotencyKey(): string {
  const crypto = (globalThis as unknown as { crypto: WebCrypto }).crypto;
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  return randomBase64UrlKey(crypto);
}

/** 22 base64url characters of 16 random bytes: the key where crypto.randomUUID is missing. */
export function randomBase64UrlKey(crypto: WebCrypto): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += alphabet[(value >> bits) & 63];
    }
  }
  if (bits > 0) out += alphabet[(value << (6 - bits)) & 63];
  return out;
}
