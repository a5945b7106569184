// Sign-in that resists guessing without ever costing a valid credential (SPEC §3; limits in
// docs/read-api.md "Signing in"). Credentials are checked before any counter is asked. Ingest keys
// skip the network rule: 128 random bits cannot be guessed. The right ADMIN_TOKEN is refused while
// its prefix window is full (a person may choose a guessable one); a right read or ingest key never
// is (its `key_id` is public, so anyone could lock its owner out).
import type { Env } from "../env.ts";
import { rateLimited, type ApiError, type RateLimit } from "../errors.ts";
import { ipv6Pieces } from "../ip.ts";
import type { FailureRule } from "./sign-in-throttle.ts";

/** Failures one client network may make: 10 in any 15 minutes. */
export const NETWORK_RULE: FailureRule = { maxFailures: 10, windowMs: 15 * 60_000 };
/** Failures against one key prefix from all networks together: 20 in any minute. */
export const PREFIX_RULE: FailureRule = { maxFailures: 20, windowMs: 60_000 };
/** The prefix every ADMIN_TOKEN attempt counts under (the token has no id of its own). */
export const ADMIN_PREFIX = "admin";

/** Who is trying which credential: the client's network (null when unknown) and the credential's prefix (null when it names none). */
export type CredentialAttempt = { network: string | null; prefix: string | null };

/**
 * The client's network from CF-Connecting-IP: an IPv4 address as it is, an IPv6 address by its
 * first 64 bits (one subscriber gets a whole /64, so counting single addresses would count nothing).
 */
export function clientNetwork(request: Request): string | null {
  const ip = request.headers.get("cf-connecting-ip")?.trim();
  if (!ip) return null;
  if (!ip.includes(":")) return ip;
  const pieces = ipv6Pieces(ip);
  return pieces === null ? ip : pieces.slice(0, 4).map((p) => p.toString(16)).join(":") + "::/64";
}

/** A key's prefix to count under: its `key_id` (the first 16 characters) when it looks like one of our keys, else null. */
export function keyPrefix(credential: string): string | null {
  return /^mp_(live|read)_[0-9A-Za-z]{8}/.test(credential) ? credential.slice(0, 16) : null;
}

export function attemptOf(request: Request, prefix: string | null): CredentialAttempt {
  return { network: clientNetwork(request), prefix };
}

function counter(env: Env, name: string) {
  return env.SIGN_IN_THROTTLE.get(env.SIGN_IN_THROTTLE.idFromName(name));
}

/** A throttled attempt: which limit refused it (SPEC §3) and for how long. */
export type Refusal = { limit: Extract<RateLimit, "network" | "key_prefix">; retryAfterSeconds: number };

/**
 * Before a correct ADMIN_TOKEN is let in: the refusal while the admin prefix's window is full (one
 * Durable Object read, never a write), else null. Asked before the token is compared, so that the
 * answer to a guess never depends on whether it was right while the window is full.
 */
export async function adminPrefixRefusal(env: Env, request: Request, nowMs: number): Promise<Refusal | null> {
  // In-process callers (no CF-Connecting-IP) are neither counted nor refused, as everywhere here.
  if (clientNetwork(request) === null) return null;
  const verdict = await counter(env, `prefix:${ADMIN_PREFIX}`).peek(nowMs, PREFIX_RULE);
  return verdict.retryAfterSeconds === null ? null : { limit: "key_prefix", retryAfterSeconds: verdict.retryAfterSeconds };
}

/**
 * After a credential failed: counts it against its network (unless `network: false`, for ingest
 * keys) and its prefix, and answers the refusal when a counter was already full (answer 429), else
 * null (answer 401). The failure that fills a counter is still a 401; the next is the first refused.
 */
export async function recordFailedCredential(
  env: Env,
  attempt: CredentialAttempt,
  nowMs: number,
  options: { network: boolean } = { network: true },
): Promise<Refusal | null> {
  const { network, prefix } = attempt;
  if (network === null) return null;
  const [ofNetwork, ofPrefix] = await Promise.all([
    options.network ? counter(env, `network:${network}`).fail(nowMs, NETWORK_RULE) : null,
    prefix === null ? null : counter(env, `prefix:${prefix}`).fail(nowMs, PREFIX_RULE),
  ]);
  const refusals: Refusal[] = [];
  if (ofNetwork?.refused && ofNetwork.retryAfterSeconds !== null) refusals.push({ limit: "network", retryAfterSeconds: ofNetwork.retryAfterSeconds });
  if (ofPrefix?.refused && ofPrefix.retryAfterSeconds !== null) refusals.push({ limit: "key_prefix", retryAfterSeconds: ofPrefix.retryAfterSeconds });
  // The longer wait answers: it is the one the client must honour.
  return refusals.sort((a, b) => b.retryAfterSeconds - a.retryAfterSeconds)[0] ?? null;
}

/** `90 seconds`, `15 minutes`: a wait in words. */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

/** What a refusal says in words: which limit, and how long to wait. */
export function refusalMessage(refusal: Refusal): string {
  const limit =
    refusal.limit === "network"
      ? `too many failed sign-in attempts from this network (${NETWORK_RULE.maxFailures} in ${NETWORK_RULE.windowMs / 60_000} minutes)`
      : `too many failed attempts with this key id (${PREFIX_RULE.maxFailures} a minute, from all networks)`;
  return `${limit}; try again in ${waitInWords(refusal.retryAfterSeconds)}`;
}

/** The API's answer to a throttled attempt: 429 `{"error", "code": "TOO_MANY_REQUESTS", "limit"}` with Retry-After. */
export function tooManyAttempts(refusal: Refusal): ApiError {
  return rateLimited(refusal.limit, refusalMessage(refusal), refusal.retryAfterSeconds);
}
