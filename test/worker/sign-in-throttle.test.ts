// Sign-in that resists guessing (docs/read-api.md, "Signing in"): failed credentials on the read API,
// /mcp, the admin API and the dashboard's two sign-in forms are counted per client network and per
// key prefix, answered 429 with Retry-After at the limit, never lock the right credential out for
// other networks, and a correct credential writes nothing.
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { clientNetwork, keyPrefix, NETWORK_RULE, PREFIX_RULE } from "../../src/worker/throttle/credentials.ts";
import { recentFailures, verdictOf } from "../../src/worker/throttle/sign-in-throttle.ts";
import { adminHeaders, createProject, readSessionCookie } from "./helpers/projects.ts";

let nextAddress = 1;
/** A client address no other test uses (TEST-NET-2, 198.51.100.0/24, then onwards). */
const freshAddress = () => `198.51.${100 + Math.floor(nextAddress / 250)}.${nextAddress++ % 250}`;
const WRONG_READ_KEY = "mp_read_" + "x".repeat(32);

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
  it("answers 401 to the first 10 wrong keys of a network, 429 with Retry-After from the 11th", async () => {
    const p = await createProject();
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) {
      const res = await get("/v1/metrics/tools", attacker, bearer(`mp_read_${String(i).padStart(8, "0")}${"x".repeat(24)}`));
      expect([i, res.status]).toEqual([i, 401]);
    }
    const over = await get("/v1/metrics/tools", attacker, bearer(WRONG_READ_KEY));
    expect(over.status).toBe(429);
    expect(await over.json()).toEqual({ error: "too many failed sign-in attempts; try again later", code: "TOO_MANY_REQUESTS" });
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect(retryAfter(over)).toBeLessThanOrEqual(NETWORK_RULE.windowMs / 1000);
    expect((await get("/mcp", attacker, { ...bearer(WRONG_READ_KEY), accept: "application/json, text/event-stream" })).status).toBe(429);
    // Another network is not affected, and neither is the right key from it.
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(p.read_key))).status).toBe(200);
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(WRONG_READ_KEY))).status).toBe(401);
  });

  it("counts malformed Authorization headers, not requests without one", async () => {
    const address = freshAddress();
    for (let i = 0; i < 2 * NETWORK_RULE.maxFailures; i++) expect((await get("/v1/metrics/tools", address)).status).toBe(401);
    for (let i = 0; i < NETWORK_RULE.maxFailures; i++) expect((await get("/v1/metrics/tools", address, { authorization: "Basic abc" })).status).toBe(401);
    expect((await get("/v1/metrics/tools", address, { authorization: "Bearer" })).status).toBe(429);
  });

  it("counts failures against one key prefix from many networks: 20 a minute, then 429 for that prefix only", async () => {
    const p = await createProject();
    const prefix = p.read_key.slice(0, 16);
    for (let i = 1; i <= PREFIX_RULE.maxFailures; i++) {
      expect([i, (await get("/v1/metrics/tools", freshAddress(), bearer(prefix + "y".repeat(24)))).status]).toEqual([i, 401]);
    }
    const over = await get("/v1/metrics/tools", freshAddress(), bearer(prefix + "z".repeat(24)));
    expect(over.status).toBe(429);
    expect(retryAfter(over)).toBeLessThanOrEqual(PREFIX_RULE.windowMs / 1000);
    // The right key still works, from any network; a wrong key of another prefix is a plain 401.
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(p.read_key))).status).toBe(200);
    expect((await get("/v1/metrics/tools", freshAddress(), bearer(WRONG_READ_KEY))).status).toBe(401);
  });

  it("counts nothing for a request without CF-Connecting-IP (Cloudflare's edge always sets it)", async () => {
    for (let i = 0; i < NETWORK_RULE.maxFailures + 5; i++) expect((await get("/v1/metrics/tools", null, bearer(WRONG_READ_KEY))).status).toBe(401);
  });
});

