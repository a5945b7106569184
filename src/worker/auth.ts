// API keys (SPEC §3): generation, SHA-256 storage, constant-time verification, and the Hono
// middleware that turns a bearer key into the one project it belongs to.
import type { Context, MiddlewareHandler } from "hono";
import { timingSafeEqual } from "hono/utils/buffer";
import type { AppEnv, Env } from "./env.ts";
import type { KeyState } from "./budget/key-budget.ts";
import { findKeyById, type KeyKind, type KeyWithProject } from "./db/keys.ts";
import { databaseOf, directoryDb } from "./databases.ts";
import { apiError } from "./errors.ts";
import { attemptOf, keyPrefix, recordFailedCredential, tooManyAttempts } from "./throttle/credentials.ts";
import { errorName, log } from "./log.ts";

export type { KeyKind };

export type AuthenticatedKey = { project_id: string; key_id: string; payload_budget_per_minute: number; database: string | null };

/** Ingest keys write only, read keys read only (SPEC §3). */
export const KEY_PREFIX = { ingest: "mp_live_", read: "mp_read_" } as const satisfies Record<KeyKind, string>;
export const KEY_RANDOM_CHARS = 32;
/** `key_id` = the key's first 16 characters, kept in clear to name it (SPEC §3). */
export const KEY_ID_CHARS = 16;

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
// 248 = 4 × 62: bytes at or above it are rejected so `byte % 62` is uniform (no modulo bias).
const BASE62_REJECT_FROM = 256 - (256 % BASE62.length);
const KEY_PATTERN = /^mp_(live|read)_[0-9A-Za-z]{32}$/;

export function randomBase62(count: number): string {
  let out = "";
  // getRandomValues fills at most 65,536 bytes per call.
  const bytes = new Uint8Array(Math.min(4096, Math.max(16, count * 2)));
  while (out.length < count) {
    crypto.getRandomValues(bytes);
    for (const byte of bytes) {
      if (byte >= BASE62_REJECT_FROM) continue;
      out += BASE62[byte % BASE62.length];
      if (out.length === count) break;
    }
  }
  return out;
}

export function isProjectKeyShaped(credential: string): boolean {
  return KEY_PATTERN.test(credential);
}

export function generateKey(kind: KeyKind): string {
  return KEY_PREFIX[kind] + randomBase62(KEY_RANDOM_CHARS);
}

export function keyIdOf(key: string): string {
  return key.slice(0, KEY_ID_CHARS);
}

/** The only form a key is stored in. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  let hex = "";
  for (const byte of new Uint8Array(digest)) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** A wrong-kind key is answered like an unknown one (SPEC §3); digests compared in constant time. */
export async function authenticateKey(
  db: D1Database,
  key: string,
  kind: KeyKind,
): Promise<AuthenticatedKey | null> {
  if (!KEY_PATTERN.test(key) || !key.startsWith(KEY_PREFIX[kind])) return null;
  const [row, digest] = await Promise.all([findKeyById(db, keyIdOf(key)), sha256Hex(key)]);
  if (!row || row.kind !== kind || row.revoked_at_ms !== null) return null;
  if (!(await timingSafeEqual(row.key_sha256, digest))) return null;
  return { project_id: row.project_id, key_id: row.key_id, payload_budget_per_minute: row.payload_budget_per_minute, database: row.database_name };
}

/**
 * SPEC §9: the approving read key must still be live, so revoking it (or deleting the project) ends
 * the grant's tokens at once.
 */
export async function authenticateGrantKey(db: D1Database, keyId: string, projectId: string): Promise<AuthenticatedKey | null> {
  const row = await findKeyById(db, keyId);
  if (!row || row.kind !== "read" || row.revoked_at_ms !== null || row.project_id !== projectId) return null;
  return { project_id: row.project_id, key_id: row.key_id, payload_budget_per_minute: row.payload_budget_per_minute, database: row.database_name };
}

export type IngestKeyCheck = { ok: true; key: AuthenticatedKey } | { ok: false; status: 401 | 503 };

function keyStateOf(row: KeyWithProject | null): KeyState | null {
  if (!row) return null;
  return { key_sha256: row.key_sha256, project_id: row.project_id, kind: row.kind, revoked: row.revoked_at_ms !== null, payload_budget_per_minute: row.payload_budget_per_minute, database: row.database_name };
}

async function admitByState(state: KeyState | null, keyId: string, digest: string): Promise<IngestKeyCheck> {
  if (!state || state.kind !== "ingest" || state.revoked || !(await timingSafeEqual(state.key_sha256, digest))) return { ok: false, status: 401 };
  return { ok: true, key: { project_id: state.project_id, key_id: keyId, payload_budget_per_minute: state.payload_budget_per_minute, database: state.database ?? null } };
}

