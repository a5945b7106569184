// Sign-in that resists guessing (docs/read-api.md, "Signing in") without costing a valid credential
// (SPEC §3): failed credentials on the read API, /mcp, ingest, the admin API and the dashboard's two
// sign-in forms are counted per client network (not ingest keys) and per key prefix, answered 429
// with Retry-After and the limit at the limit; a right key is never refused for what its network
// did; the right ADMIN_TOKEN is refused only while the admin prefix is under attack; a correct
// credential writes nothing.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { clientNetwork, keyPrefix, NETWORK_RULE, PREFIX_RULE } from "../../src/worker/throttle/credentials.ts";
import { recentFailures, verdictOf } from "../../src/worker/throttle/sign-in-throttle.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { adminHeaders, createKey, createProject, readSessionCookie, revokeKey } from "./helpers/projects.ts";

let nextAddress = 1;
/** A client address no other test uses (TEST-NET-2, 198.51.100.0/24, then onwards). */
const freshAddress = () => `198.51.${100 + Math.floor(nextAddress / 250)}.${nextAddress++ % 250}`;
const WRONG_READ_KEY = "mp_read_" + "x".repeat(32);
const MCP_ACCEPT = { accept: "application/json, text/event-stream" };

function get(path: string, address: string | null, headers: Record<string, string> = {}): Promise<Response> {
  return exports.default.fetch(`http://worker${path}`, { headers: { ...headers, ...(address ? { "cf-connecting-ip": address } : {}) }, redirect: "manual" });
}

