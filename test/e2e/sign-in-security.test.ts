// Sign-in against guessing and saved cookies, on the real worker in Miniflare (a real HTTP socket:
// Miniflare sets CF-Connecting-IP from it, as Cloudflare's edge does; a client may set the header
// itself only locally, which stands in here for a second network).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProject, readSessionCookie, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;

beforeAll(async () => {
  worker = await startWorker();
});

afterAll(async () => {
  await worker?.stop();
});

const bearer = (token: string, network?: string) => ({ authorization: `Bearer ${token}`, ...(network ? { "cf-connecting-ip": network } : {}) });

describe("cookies worth nothing after sign-out", () => {
  it("a saved admin cookie no longer manages rules after 'Sign out as admin'; a saved read cookie shows nothing after 'Sign out'", async () => {
    const network = "192.0.2.20";
    const project = await createProject(worker, "signed out");
    const read = await readSessionCookie(worker, project.read_key);
    const post = (path: string, fields: Record<string, string>, cookies: string[]) =>
      fetch(`${worker.url}${path}`, {
        method: "POST",
        headers: { origin: worker.url, cookie: cookies.join("; "), "cf-connecting-ip": network },
        body: new URLSearchParams(fields),
        redirect: "manual",
      });
    const signIn = await post("/admin/signin", { token: worker.adminToken }, [read]);
    expect(signIn.status).toBe(303);
    const admin = signIn.headers.getSetCookie().find((c) => c.startsWith("mcpulse_admin="))!.split(";")[0]!;
    const rule = { metric: "calls", op: "<", threshold: "5" };
    expect((await post("/alerts/rules", rule, [read, admin])).status).toBe(303);
    expect((await post("/admin/signout", {}, [read, admin])).status).toBe(303);
    expect((await post("/alerts/rules", rule, [read, admin])).status).toBe(403);
    expect((await post("/signout", {}, [read])).status).toBe(303);
    const after = await fetch(`${worker.url}/`, { headers: { cookie: read, "cf-connecting-ip": network }, redirect: "manual" });
    expect(after.status).toBe(401);
    const rules = await fetch(`${worker.url}/v1/admin/projects/${project.project_id}/alert-rules`, { headers: bearer(worker.adminToken, network) });
    expect(((await rules.json()) as { rules: unknown[] }).rules).toHaveLength(1);
  });
});

// Last: it leaves the socket's own network blocked for failures, and the admin prefix full.
describe("guessing over a real socket", () => {
  it("slows wrong admin tokens and read keys to 10 per network and 20 a minute per prefix, then 429 naming the limit; a right read key still works from the guessing network", async () => {
    const project = await createProject(worker, "guarded");
    const statuses: number[] = [];
    const limits: string[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await fetch(`${worker.url}/v1/admin/projects`, { headers: bearer(`guess-${i}`) });
      statuses.push(res.status);
      if (res.status === 429) {
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
        limits.push(((await res.json()) as { limit: string }).limit);
      } else await res.body?.cancel();
    }
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(20).fill(429)]);
    // Guesses 11–20 hit the network's limit (and still count against the admin prefix), 21–30 the full prefix.
    expect(limits).toEqual([...Array(10).fill("network"), ...Array(10).fill("key_prefix")]);
    // SPEC §3: the failures of other credentials never refuse a right read key, from the same network either.
    expect((await fetch(`${worker.url}/v1/metrics/tools`, { headers: bearer(project.read_key) })).status).toBe(200);
    expect((await fetch(`${worker.url}/v1/metrics/tools`, { headers: bearer(project.read_key, "192.0.2.10") })).status).toBe(200);
    // The admin prefix is under attack: ADMIN_TOKEN (perhaps a guessable string) waits out its minute, from anywhere.
    const admin = await fetch(`${worker.url}/v1/admin/projects`, { headers: bearer(worker.adminToken, "192.0.2.10") });
    expect(admin.status).toBe(429);
    expect(Number(admin.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(await admin.json()).toMatchObject({ code: "TOO_MANY_REQUESTS", limit: "key_prefix" });
    // Wrong read keys from a third network: the same limit, on the read API and /mcp alike.
    const third = "192.0.2.11";
    for (let i = 0; i < 10; i++) expect((await fetch(`${worker.url}/v1/metrics/tools`, { headers: bearer("mp_read_" + "q".repeat(32), third) })).status).toBe(401);
    expect((await fetch(`${worker.url}/mcp`, { method: "POST", headers: { ...bearer("mp_read_" + "q".repeat(32), third), "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" })).status).toBe(429);
  });
});