function logKeyCheck(event: string, keyId: string, err: unknown): void {
  log.error(event, { key_id: keyId, error: errorName(err) });
}

/**
 * SPEC §1.1: no D1 on the hot path; the key's Durable Object refreshes from D1 after 60 s. While D1
 * fails a known key keeps its last state (202, never 401/500); an unknown one answers 503.
 */
export async function authenticateIngestKey(env: Env, db: D1Database, key: string): Promise<IngestKeyCheck> {
  if (!KEY_PATTERN.test(key) || !key.startsWith(KEY_PREFIX.ingest)) return { ok: false, status: 401 };
  const keyId = keyIdOf(key);
  const digest = await sha256Hex(key);
  let stub: ReturnType<Env["KEY_BUDGET"]["get"]> | null = null;
  let known: { state: KeyState | null | undefined; fresh: boolean } | null = null;
  try {
    stub = env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(keyId));
    known = await stub.keyState();
  } catch (err) {
    logKeyCheck("key_state_unavailable", keyId, err);
  }
  if (known?.fresh && known.state !== undefined) return admitByState(known.state, keyId, digest);
  let state: KeyState | null;
  try {
    state = keyStateOf(await findKeyById(db, keyId));
  } catch (err) {
    logKeyCheck("key_check_d1_unavailable", keyId, err);
    // D1 is down: the last state the object holds answers, however old; without one, nobody can tell.
    if (known && known.state !== undefined) return admitByState(known.state, keyId, digest);
    return { ok: false, status: 503 };
  }
  if (stub) {
    try {
      await stub.setKeyState(state);
    } catch (err) {
      logKeyCheck("key_state_unavailable", keyId, err);
    }
  }
  return admitByState(state, keyId, digest);
}

export async function revokeKeyStates(env: Env, keyIds: readonly string[]): Promise<void> {
  await Promise.all(
    keyIds.map(async (keyId) => {
      try {
        await env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(keyId)).revoke();
      } catch (err) {
        // Within KEY_STATE_MAX_AGE_MS the object reads D1 again and learns it there.
        logKeyCheck("key_revocation_not_delivered", keyId, err);
      }
    }),
  );
}

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/** The key header (OTLP's `x-mcpulse-key`, SPEC §10) counts only without an Authorization header. */
export function credentialOf(request: Request, keyHeader?: string): { header: string | undefined; token: string | null } {
  const authorization = request.headers.get("authorization") ?? undefined;
  if (authorization !== undefined || keyHeader === undefined) return { header: authorization, token: bearerToken(authorization) };
  const value = request.headers.get(keyHeader) ?? undefined;
  const trimmed = value?.trim() ?? "";
  return { header: value, token: trimmed === "" || /\s/.test(trimmed) ? null : trimmed };
}

/**
 * Key first, so a correct key is never refused for what others did (SPEC §3); a missing header is
 * not a guess and is not counted.
 */
export async function checkBearerKey<T>(
  env: Env,
  request: Request,
  what: string,
  check: (token: string) => Promise<T | null>,
  options: { countNetwork: boolean; challenge?: string; keyHeader?: string } = { countNetwork: true },
): Promise<T> {
  const { header, token } = credentialOf(request, options.keyHeader);
  const key = token === null ? null : await check(token);
  if (key !== null) return key;
  if (header !== undefined) {
    const attempt = attemptOf(request, token === null ? null : keyPrefix(token));
    const refusal = await recordFailedCredential(env, attempt, Date.now(), { network: options.countNetwork });
    if (refusal !== null) throw tooManyAttempts(refusal);
  }
  throw apiError("UNAUTHORIZED", token === null ? "missing bearer key" : `not a valid ${what}`, {
    "WWW-Authenticate": options.challenge ?? 'Bearer realm="mcpulse"',
  });
}

/** The database is resolved once per request (SPEC §7) and passed down as `c.var.db`. */
export function setAuthenticated(c: Context<AppEnv>, auth: AuthenticatedKey): void {
  const database = databaseOf(c.env, auth.database);
  c.set("projectId", auth.project_id);
  c.set("keyId", auth.key_id);
  c.set("payloadBudgetPerMinute", auth.payload_budget_per_minute);
  c.set("database", database.name);
  c.set("db", database.db);
}

export function requireKey(kind: KeyKind, challenge?: (c: Context<AppEnv>) => string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const options = challenge ? { countNetwork: true, challenge: challenge(c) } : { countNetwork: true };
    const auth = await checkBearerKey(c.env, c.req.raw, `${kind} key`, (token) => authenticateKey(directoryDb(c.env), token, kind), options);
    setAuthenticated(c, auth);
    await next();
  };
}
