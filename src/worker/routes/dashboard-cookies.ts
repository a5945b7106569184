// The dashboard's read and admin sessions (SPEC §3, §5): a cookie holds a random id signed under
// ADMIN_TOKEN, never a key; D1 keeps the id's hash so sign-out, key revocation and project deletion
// end sessions at once. D1, not a Durable Object: the page reads D1 anyway and one statement checks
// session and key together.
import { databaseOf, directoryDb } from "../databases.ts";
import { deleteCookie, getCookie, getSignedCookie, setSignedCookie } from "hono/cookie";
import { randomBase62, sha256Hex } from "../auth.ts";
import { adminSessionLive, deleteAdminSessions, deleteSessions, findReadSession, insertSession, type SessionKind } from "../db/sessions.ts";
import type { AppContext } from "../env.ts";
import { attemptOf, recordFailedCredential } from "../throttle/credentials.ts";

export const SESSION_COOKIE = "mcpulse_session";
export const ADMIN_COOKIE = "mcpulse_admin";
/** A read session lasts 30 days (as the key cookie did); signing out or revoking the key ends it sooner. */
export const READ_SESSION_MS = 30 * 24 * 3_600_000;
/** An admin session lasts 12 hours: long enough for a working day, short for a credential that can change every project. */
export const ADMIN_SESSION_MS = 12 * 3_600_000;
/** Random base62 characters of a session id: 190 bits, like a key. */
const SESSION_ID_CHARS = 32;

const COOKIES: Record<SessionKind, { name: string; lifetimeMs: number }> = {
  read: { name: SESSION_COOKIE, lifetimeMs: READ_SESSION_MS },
  admin: { name: ADMIN_COOKIE, lifetimeMs: ADMIN_SESSION_MS },
};

/** `Secure` cookies are refused over plain http, which local development uses. */
export function isLocalHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]" || hostname.endsWith(".localhost");
}

export function cookieSecure(c: AppContext): boolean {
  return !isLocalHost(new URL(c.req.url).hostname);
}

/**
 * What a cookie of `kind` says: nothing (no cookie), a forged or stale one ("invalid"), or a
 * well-signed, unexpired session id. The value names its kind, so one kind never passes as the other.
 */
async function signedSessionId(c: AppContext, kind: SessionKind, nowMs: number): Promise<{ id: string } | "none" | "invalid"> {
  const { name, lifetimeMs } = COOKIES[kind];
  if (getCookie(c, name) === undefined) return "none";
  const secret = c.env.ADMIN_TOKEN;
  if (!secret) return "invalid";
  const value = await getSignedCookie(c, secret, name);
  if (typeof value !== "string") {
    // A cookie whose signature does not verify is a guess at a session: counted like a wrong key.
    await recordFailedCredential(c.env, attemptOf(c.req.raw, null), nowMs);
    return "invalid";
  }
  const match = /^(read|admin)\.([0-9A-Za-z]{32})\.(\d{1,15})$/.exec(value);
  if (!match || match[1] !== kind) return "invalid";
  const expiresMs = Number(match[3]);
  if (expiresMs <= nowMs || expiresMs > nowMs + lifetimeMs) return "invalid";
  return { id: match[2]! };
}

/** Starts a session of `kind`: its row, then its cookie. False when no ADMIN_TOKEN is set to sign it. */
async function startSession(c: AppContext, kind: SessionKind, owner: { project_id: string; key_id: string } | null, nowMs: number): Promise<boolean> {
  const secret = c.env.ADMIN_TOKEN;
  if (!secret) return false;
  const { name, lifetimeMs } = COOKIES[kind];
  const id = randomBase62(SESSION_ID_CHARS);
  const expiresMs = nowMs + lifetimeMs;
  await insertSession(directoryDb(c.env), {
    session_sha256: await sha256Hex(id),
    kind,
    project_id: owner?.project_id ?? null,
    key_id: owner?.key_id ?? null,
    created_at_ms: nowMs,
    expires_at_ms: expiresMs,
  });
  await setSignedCookie(c, name, `${kind}.${id}.${expiresMs}`, secret, {
    httpOnly: true,
    secure: cookieSecure(c),
    sameSite: "Strict",
    path: "/",
    maxAge: Math.floor(lifetimeMs / 1000),
  });
  return true;
}

function clearCookie(c: AppContext, kind: SessionKind): void {
  deleteCookie(c, COOKIES[kind].name, { path: "/", secure: cookieSecure(c) });
}

export function startReadSession(c: AppContext, key: { project_id: string; key_id: string }, nowMs: number): Promise<boolean> {
  return startSession(c, "read", key, nowMs);
}

export function startAdminSession(c: AppContext, nowMs: number): Promise<boolean> {
  return startSession(c, "admin", null, nowMs);
}

/** A live read session: its project, and the project's database (resolved with it, SPEC §7). */
export type ReadSession = { projectId: string; keyId: string; db: D1Database } | "none" | "ended";

/**
 * The project of this browser's read session: one D1 statement when a well-signed cookie is present,
 * none otherwise. "ended" (the cookie is cleared) when it was signed out, expired, or its key revoked.
 */
export async function readSession(c: AppContext, nowMs: number): Promise<ReadSession> {
  const signed = await signedSessionId(c, "read", nowMs);
  if (signed === "none") return "none";
  const row = signed === "invalid" ? null : await findReadSession(directoryDb(c.env), await sha256Hex(signed.id), nowMs);
  if (!row) {
    clearCookie(c, "read");
    return "ended";
  }
  return { projectId: row.project_id, keyId: row.key_id, db: databaseOf(c.env, row.database_name).db };
}

/** Whether this browser holds a live admin session (no query without a well-signed admin cookie). */
export async function hasAdminSession(c: AppContext, nowMs: number): Promise<boolean> {
  const signed = await signedSessionId(c, "admin", nowMs);
  if (signed === "none" || signed === "invalid") return false;
  return adminSessionLive(directoryDb(c.env), await sha256Hex(signed.id), nowMs);
}

/** Ends this browser's sessions of the given kinds on the server, and clears their cookies. */
export async function endSessions(c: AppContext, kinds: SessionKind[], nowMs: number): Promise<void> {
  const ended: string[] = [];
  for (const kind of kinds) {
    const signed = await signedSessionId(c, kind, nowMs);
    if (typeof signed === "object") ended.push(await sha256Hex(signed.id));
    clearCookie(c, kind);
  }
  await deleteSessions(directoryDb(c.env), ended);
}

/** Ends every admin session, in every browser (ADMIN_TOKEN unchanged); answers how many there were. */
export async function endAllAdminSessions(c: AppContext): Promise<number> {
  clearCookie(c, "admin");
  return deleteAdminSessions(directoryDb(c.env));
}
