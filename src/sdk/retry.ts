// When a failed send is tried again (SPEC §4): network error, timeout, 5xx or 429, with the same
// Idempotency-Key, doubling jittered waits, Retry-After honoured. Pure: the buffer keeps the time.

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
  /** The start of an error answer's body (at most MAX_ERROR_BODY_BYTES), for errorTextOf; absent on a 2xx. */
  errorBody?: string | null;
}

/**
 * What the buffer does with a batch after one send. `cause` says in words what went wrong (the
 * status and the server's own `error` text, or the network failure), for the line that reports
 * payloads given up (./drops.ts); a bare "drop" is a refusal whose cause is not known.
 */
export type SendOutcome =
  | "sent"
  | "drop"
  | { drop: true; cause: string }
  | { retry: true; retryAfterMs: number | null; cause?: string };

export const RETRY_WITHOUT_HINT: SendOutcome = Object.freeze({ retry: true, retryAfterMs: null }) as SendOutcome;

/** 2xx: sent. 5xx and 429: retry (honouring Retry-After). Any other status: drop. */
export function outcomeOfAnswer(answer: number | PostAnswer): SendOutcome {
  const { status, retryAfterMs } = typeof answer === "number" ? { status: answer, retryAfterMs: null } : answer;
  if (status >= 200 && status < 300) return "sent";
  if (status === 429 || (status >= 500 && status < 600)) return { retry: true, retryAfterMs };
  return "drop";
}

/** Of an error answer's body, only this much is read: enough for `{"error", "code"}`, never a whole page. */
export const MAX_ERROR_BODY_BYTES = 2_048;
/** The server's `error` text is cut to this many characters in a log line. */
export const MAX_ERROR_TEXT_CHARS = 120;

/**
 * The server's own words from an error body `{"error": string, "code"?: string}` (src/worker/errors.ts),
 * fit for one stderr line: control and format characters (escapes, bidi overrides, newlines) are
 * removed, the text cut to MAX_ERROR_TEXT_CHARS, and a `code` of capitals and underscores added.
 * Null when the body is not such JSON: a body that is not ours is not repeated.
 */
export function errorTextOf(body: string | null | undefined): string | null {
  if (!body) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== "object") return null;
  const { error, code } = parsed as { error?: unknown; code?: unknown };
  if (typeof error !== "string") return null;
  const clean = error.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]+/gu, " ").replace(/\s+/g, " ").trim();
  const cut = clean.length > MAX_ERROR_TEXT_CHARS ? `${clean.slice(0, MAX_ERROR_TEXT_CHARS - 1)}…` : clean;
  const named = typeof code === "string" && /^[A-Z][A-Z0-9_]{0,39}$/.test(code) ? `, ${code}` : "";
  return cut === "" && named === "" ? null : `"${cut}"${named}`;
}

/** "ingest answered 429 ("payload budget exceeded", TOO_MANY_REQUESTS)": a status in words, with the server's text when it sent one. */
export function describeAnswer(answer: number | PostAnswer): string {
  const { status, errorBody } = typeof answer === "number" ? { status: answer, errorBody: null } : answer;
  const text = errorTextOf(errorBody);
  return text === null ? `ingest answered ${status}` : `ingest answered ${status} (${text})`;
}

/** The outcome of an answer with its cause in words, for the buffer (SPEC §4: which are retried). */
export function outcomeWithCause(answer: number | PostAnswer): SendOutcome {
  const outcome = outcomeOfAnswer(answer);
  if (outcome === "sent") return outcome;
  const cause = describeAnswer(answer);
  return outcome === "drop" ? { drop: true, cause } : { retry: true, retryAfterMs: (outcome as { retryAfterMs: number | null }).retryAfterMs, cause };
}

/** The debug line after a send. */
export function describeOutcome(answer: number | PostAnswer, outcome: SendOutcome, payloads: number): string {
  const answered = describeAnswer(answer);
  if (outcome === "sent") return answered;
  if (outcome === "drop" || "drop" in outcome) return `${answered}; batch of ${payloads} payload(s) dropped`;
  return `${answered}; ${payloads} payload(s) to retry`;
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
 * One batch's Idempotency-Key (SPEC §1.1: 8–64 of [A-Za-z0-9_-]): a random UUID, cheap on Node (cached
 * entropy); without randomUUID, 22 base64url characters of 16 random bytes.
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
