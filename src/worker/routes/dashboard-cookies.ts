// The dashboard's two cookies (SPEC §3, §5): the read-key session (the project a browser sees) and
// the admin session (whether it may change that project's alerts). Both HttpOnly, SameSite=Strict,
// Secure except on localhost. The admin cookie never holds ADMIN_TOKEN: it holds its expiry, signed
// with HMAC-SHA256 under the token (Hono's signed cookies; crypto.subtle.verify compares in constant
// time), so changing ADMIN_TOKEN ends every admin session at once.
import type { Context } from "hono";
import { deleteCookie, getSignedCookie, setSignedCookie } from "hono/cookie";
import type { AppEnv } from "../env.ts";

type Ctx = Context<AppEnv>;

export const SESSION_COOKIE = "mcpulse_read_key";
export const ADMIN_COOKIE = "mcpulse_admin";
/** An admin session lasts 12 hours: long enough for a working day, short for a credential that can change every project. */
export const ADMIN_SESSION_MS = 12 * 3_600_000;
/** What the admin cookie signs, before its expiry (epoch ms): a purpose, so no other signed value of ours can pass as it. */
const ADMIN_VALUE_PREFIX = "dashboard-admin:";

/** `Secure` cookies are refused over plain http, which local development uses. */
export function isLocalHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]" || hostname.endsWith(".localhost");
}

export function cookieSecure(c: Ctx): boolean {
  return !isLocalHost(new URL(c.req.url).hostname);
}

export async function setAdminCookie(c: Ctx, nowMs: number): Promise<void> {
  const token = c.env.ADMIN_TOKEN;
  if (!token) return;
  await setSignedCookie(c, ADMIN_COOKIE, ADMIN_VALUE_PREFIX + String(nowMs + ADMIN_SESSION_MS), token, {
    httpOnly: true,
    secure: cookieSecure(c),
    sameSite: "Strict",
    path: "/",
    maxAge: ADMIN_SESSION_MS / 1000,
  });
}

export function clearAdminCookie(c: Ctx): void {
  deleteCookie(c, ADMIN_COOKIE, { path: "/", secure: cookieSecure(c) });
}

/** Whether this request carries an admin cookie signed under the current ADMIN_TOKEN and not expired. */
export async function hasAdminSession(c: Ctx, nowMs: number): Promise<boolean> {
  const token = c.env.ADMIN_TOKEN;
  if (!token) return false;
  const value = await getSignedCookie(c, token, ADMIN_COOKIE);
  if (typeof value !== "string" || !value.startsWith(ADMIN_VALUE_PREFIX)) return false;
  const expiresMs = Number(value.slice(ADMIN_VALUE_PREFIX.length));
  return Number.isInteger(expiresMs) && expiresMs > nowMs && expiresMs <= nowMs + ADMIN_SESSION_MS;
}