function form(path: string, fields: Record<string, string>, address: string, cookie?: string): Promise<Response> {
  return exports.default.fetch(`http://worker${path}`, {
    method: "POST",
    headers: { origin: "http://worker", "cf-connecting-ip": address, ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const counter = (name: string) => env.SIGN_IN_THROTTLE.get(env.SIGN_IN_THROTTLE.idFromName(name));
/** Every admin attempt counts under one prefix: each test starts from an empty window (as a minute later would). */
const emptyAdminPrefix = () => runInDurableObject(counter("prefix:admin"), async (_instance, state) => state.storage.deleteAll());
const storedFailures = (name: string) =>
  runInDurableObject(counter(name), async (_instance, state) => (await state.storage.get<{ failures: number[] }>("failures"))?.failures.length ?? 0);
/** A JSON-RPC ping to /mcp: 200 once the credential (and the Origin) are let in. */
const mcpPing = (address: string, key: string, headers: Record<string, string> = {}) =>
  exports.default.fetch("http://worker/mcp", {
    method: "POST",
    headers: { ...bearer(key), ...MCP_ACCEPT, "content-type": "application/json", "cf-connecting-ip": address, "mcp-protocol-version": "2025-06-18", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
  });

function retryAfter(res: Response): number {
  return Number(res.headers.get("retry-after"));
}

describe("the failure window", () => {
  const rule = { maxFailures: 3, windowMs: 60_000 };

  it("is full at maxFailures, not before, and says until when", () => {
    expect(verdictOf([1_000, 2_000], 10_000, rule)).toEqual({ failures: 2, retryAfterSeconds: null });
    expect(verdictOf([1_000, 2_000, 3_000], 10_000, rule)).toEqual({ failures: 3, retryAfterSeconds: 51 });
    // Sliding: the wait ends when the oldest failure that fills the window leaves it.
    expect(verdictOf([1_000, 2_000, 3_000, 4_000], 10_000, rule)).toEqual({ failures: 4, retryAfterSeconds: 52 });
    expect(verdictOf([1_000, 2_000, 3_000], 60_999, rule).retryAfterSeconds).toBe(1);
  });

  it("forgets failures as they age out of the window", () => {
    expect(recentFailures([1_000, 2_000, 3_000], 61_000, rule)).toEqual([2_000, 3_000]);
    expect(recentFailures([1_000, 2_000, 3_000], 60_999, rule)).toEqual([1_000, 2_000, 3_000]);
    expect(verdictOf(recentFailures([1_000, 2_000, 3_000], 61_000, rule), 61_000, rule).retryAfterSeconds).toBeNull();
  });

  it("keeps the limits short enough that a lock-out ends: 10 per network in 15 min, 20 per prefix in a minute", () => {
    expect(NETWORK_RULE).toEqual({ maxFailures: 10, windowMs: 15 * 60_000 });
    expect(PREFIX_RULE).toEqual({ maxFailures: 20, windowMs: 60_000 });
  });

  it("counts an IPv6 client by its /64, an IPv4 client by its address", () => {
    const net = (ip: string | null) => clientNetwork(new Request("http://worker/", { headers: ip ? { "cf-connecting-ip": ip } : {} }));
    expect(net("2001:db8:1:2::1")).toBe(net("2001:db8:1:2:ffff:ffff:ffff:ffff"));
    expect(net("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(net("2001:db8:1:3::1")).not.toBe(net("2001:db8:1:2::1"));
    expect(net("203.0.113.7")).toBe("203.0.113.7");
    expect(net(null)).toBeNull();
    expect(keyPrefix("mp_read_abcdefgh" + "x".repeat(24))).toBe("mp_read_abcdefgh");
    expect(keyPrefix("nonsense")).toBeNull();
  });
});

describe("read keys on the API and /mcp", () => {
  it("answers 401 to the first 10 wrong keys of a network, 429 naming the network limit from the 11th; the right key still works from that network", async () => {
    const p = await createProject();
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) {
      const res = await get("/v1/metrics/tools", attacker, bearer(`mp_read_${String(i).padStart(8, "0")}${"x".repeat(24)}`));
      expect([i, res.status]).toEqual([i, 401]);
    }
    const over = await get("/v1/metrics/tools", attacker, bearer(WRONG_READ_KEY));
    expect(over.status).toBe(429);
    const body = await over.json<{ error: string; code: string; limit: string }>();
    expect(body).toMatchObject({ code: "TOO_MANY_REQUESTS", limit: "network" });
    expect(body.error).toMatch(/^too many failed sign-in attempts from this network \(10 in 15 minutes\); try again in \d+ minutes?$/);
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect(retryAfter(over)).toBeLessThanOrEqual(NETWORK_RULE.windowMs / 1000);
    expect((await mcpPing(attacker, WRONG_READ_KEY)).status).toBe(429);
    // SPEC §3: the right key is checked first, and nothing other credentials did refuses it.
    expect((await get("/v1/metrics/tools", attacker, bearer(p.read_key))).status).toBe(200);
    expect((await mcpPing(attacker, p.read_key)).status).toBe(200);
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(WRONG_READ_KEY))).status).toBe(401);
  });

  it("counts malformed Authorization headers, not requests without one", async () => {
    const address = freshAddress();
    for (let i = 0; i < 2 * NETWORK_RULE.maxFailures; i++) expect((await get("/v1/metrics/tools", address)).status).toBe(401);
    for (let i = 0; i < NETWORK_RULE.maxFailures; i++) expect((await get("/v1/metrics/tools", address, { authorization: "Basic abc" })).status).toBe(401);
    expect((await get("/v1/metrics/tools", address, { authorization: "Bearer" })).status).toBe(429);
  });

  it("counts failures against one key prefix from many networks: 20 a minute, then 429 naming the prefix limit; the right key is never refused", async () => {
    const p = await createProject();
    const prefix = p.read_key.slice(0, 16);
    for (let i = 1; i <= PREFIX_RULE.maxFailures; i++) {
      expect([i, (await get("/v1/metrics/tools", freshAddress(), bearer(prefix + "y".repeat(24)))).status]).toEqual([i, 401]);
    }
    const over = await get("/v1/metrics/tools", freshAddress(), bearer(prefix + "z".repeat(24)));
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ code: "TOO_MANY_REQUESTS", limit: "key_prefix" });
    expect(retryAfter(over)).toBeLessThanOrEqual(PREFIX_RULE.windowMs / 1000);
    // A read key's 190 random bits are its guard: anyone who knows its key_id must not lock its owner out.
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(p.read_key))).status).toBe(200);
    expect((await form("/signin", { key: p.read_key }, freshAddress())).status).toBe(303);
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(WRONG_READ_KEY))).status).toBe(401);
  });

  it("counts nothing for a request without CF-Connecting-IP (Cloudflare's edge always sets it)", async () => {
    for (let i = 0; i < NETWORK_RULE.maxFailures + 5; i++) expect((await get("/v1/metrics/tools", null, bearer(WRONG_READ_KEY))).status).toBe(401);
  });
});