describe("ingest keys on POST /v1/ingest", () => {
  const ingest = (address: string, key: string) =>
    exports.default.fetch("http://worker/v1/ingest", {
      method: "POST",
      headers: { ...bearer(key), "content-type": "application/json", "cf-connecting-ip": address },
      body: '{"batch":[]}',
    });

  it("answers 401 to the first 10 wrong ingest keys of a network, 429 from the 11th; the right key from another network still gets 202", async () => {
    const p = await createProject();
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) {
      const res = await ingest(attacker, `mp_live_${String(i).padStart(8, "0")}${"y".repeat(24)}`);
      expect([i, res.status]).toEqual([i, 401]);
    }
    const over = await ingest(attacker, "mp_live_" + "z".repeat(32));
    expect(over.status).toBe(429);
    expect(await over.json()).toMatchObject({ code: "TOO_MANY_REQUESTS" });
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect((await ingest(freshAddress(), p.ingest_key)).status).toBe(202);
  });
});

describe("ADMIN_TOKEN on the admin API", () => {
  beforeEach(emptyAdminPrefix);

  it("blocks a guessing network, even for the right token, and never another network", async () => {
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) expect([i, (await get("/v1/admin/projects", attacker, bearer(`wrong-${i}`))).status]).toEqual([i, 401]);
    const over = await get("/v1/admin/projects", attacker, bearer("wrong-again"));
    expect(over.status).toBe(429);
    expect(retryAfter(over)).toBeGreaterThan(0);
    // Checked before the token is compared: from a blocked network the right token does not help.
    expect((await get("/v1/admin/projects", attacker, bearer(env.ADMIN_TOKEN!))).status).toBe(429);
    expect((await get("/v1/admin/projects", freshAddress(), bearer(env.ADMIN_TOKEN!))).status).toBe(200);
  });

  it("asks the network's counter before the token, not only this isolate's memory (another isolate may have seen the guesses)", async () => {
    const address = freshAddress();
    const stub = counter(`network:${address}`);
    for (let i = 0; i < NETWORK_RULE.maxFailures; i++) await stub.fail(Date.now(), NETWORK_RULE);
    // A read key on the API asks only the isolate's memory, which has seen nothing of this network:
    // the key's 190 random bits are its guard (docs/read-api.md).
    const p = await createProject();
    expect((await get("/v1/metrics/tools", address, bearer(p.read_key))).status).toBe(200);
    expect((await get("/v1/admin/projects", address, bearer(env.ADMIN_TOKEN!))).status).toBe(429);
    expect((await form("/admin/signin", { token: env.ADMIN_TOKEN! }, address)).status).toBe(429);
    // From then on this isolate remembers the network as blocked.
    expect((await get("/v1/metrics/tools", address, bearer(p.read_key))).status).toBe(429);
  });

  it("a prefix under attack blocks only networks that failed themselves: a clean network still signs in", async () => {
    // The admin prefix is shared by every admin attempt: fill its window from 20 networks, one guess each.
    const guessers = Array.from({ length: PREFIX_RULE.maxFailures }, freshAddress);
    const statuses = [];
    for (const address of guessers) statuses.push((await get("/v1/admin/projects", address, bearer("guess"))).status);
    expect(statuses).toEqual(Array(PREFIX_RULE.maxFailures).fill(401));
    const newcomer = freshAddress();
    expect((await get("/v1/admin/projects", newcomer, bearer("guess"))).status).toBe(429);
    // A network with a failure on record waits for the prefix window (at most a minute)...
    const blocked = await get("/v1/admin/projects", guessers[0]!, bearer(env.ADMIN_TOKEN!));
    expect(blocked.status).toBe(429);
    expect(retryAfter(blocked)).toBeLessThanOrEqual(PREFIX_RULE.windowMs / 1000);
    // ...a clean one is let through to the check.
    expect((await get("/v1/admin/projects", freshAddress(), bearer(env.ADMIN_TOKEN!))).status).toBe(200);
  });

  it("a correct token writes nothing: the check before it only reads", async () => {
    const address = freshAddress();
    for (let i = 0; i < 5; i++) expect((await get("/v1/admin/projects", address, bearer(env.ADMIN_TOKEN!))).status).toBe(200);
    const stored = await runInDurableObject(counter(`network:${address}`), async (_instance, state) => state.storage.list());
    expect(stored.size).toBe(0);
    // A failure is one stored list, with an alarm that forgets it after the window.
    expect((await get("/v1/admin/projects", address, bearer("wrong"))).status).toBe(401);
    const after = await runInDurableObject(counter(`network:${address}`), async (_instance, state) => ({
      failures: ((await state.storage.get<{ failures: number[] }>("failures"))?.failures ?? []).length,
      alarm: await state.storage.getAlarm(),
    }));
    expect(after.failures).toBe(1);
    expect(after.alarm).not.toBeNull();
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

  it("read key: 401 for 10 wrong keys, then a 429 page with Retry-After; the right key still works from another network", async () => {
    const p = await createProject();
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures; i++) {
      const res = await form("/signin", { key: WRONG_READ_KEY }, attacker);
      expect([i, res.status]).toEqual([i, 401]);
    }
    const over = await form("/signin", { key: WRONG_READ_KEY }, attacker);
    expect(over.status).toBe(429);
    expect(retryAfter(over)).toBeGreaterThan(0);
    expect(await over.text()).toContain("Too many failed sign-ins from your network. Try again in");
    expect(over.headers.get("set-cookie")).toBeNull();
    const right = await form("/signin", { key: p.read_key }, attacker);
    expect(right.status).toBe(429);
    expect(right.headers.get("set-cookie")).toBeNull();
    // The ?key= link's confirmation step checks the key too: throttled the same way.
    expect((await get(`/?key=${p.read_key}`, attacker)).status).toBe(429);
    expect((await form("/signin", { key: p.read_key }, freshAddress())).status).toBe(303);
    expect((await get(`/?key=${p.read_key}`, freshAddress())).status).toBe(200);
  });

  it("admin token: the form shares the network's count with the admin API", async () => {
    const attacker = freshAddress();
    for (let i = 1; i <= NETWORK_RULE.maxFailures - 1; i++) expect((await get("/v1/admin/projects", attacker, bearer("wrong"))).status).toBe(401);
    expect((await form("/admin/signin", { token: "wrong" }, attacker)).status).toBe(401);
    const over = await form("/admin/signin", { token: env.ADMIN_TOKEN! }, attacker);
    expect(over.status).toBe(429);
    expect(await over.text()).toContain("Too many failed sign-ins");
    expect((await form("/admin/signin", { token: env.ADMIN_TOKEN! }, freshAddress())).status).toBe(303);
  });

  it("a forged session cookie counts as a failure; a real one costs no write", async () => {
    const p = await createProject();
    const cookie = await readSessionCookie(p.read_key);
    const address = freshAddress();
    for (let i = 0; i < 3; i++) expect((await get("/", address, { cookie })).status).toBe(200);
    expect((await runInDurableObject(counter(`network:${address}`), async (_i, state) => state.storage.list())).size).toBe(0);
    const forged = cookie.replace(/\.[^.]*$/, ".AAAA");
    expect((await get("/", address, { cookie: forged })).status).toBe(401);
    const failures = await runInDurableObject(counter(`network:${address}`), async (_i, state) => (await state.storage.get<{ failures: number[] }>("failures"))?.failures.length);
    expect(failures).toBe(1);
  });
});

describe("admin routes stay usable for the right token", () => {
  beforeEach(emptyAdminPrefix);

  it("a malformed admin header is counted like a wrong token", async () => {
    const address = freshAddress();
    for (let i = 0; i < NETWORK_RULE.maxFailures; i++) expect((await get("/v1/admin/projects", address, { authorization: "Bearer a b c" })).status).toBe(401);
    expect((await exports.default.fetch("http://worker/v1/admin/projects", { headers: { ...adminHeaders(), "cf-connecting-ip": address } })).status).toBe(429);
  });
});
