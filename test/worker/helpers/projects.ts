// Test helpers: create projects and keys through the real admin routes (SPEC §3), so every test
// gets its own project and never sees another test's rows.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";

export type TestProject = { project_id: string; name: string; database: string; ingest_key: string; read_key: string };

/** Headers of an admin request (vitest.config.ts sets ADMIN_TOKEN for the worker tests). */
export function adminHeaders(): Record<string, string> {
  return { authorization: `Bearer ${env.ADMIN_TOKEN}`, "content-type": "application/json" };
}

/**
 * A new project with one ingest key and one read key, in the database `database` (SPEC §7). The
 * default is the first database, which the tests read as env.DB; tests of the other database and
 * of placement name theirs.
 */
export async function createProject(name = "test project", database = "DB"): Promise<TestProject> {
  const res = await exports.default.fetch("http://worker/v1/admin/projects", {
    method: "POST",
    headers: adminHeaders(),
    body: JSON.stringify({ name, database }),
  });
  if (res.status !== 201) throw new Error(`createProject: HTTP ${res.status}`);
  return res.json<TestProject>();
}

/** A further key of `kind` for an existing project. */
export async function createKey(projectId: string, kind: "ingest" | "read"): Promise<{ key: string; key_id: string }> {
  const res = await exports.default.fetch(`http://worker/v1/admin/projects/${projectId}/keys`, {
    method: "POST",
    headers: adminHeaders(),
    body: JSON.stringify({ kind }),
  });
  if (res.status !== 201) throw new Error(`createKey: HTTP ${res.status}`);
  return res.json<{ key: string; key_id: string }>();
}

/** Revokes a key by its key_id (its first 16 characters). */
export async function revokeKey(keyId: string): Promise<void> {
  const res = await exports.default.fetch(`http://worker/v1/admin/keys/${keyId}`, {
    method: "DELETE",
    headers: adminHeaders(),
  });
  if (res.status !== 204) throw new Error(`revokeKey: HTTP ${res.status}`);
}

/** Sets a project's per-key payload budget (payloads per minute). */
export async function setPayloadBudget(projectId: string, payloadsPerMinute: number): Promise<void> {
  const res = await exports.default.fetch(`http://worker/v1/admin/projects/${projectId}`, {
    method: "PATCH",
    headers: adminHeaders(),
    body: JSON.stringify({ payload_budget_per_minute: payloadsPerMinute }),
  });
  if (res.status !== 200) throw new Error(`setPayloadBudget: HTTP ${res.status}`);
}

/**
 * The `name=value` of a read session cookie for `readKey`, as the dashboard's sign-in form sets it
 * (the cookie holds a session id, never the key). Memoised per key: a test file signs in once.
 */
const sessionCookies = new Map<string, Promise<string>>();
export function readSessionCookie(readKey: string): Promise<string> {
  let cookie = sessionCookies.get(readKey);
  if (!cookie) {
    cookie = (async () => {
      const res = await exports.default.fetch("http://worker/signin", {
        method: "POST",
        headers: { origin: "http://worker", "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ key: readKey }),
        redirect: "manual",
      });
      const set = res.headers.getSetCookie().find((c) => c.startsWith("mcpulse_session="));
      if (res.status !== 303 || !set) throw new Error(`readSessionCookie: HTTP ${res.status}`);
      return set.split(";")[0]!;
    })();
    sessionCookies.set(readKey, cookie);
  }
  return cookie;
}