describe("ingest keys on POST /v1/ingest", () => {
  const ingest = (address: string, key: string, batch: unknown[] = []) =>
    postIngest({ batch }, { key, headers: { "cf-connecting-ip": address } });

  it("a valid key is accepted at once from an address that sent any number of unknown and revoked keys, and every call it sends is counted", async () => {
    const p = await createProject();
    const stale = await createKey(p.project_id, "ingest");
    await revokeKey(stale.key_id);
    const replicas = freshAddress();
    // Many replicas behind one NAT: some with keys that never existed, one with the revoked key.
    for (let i = 0; i < 3 * NETWORK_RULE.maxFailures; i++) {
      expect((await ingest(replicas, `mp_live_${String(i).padStart(8, "0")}${"y".repeat(24)}`, [callPayload()])).status).toBe(401);
    }
    for (let i = 0; i < 15; i++) expect((await ingest(replicas, stale.key, [callPayload()])).status).toBe(401);
    // Ingest failures never count against the network.
    expect(await storedFailures(`network:${replicas}`)).toBe(0);
    const calls = Array.from({ length: 51 }, (_, i) => callPayload({ session_id: `s_nat_${i}`, args_hash: String(i).padStart(12, "0") }));
    expect((await ingest(replicas, p.ingest_key, calls)).status).toBe(202);
    const stored = await env.DB.prepare("SELECT COALESCE(SUM(call_count), 0) AS calls FROM call_batches WHERE project_id = ?1").bind(p.project_id).first<{ calls: number }>();
    expect(stored?.calls).toBe(51);
  });

  it("counts an unknown or revoked key's failures against its own key id: 20 in a minute answer 401, the 21st 429 naming the limit", async () => {
    const p = await createProject();
    const stale = await createKey(p.project_id, "ingest");
    await revokeKey(stale.key_id);
    for (let i = 1; i <= PREFIX_RULE.maxFailures; i++) expect([i, (await ingest(freshAddress(), stale.key)).status]).toEqual([i, 401]);
    const over = await ingest(freshAddress(), stale.key);
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ code: "TOO_MANY_REQUESTS", limit: "key_prefix" });
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect(retryAfter(over)).toBeLessThanOrEqual(PREFIX_RULE.windowMs / 1000);
    // Another key of the same project, from the very address that just failed, is untouched.
    expect((await ingest(freshAddress(), p.ingest_key)).status).toBe(202);
  });
});

describe("ADMIN_TOKEN on the admin API", () => {
  beforeEach(emptyAdminPrefix);

  it("answers a guessing network 429 naming the network limit, and the right token from that network still 200", async () => {
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) expect([i, (await get("/v1/admin/projects", attacker, bearer(`wrong-${i}`))).status]).toEqual([i, 401]);
    const over = await get("/v1/admin/projects", attacker, bearer("wrong-again"));
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ code: "TOO_MANY_REQUESTS", limit: "network" });
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect((await get("/v1/admin/projects", attacker, bearer(env.ADMIN_TOKEN!))).status).toBe(200);
    expect((await get("/v1/admin/projects", freshAddress(), bearer(env.ADMIN_TOKEN!))).status).toBe(200);
  });

  it("refuses every admin attempt, the right token too, while the admin prefix holds 20 failures — not at 19", async () => {
    const guessers = Array.from({ length: PREFIX_RULE.maxFailures }, freshAddress);
    for (const [i, address] of guessers.slice(0, -1).entries()) expect([i, (await get("/v1/admin/projects", address, bearer("guess"))).status]).toEqual([i, 401]);
    // 19 failures: the right token signs in, from anywhere.
    expect((await get("/v1/admin/projects", freshAddress(), bearer(env.ADMIN_TOKEN!))).status).toBe(200);
    expect((await get("/v1/admin/projects", guessers.at(-1)!, bearer("guess"))).status).toBe(401);
    // 20: the window is full; a correct guess would otherwise get through, so nothing does.
    const blocked = await get("/v1/admin/projects", freshAddress(), bearer(env.ADMIN_TOKEN!));
    expect(blocked.status).toBe(429);
    expect(await blocked.json()).toMatchObject({ limit: "key_prefix" });
    expect(retryAfter(blocked)).toBeLessThanOrEqual(PREFIX_RULE.windowMs / 1000);
    expect((await get("/v1/admin/projects", freshAddress(), bearer("guess"))).status).toBe(429);
    // A read key's routes do not share the admin prefix.
    const p = await createProject();
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(p.read_key))).status).toBe(200);
    await emptyAdminPrefix();
  });

  it("a read or ingest key sent to an admin route by mistake is not an admin guess: nothing is counted, nobody is locked out", async () => {
    const p = await createProject();
    const operator = freshAddress();
    for (let i = 0; i < 3 * PREFIX_RULE.maxFailures; i++) {
      const res = await get("/v1/admin/projects", operator, bearer(i % 2 ? p.read_key : p.ingest_key));
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ error: "a project key is not the admin token", code: "UNAUTHORIZED" });
    }
    expect(await storedFailures(`network:${operator}`)).toBe(0);
    expect(await storedFailures("prefix:admin")).toBe(0);
    expect(await storedFailures(`prefix:${p.read_key.slice(0, 16)}`)).toBe(0);
    expect((await get("/v1/metrics/tools", operator, bearer(p.read_key))).status).toBe(200);
    expect((await form("/signin", { key: p.read_key }, operator)).status).toBe(303);
    expect((await mcpPing(operator, p.read_key)).status).toBe(200);
    expect((await form("/admin/signin", { token: p.read_key }, operator)).status).toBe(401);
    expect(await storedFailures("prefix:admin")).toBe(0);
    expect((await get("/v1/admin/projects", operator, bearer(env.ADMIN_TOKEN!))).status).toBe(200);
  });

  it("a correct token writes nothing: the check before it only reads", async () => {
    const address = freshAddress();
    for (let i = 0; i < 5; i++) expect((await get("/v1/admin/projects", address, bearer(env.ADMIN_TOKEN!))).status).toBe(200);
    const stored = await runInDurableObject(counter(`network:${address}`), async (_instance, state) => state.storage.list());
    expect(stored.size).toBe(0);
    expect((await runInDurableObject(counter("prefix:admin"), async (_instance, state) => state.storage.list())).size).toBe(0);
    // A failure is one stored list, with an alarm that forgets it after the window.
    expect((await get("/v1/admin/projects", address, bearer("wrong"))).status).toBe(401);
    const after = await runInDurableObject(counter(`network:${address}`), async (_instance, state) => ({
      failures: ((await state.storage.get<{ failures: number[] }>("failures"))?.failures ?? []).length,
      alarm: await state.storage.getAlarm(),
    }));
    expect(after.failures).toBe(1);
    expect(after.alarm).not.toBeNull();
    expect(await storedFailures("prefix:admin")).toBe(1);
  });

  it("the alarm forgets failures once their window has passed", async () => {
    const address = freshAddress();
    expect((await get("/v1/admin/projects", address, bearer("wrong"))).status).toBe(401);
    const stub = counter(`network:${address}`);
    // Age the stored failure past the window, as the clock would.
    await runInDurableObject(stub, async (_instance, state) => {
      const stored = (await state.storage.get<{ windowMs: number; failures: number[] }>("failures"))!;
      await state.storage.put("failures", { ...stored, failures: stored.failures.map((at) => at - NETWORK_RULE.windowMs - 1) });
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await runInDurableObject(stub, async (_instance, state) => state.storage.list())).size).toBe(0);
    expect((await get("/v1/admin/projects", address, bearer(env.ADMIN_TOKEN!))).status).toBe(200);
  });
});

