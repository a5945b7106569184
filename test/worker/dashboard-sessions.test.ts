// Dashboard sessions the server can end (migration 0017, routes/dashboard-cookies.ts): a sign-in
// stores a session row and a cookie holding its signed id (never the key); sign-out, the key's
// revocation and the project's deletion end it on the server, so a saved copy of the cookie is
// worth nothing afterwards; expired rows are swept at the next sign-in.
import { createExecutionContext, env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { READ_SESSION_MS } from "../../src/worker/routes/dashboard-cookies.ts";
import worker from "../../src/worker/index.ts";
import { adminHeaders, createKey, createProject, revokeKey } from "./helpers/projects.ts";

async function signIn(key: string): Promise<string> {
  const res = await exports.default.fetch("http://worker/signin", {
    method: "POST",
    headers: { origin: "http://worker" },
    body: new URLSearchParams({ key }),
    redirect: "manual",
  });
  expect(res.status).toBe(303);
  const set = res.headers.getSetCookie().find((c) => c.startsWith("mcpulse_session="))!;
  expect(set).toContain(`Max-Age=${READ_SESSION_MS / 1000}`);
  expect(decodeURIComponent(set)).not.toContain(key);
  return set.split(";")[0]!;
}

const page = (cookie: string) => exports.default.fetch("http://worker/", { headers: { cookie }, redirect: "manual" });
const rowsOfKey = async (keyId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM dashboard_sessions WHERE key_id = ?1").bind(keyId).first<{ n: number }>())!.n;

describe("read sessions", () => {
  it("stores only the SHA-256 of the session id, beside the key it signed in with", async () => {
    const p = await createProject();
    const cookie = await signIn(p.read_key);
    const id = /^mcpulse_session=read\.([0-9A-Za-z]{32})\./.exec(decodeURIComponent(cookie))![1]!;
    const rows = (await env.DB.prepare("SELECT * FROM dashboard_sessions WHERE project_id = ?1").bind(p.project_id).all()).results;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ kind: "read", key_id: p.read_key.slice(0, 16), project_id: p.project_id });
    expect(JSON.stringify(rows)).not.toContain(id);
    expect(JSON.stringify(rows)).not.toContain(p.read_key);
  });

  it("sign-out ends the session on the server: a saved copy of the cookie signs nobody in", async () => {
    const p = await createProject();
    const cookie = await signIn(p.read_key);
    expect((await page(cookie)).status).toBe(200);
    const out = await exports.default.fetch("http://worker/signout", { method: "POST", headers: { origin: "http://worker", cookie }, redirect: "manual" });
    expect(out.status).toBe(303);
    expect(await rowsOfKey(p.read_key.slice(0, 16))).toBe(0);
    const again = await page(cookie);
    expect(again.status).toBe(401);
    expect(await again.text()).toContain("Your session has ended");
    // Other sessions of the same key (another browser) are not this one: they stay.
    const second = await signIn(p.read_key);
    const third = await signIn(p.read_key);
    await exports.default.fetch("http://worker/signout", { method: "POST", headers: { origin: "http://worker", cookie: second }, redirect: "manual" });
    expect((await page(third)).status).toBe(200);
  });

  it("revoking the key ends its sessions (and only its own)", async () => {
    const p = await createProject();
    const extra = await createKey(p.project_id, "read");
    const ofExtra = await signIn(extra.key);
    const ofMain = await signIn(p.read_key);
    expect(await rowsOfKey(extra.key_id)).toBe(1);
    await revokeKey(extra.key_id);
    expect(await rowsOfKey(extra.key_id)).toBe(0);
    expect((await page(ofExtra)).status).toBe(401);
    expect((await page(ofMain)).status).toBe(200);
  });

  it("a session whose key was revoked directly in D1 is refused too: the check joins the key", async () => {
    const p = await createProject();
    const cookie = await signIn(p.read_key);
    await env.DB.prepare("UPDATE api_keys SET revoked_at_ms = 1 WHERE key_id = ?1").bind(p.read_key.slice(0, 16)).run();
    expect((await page(cookie)).status).toBe(401);
  });

  it("deleting the project deletes its sessions", async () => {
    const p = await createProject();
    const cookie = await signIn(p.read_key);
    const res = await exports.default.fetch(`http://worker/v1/admin/projects/${p.project_id}`, { method: "DELETE", headers: adminHeaders() });
    expect(res.status).toBe(204);
    expect(await rowsOfKey(p.read_key.slice(0, 16))).toBe(0);
    expect((await page(cookie)).status).toBe(401);
  });

  it("an expired session is refused, and swept at the next sign-in", async () => {
    const p = await createProject();
    const cookie = await signIn(p.read_key);
    await env.DB.prepare("UPDATE dashboard_sessions SET expires_at_ms = ?2 WHERE key_id = ?1").bind(p.read_key.slice(0, 16), Date.now() - 1).run();
    expect((await page(cookie)).status).toBe(401);
    expect(await rowsOfKey(p.read_key.slice(0, 16))).toBe(1);
    await signIn(p.read_key);
    expect(await rowsOfKey(p.read_key.slice(0, 16))).toBe(1); // the new one only
  });

  it("without ADMIN_TOKEN, which signs sessions, sign-in says so and stores nothing", async () => {
    const p = await createProject();
    const { ADMIN_TOKEN: _unused, ...withoutToken } = env;
    const req = new Request("http://worker/signin", { method: "POST", headers: { origin: "http://worker" }, body: new URLSearchParams({ key: p.read_key }) });
    const res = await worker.fetch(req as never, withoutToken as never, createExecutionContext());
    expect(res.status).toBe(503);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.text()).toContain("no ADMIN_TOKEN set");
    expect(await rowsOfKey(p.read_key.slice(0, 16))).toBe(0);
  });

  it("the old cookie, which held the key itself, is no session", async () => {
    const p = await createProject();
    const res = await exports.default.fetch("http://worker/", { headers: { cookie: `mcpulse_read_key=${p.read_key}` }, redirect: "manual" });
    expect(res.status).toBe(401);
    const forged = await exports.default.fetch("http://worker/", { headers: { cookie: `mcpulse_session=${p.read_key}` }, redirect: "manual" });
    expect(forged.status).toBe(401);
  });
});
