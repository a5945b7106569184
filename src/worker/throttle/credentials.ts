// Sign-in that resists guessing (docs/read-api.md, "Signing in"): failed credentials — wrong read
// keys, wrong admin tokens, malformed `Authorization` headers, forged session cookies — are counted
// per client network and per key prefix in SignInThrottle Durable Objects, and answered 429 with
// `Retry-After` once a counter is full.
//
// Two counters, so that an attacker cannot lock the right credential out for long:
// - per client network (CF-Connecting-IP; an IPv6 client by its /64): 10 failures in 15 minutes.
//   It is what stops one attacker, and it blocks only that attacker's own network.
// - per key prefix (a key's `key_id`, or "admin" for ADMIN_TOKEN): 20 failures in 1 minute, against
//   many networks guessing one credential. It is soft: it refuses further failures, and blocks a
//   network before its check only when that network has failed itself — a network with a clean
//   record always reaches the check, so the right credential still works from it, and a full
//   prefix window empties within a minute.
//
// What a check costs: `guardBeforeCheck` with `authoritative` (ADMIN_TOKEN and the sign-in forms)
// asks the network's counter (one Durable Object read, no write) and, only for a network with
// failures, the prefix's; without it (a bearer read key on every API call) it asks only this
// isolate's memory of blocked networks: read keys hold 190 random bits, so the throttle there turns a
// flood into 429s rather than guarding a guessable secret, and a correct key costs nothing extra. A
// failure costs one write in each counter until it is full, none after. A request without
// CF-Connecting-IP (Cloudflare's edge sets it on every request; only in-process callers lack it) is
// not counted.
//
// Ingest keys can use the same functions: `guardBeforeCheck(env, attempt, now, { authoritative:
// false })` before the key check and `recordFailedCredential` on a 401.
import type { Env } from "../env.ts";
import { apiError, type ApiError } from "../errors.ts";
import { ipv6Pieces } from "../ip.ts";
import type { FailureRule, FailureVerdict } from "./sign-in-throttle.ts";

/** Failures one client network may make: 10 in any 15 minutes. */
export const NETWORK_RULE: FailureRule = { maxFailures: 10, windowMs: 15 * 60_000 };
/** Failures against one key prefix from all networks together: 20 in any minute. */
export const PREFIX_RULE: FailureRule = { maxFailures: 20, windowMs: 60_000 };
/** The prefix every ADMIN_TOKEN attempt counts under (the token has no id of its own). */
export const ADMIN_PREFIX = "admin";
/** Networks this isolate has seen blocked, remembered at most this many at once. */
const MAX_REMEMBERED_NETWORKS = 10_000;

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

/** Networks seen blocked by this isolate → until when (epoch ms). Only ever shortens a flood; never the authority. */
const blockedNetworks = new Map<string, number>();

function rememberBlocked(network: string, verdict: FailureVerdict, nowMs: number): void {
  if (verdict.retryAfterSeconds === null) return;
  if (blockedNetworks.size >= MAX_REMEMBERED_NETWORKS) blockedNetworks.clear();
  blockedNetworks.set(network, nowMs + verdict.retryAfterSeconds * 1000);
}

function counter(env: Env, name: string) {
  return env.SIGN_IN_THROTTLE.get(env.SIGN_IN_THROTTLE.idFromName(name));
}

/**
 * Before a credential is checked: the seconds to wait when this attempt must be refused unchecked
 * (answer 429), else null. `authoritative` asks the counters; otherwise only this isolate's memory.
 */
export async function guardBeforeCheck(env: Env, attempt: CredentialAttempt, nowMs: number, options: { authoritative: boolean }): Promise<number | null> {
  const { network, prefix } = attempt;
  if (network === null) return null;
  const until = blockedNetworks.get(network);
  if (until !== undefined) {
    if (until > nowMs) return Math.ceil((until - nowMs) / 1000);
    blockedNetworks.delete(network);
  }
  if (!options.authoritative) return null;
  const own = await counter(env, `network:${network}`).peek(nowMs, NETWORK_RULE);
  rememberBlocked(network, own, nowMs);
  if (own.retryAfterSeconds !== null) return own.retryAfterSeconds;
  // The prefix window blocks only a network that has failed itself (see the top of this file).
  if (own.failures === 0 || prefix === null) return null;
  return (await counter(env, `prefix:${prefix}`).peek(nowMs, PREFIX_RULE)).retryAfterSeconds;
}

/**
 * After a credential failed: counts it, and answers the seconds to wait when either counter was
 * already full (answer 429), else null (answer 401). The failure that fills a counter is still a
 * 401; the next attempt is the first refused.
 */
export async function recordFailedCredential(env: Env, attempt: CredentialAttempt, nowMs: number): Promise<number | null> {
  const { network, prefix } = attempt;
  if (network === null) return null;
  const own = await counter(env, `network:${network}`).fail(nowMs, NETWORK_RULE);
  rememberBlocked(network, own, nowMs);
  // A network already refused does not count against the prefix too: one blocked attacker must not
  // be able to fill the prefix's window and slow the credential's owner down.
  const ofPrefix = own.refused || prefix === null ? null : await counter(env, `prefix:${prefix}`).fail(nowMs, PREFIX_RULE);
  const waits = [own, ofPrefix].flatMap((v) => (v?.refused && v.retryAfterSeconds !== null ? [v.retryAfterSeconds] : []));
  return waits.length === 0 ? null : Math.max(...waits);
}

/** The API's answer to a throttled attempt: 429 `{"error", "code": "TOO_MANY_REQUESTS"}` with Retry-After. */
export function tooManyAttempts(retryAfterSeconds: number): ApiError {
  return apiError("TOO_MANY_REQUESTS", "too many failed sign-in attempts; try again later", { "Retry-After": String(retryAfterSeconds) });
}