describe("the dashboard's sign-in forms", () => {
  beforeEach(emptyAdminPrefix);

  it("read key: 401 for 10 wrong keys, then a 429 page naming the network; the right key still signs in from that network", async () => {
    const p = await createProject();
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) {
      const res = await form("/signin", { key: WRONG_READ_KEY }, attacker);
      expect([i, res.status]).toEqual([i, 401]);
    }
    const over = await form("/signin", { key: WRONG_READ_KEY }, attacker);
    expect(over.status).toBe(429);
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect(await over.text()).toMatch(/Too many failed sign-ins from your network\. Try again in \d+ minutes?\./);
    expect(over.headers.get("set-cookie")).toBeNull();
    expect((await get(`/?key=${WRONG_READ_KEY}`, attacker)).status).toBe(429);
    const right = await form("/signin", { key: p.read_key }, attacker);
    expect(right.status).toBe(303);
    expect(right.headers.get("set-cookie")).toContain("mcpulse_session=read.");
    expect((await get(`/?key=${p.read_key}`, attacker)).status).toBe(200);
  });

  it("admin token: the form shares the network's count with the admin API, and the right token still signs in", async () => {
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures - 1; i++) expect((await get("/v1/admin/projects", attacker, bearer("wrong"))).status).toBe(401);
    expect((await form("/admin/signin", { token: "wrong" }, attacker)).status).toBe(401);
    const over = await form("/admin/signin", { token: "wrong" }, attacker);
    expect(over.status).toBe(429);
    expect(await over.text()).toContain("Too many failed sign-ins from your network");
    expect((await form("/admin/signin", { token: env.ADMIN_TOKEN! }, attacker)).status).toBe(303);
  });

  it("a forged session cookie counts as a failure; a real one costs no write", async () => {
    const p = await createProject();
    const cookie = await readSessionCookie(p.read_key);
    const address = freshAddress();
    for (let i = 0; i < 3; i++) expect((await get("/", address, { cookie })).status).toBe(200);
    expect((await runInDurableObject(counter(`network:${address}`), async (_i, state) => state.storage.list())).size).toBe(0);
    const forged = cookie.replace(/\.[^.]*$/, ".AAAA");
    expect((await get("/", address, { cookie: forged })).status).toBe(401);
    expect(await storedFailures(`network:${address}`)).toBe(1);
  });
});

