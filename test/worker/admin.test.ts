// Admin routes and the key model (SPEC §3), through the real worker.
import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { authenticateKey, generateKey, randomBase62, requireKey, sha256Hex, } from "../../src/worker/auth.ts";
import type { AuthVariables } from "../../src/worker/env.ts";
import type { Env } from "../../src/worker/env.ts";
import { adminHeaders, createKey, createProject, revokeKey } from "./helpers/projects.ts";

const admin = (path: string, init: RequestInit = {}) =>
  exports.default.fetch(`http://worker/v1/admin${path}`, { ...init, headers: { ...adminHeaders(), ...(init.headers ?? {}) } });

// A tiny read-side app, as the metrics routes use the middleware.
const readApp = new Hono<{ Bindings: Env; Variables: AuthVariables }>();
readApp.use("*", requireKey("read"));
readApp.get("/whoami", (c) => c.json({ project_id: c.var.projectId }));
readApp.onError((err, c) => c.json({ error: err.message }, (err as { status?: 401 }).status ?? 500));
const whoami = (key: string) =>
  readApp.request("/whoami", { headers: { authorization: `Bearer ${key}` } }, env);

describe("keys", () => {
  it("generates mp_live_/mp_read_ keys of 32 base62 characters", () => {
    const keys = [generateKey("ingest"), generateKey("read")];
    expect(keys[0]).toMatch(/^mp_live_[0-9A-Za-z]{32}$/);
    expect(keys[1]).toMatch(/^mp_read_[0-9A-Za-z]{32}$/);
    expect(new Set(Array.from({ length: 200 }, () => generateKey("ingest"))).size).toBe(200);
  });

  it("draws base62 characters without a visible bias", () => {
    // 62,000 draws: each character expected 1,000 times. With modulo bias ("byte % 62"), the first
    // 8 characters would come up 5/4 as often (~1,250).
    const counts = new Map<string, number>();
    for (const ch of randomBase62(62_000)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
    for (const n of counts.values()) expect(n).toBeGreaterThan(850), expect(n).toBeLessThan(1150);
  });

  it("refuses a key whose key_id is known but whose secret differs (the digest comparison)", async () => {
    const p = await createProject();
    // Same key_id (first 16 characters), one different character in the secret part.
    const last = p.read_key.at(-1) === "A" ? "B" : "A";
    const forged = p.read_key.slice(0, -1) + last;
    expect(forged.slice(0, 16)).toBe(p.read_key.slice(0, 16));
    expect(await authenticateKey(env.DB, forged, "read")).toBeNull();
    expect(await authenticateKey(env.DB, p.read_key, "read")).toEqual(expect.objectContaining({ project_id: p.project_id }));
  });
});

describe("admin routes", () => {
  it("creates a project with one ingest and one read key, stored only as SHA-256", async () => {
    const res = await admin("/projects", { method: "POST", body: JSON.stringify({ name: "  shop  " }) });
    expect(res.status).toBe(201);
    const body = await res.json<Record<string, string>>();
    expect(Object.keys(body).sort()).toEqual(["database", "ingest_key", "name", "project_id", "read_key"]);
    expect(["DB", "DB_2"]).toContain(body.database);
    expect(body.name).toBe("shop");
    const rows = await env.DB.prepare("SELECT * FROM api_keys WHERE project_id = ?1 ORDER BY kind")
      .bind(body.project_id)
      .all<Record<string, unknown>>();
    expect(rows.results.map((r) => r.kind)).toEqual(["ingest", "read"]);
    const stored = JSON.stringify(rows.results);
    expect(stored).not.toContain(body.ingest_key);
    expect(stored).not.toContain(body.read_key);
    expect(rows.results[0]?.key_sha256).toBe(await sha256Hex(body.ingest_key!));
    expect(rows.results[0]?.key_id).toBe(body.ingest_key!.slice(0, 16));
    const project = await env.DB.prepare("SELECT payload_budget_per_minute FROM projects WHERE project_id = ?1")
      .bind(body.project_id)
      .first<{ payload_budget_per_minute: number }>();
    expect(project?.payload_budget_per_minute).toBe(10_000);
  });

  it("answers 401 without, with a malformed, or with a wrong admin token", async () => {
    const body = JSON.stringify({ name: "x" });
    for (const authorization of [undefined, "Basic abc", "Bearer", "Bearer wrong-token", `Bearer ${env.ADMIN_TOKEN}x`]) {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (authorization) headers.authorization = authorization;
      const res = await exports.default.fetch("http://worker/v1/admin/projects", { method: "POST", headers, body });
      expect(res.status, String(authorization)).toBe(401);
      expect(await res.json()).toEqual({ error: "admin token required", code: "UNAUTHORIZED", request_id: res.headers.get("x-request-id") });
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="mcpulse-admin"');
    }
  });

  it("is disabled when no ADMIN_TOKEN is configured", async () => {
    const worker = (await import("../../src/worker/index.ts")).default;
    const ctx = { waitUntil() {}, passThroughOnException() {}, props: {} } as never;
    for (const [adminToken, sent] of [[undefined, "undefined"], ["", "x"], [undefined, "null"]] as const) {
      const request = new Request("http://worker/v1/admin/projects", {
        method: "POST",
        headers: { authorization: `Bearer ${sent}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "x" }),
      });
      const res = await worker.fetch!(request as never, { ...env, ADMIN_TOKEN: adminToken }, ctx);
      expect(res.status).toBe(401);
    }
  });

  it("rejects invalid bodies with 400 without echoing them", async () => {
    for (const body of ["not json", "{}", JSON.stringify({ name: "" }), JSON.stringify({ name: "x".repeat(201) }), JSON.stringify({ name: 5 })]) {
      const res = await admin("/projects", { method: "POST", body });
      expect(res.status).toBe(400);
      expect(await res.text()).not.toContain("xxxxx");
    }
    expect((await admin("/projects", { method: "POST", body: JSON.stringify({ name: "x".repeat(200) }) })).status).toBe(201);
  });

  it("issues further keys, 404 for an unknown project, 400 for an unknown kind", async () => {
    const p = await createProject();
    const res = await admin(`/projects/${p.project_id}/keys`, { method: "POST", body: JSON.stringify({ kind: "read" }) });
    expect(res.status).toBe(201);
    const { key, key_id } = await res.json<{ key: string; key_id: string }>();
    expect(key).toMatch(/^mp_read_/);
    expect(key_id).toBe(key.slice(0, 16));
    expect((await whoami(key)).status).toBe(200);
    expect((await admin(`/projects/prj_nope/keys`, { method: "POST", body: JSON.stringify({ kind: "read" }) })).status).toBe(404);
    expect((await admin(`/projects/${p.project_id}/keys`, { method: "POST", body: JSON.stringify({ kind: "admin" }) })).status).toBe(400);
  });

  it("sets a project's payload budget; 400 outside 1..1e8; 404 for an unknown project", async () => {
    const p = await createProject();
    const set = (value: unknown, id = p.project_id) =>
      admin(`/projects/${id}`, { method: "PATCH", body: JSON.stringify({ payload_budget_per_minute: value }) });
    const ok = await set(25);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ project_id: p.project_id, name: "test project", payload_budget_per_minute: 25 });
    for (const bad of [0, -1, 1.5, "10", 100_000_001]) expect((await set(bad)).status).toBe(400);
    expect((await set(1)).status).toBe(200);
    expect((await set(100_000_000)).status).toBe(200);
    expect((await set(10, "prj_missing")).status).toBe(404);
  });

  it("revokes a key: 204, then 401 for that key only; 404 for an unknown key_id", async () => {
    const p = await createProject();
    const second = await createKey(p.project_id, "read");
    expect((await whoami(p.read_key)).status).toBe(200);
    await revokeKey(p.read_key.slice(0, 16));
    expect((await whoami(p.read_key)).status).toBe(401);
    expect(await authenticateKey(env.DB, p.read_key, "read")).toBeNull();
    expect((await whoami(second.key)).status).toBe(200);
    // Revoking twice is harmless.
    expect((await admin(`/keys/${p.read_key.slice(0, 16)}`, { method: "DELETE" })).status).toBe(204);
    expect((await admin(`/keys/mp_read_00000000`, { method: "DELETE" })).status).toBe(404);
  });
});

describe("key kinds and projects", () => {
  it("an ingest key cannot read; a read key authenticates to its own project only", async () => {
    const a = await createProject("a");
    const b = await createProject("b");
    expect((await whoami(a.ingest_key)).status).toBe(401);
    expect(await authenticateKey(env.DB, a.ingest_key, "read")).toBeNull();
    expect(await authenticateKey(env.DB, a.read_key, "ingest")).toBeNull();
    expect(await (await whoami(a.read_key)).json()).toEqual({ project_id: a.project_id });
    expect(await (await whoami(b.read_key)).json()).toEqual({ project_id: b.project_id });
    expect((await authenticateKey(env.DB, a.ingest_key, "ingest"))?.project_id).toBe(a.project_id);
  });

  it("rejects a key whose secret differs but whose key_id matches", async () => {
    const a = await createProject();
    const forged = a.read_key.slice(0, 16) + "0".repeat(24);
    expect(forged).toHaveLength(a.read_key.length);
    expect(await authenticateKey(env.DB, forged, "read")).toBeNull();
    expect((await whoami(forged)).status).toBe(401);
    expect((await whoami(a.read_key + "x")).status).toBe(401);
    expect((await readApp.request("/whoami", {}, env)).status).toBe(401);
  });
});