describe("admin routes stay usable for the right token", () => {
  beforeEach(emptyAdminPrefix);

  it("a malformed admin header is counted like a wrong token; the right one still works from that network", async () => {
    const address = freshAddress();
    for (let i = 0; i < NETWORK_RULE.maxFailures; i++) expect((await get("/v1/admin/projects", address, { authorization: "Bearer a b c" })).status).toBe(401);
    expect((await get("/v1/admin/projects", address, { authorization: "Bearer a b c" })).status).toBe(429);
    expect((await exports.default.fetch("http://worker/v1/admin/projects", { headers: { ...adminHeaders(), "cf-connecting-ip": address } })).status).toBe(200);
  });
});

describe("/mcp and Origin (SPEC §9, DNS rebinding)", () => {
  it("answers 403 to a foreign Origin with any credential, before the credential is checked; no Origin or the worker's own passes", async () => {
    const p = await createProject();
    const address = freshAddress();
    for (const origin of ["http://evil.example.com", "null", "http://worker.evil.example", "https://worker", "http://worker:8080", "garbage"]) {
      const res = await mcpPing(address, p.read_key, { origin });
      expect([origin, res.status]).toEqual([origin, 403]);
      expect(await res.json()).toMatchObject({ code: "FORBIDDEN" });
      expect((await mcpPing(address, WRONG_READ_KEY, { origin })).status).toBe(403);
    }
    // A refused Origin is no guess: nothing was counted.
    expect(await storedFailures(`network:${address}`)).toBe(0);
    expect((await mcpPing(address, p.read_key)).status).toBe(200);
    expect((await mcpPing(address, p.read_key, { origin: "http://worker" })).status).toBe(200);
    expect((await mcpPing(address, p.read_key, { origin: "HTTP://WORKER:80" })).status).toBe(200);
  });

  it("lets the origins of MCP_ALLOWED_ORIGINS in, and only them", async () => {
    const { mcpOriginAllowed } = await import("../../src/worker/routes/mcp.ts");
    const req = (origin: string | null) => new Request("https://mcpulse.example/mcp", { headers: origin ? { origin } : {} });
    const list = " https://inspector.example , http://127.0.0.1:6274,not a url";
    expect(mcpOriginAllowed(req("https://inspector.example"), { allowedOrigins: list })).toBe(true);
    expect(mcpOriginAllowed(req("https://inspector.example:443"), { allowedOrigins: list })).toBe(true);
    expect(mcpOriginAllowed(req("http://127.0.0.1:6274"), { allowedOrigins: list })).toBe(true);
    expect(mcpOriginAllowed(req("http://127.0.0.1:6275"), { allowedOrigins: list })).toBe(false);
    expect(mcpOriginAllowed(req("https://inspector.example.evil"), { allowedOrigins: list })).toBe(false);
    expect(mcpOriginAllowed(req("https://mcpulse.example"), {})).toBe(true);
    expect(mcpOriginAllowed(req(null), {})).toBe(true);
    expect(mcpOriginAllowed(req("not a url"), { allowedOrigins: list })).toBe(false);
    // A worker on a loopback host (npm run dev) takes any loopback page; a public one does not.
    const local = (origin: string) => new Request("http://127.0.0.1:8787/mcp", { headers: { origin } });
    expect(mcpOriginAllowed(local("http://localhost:6274"), {})).toBe(true);
    expect(mcpOriginAllowed(local("http://[::1]:3000"), {})).toBe(true);
    expect(mcpOriginAllowed(local("http://127.0.0.1.evil.example"), {})).toBe(false);
    expect(mcpOriginAllowed(local("http://evil.example"), {})).toBe(false);
    expect(mcpOriginAllowed(req("http://localhost:6274"), {})).toBe(false);
    // Locally, a request addressed to another name is a rebinding page, with or without an Origin.
    const rebound = (origin: string | null) => new Request("http://evil.example:8787/mcp", { headers: origin ? { origin } : {} });
    expect(mcpOriginAllowed(rebound("http://evil.example:8787"), { local: true })).toBe(false);
    expect(mcpOriginAllowed(rebound(null), { local: true })).toBe(false);
    expect(mcpOriginAllowed(local("http://localhost:8787"), { local: true })).toBe(true);
    expect(mcpOriginAllowed(new Request("http://localhost:8787/mcp"), { local: true })).toBe(true);
    // Deployed, the host is the one Cloudflare routed by.
    expect(mcpOriginAllowed(rebound("http://evil.example:8787"), {})).toBe(true);
  });
});
