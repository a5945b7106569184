// The dashboard (GET /, GET /tool?name=): sign-in by the form or a ?key= link's confirmation step, the cookie's attributes,
// figures equal to the API's, bad parameters, and that no page shows another project's data.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createKey, createProject, readSessionCookie, revokeKey } from "./helpers/projects.ts";
import { bucketValueMs, durationBucket } from "../../src/worker/histogram.ts";
import { dayMs, getJson, histogramOf, seedHour, seedRegistered } from "./metrics/seed.ts";

const COOKIE = "mcpulse_session";

async function page(path: string, key?: string, host = "http://worker"): Promise<Response> {
  const headers: Record<string, string> = key ? { cookie: await readSessionCookie(key) } : {};
  return exports.default.fetch(`${host}${path}`, { headers, redirect: "manual" });
}

/** A form POST as a browser sends it from a page of `origin`. */
async function post(path: string, form: Record<string, string>, origin: string | null = "http://worker", host = "http://worker"): Promise<Response> {
  const headers: Record<string, string> = origin === null ? {} : { origin };
  return exports.default.fetch(`${host}${path}`, { method: "POST", headers, body: new URLSearchParams(form), redirect: "manual" });
}

async function seedTwoTools(projectId: string, prefix: string): Promise<void> {
  const h = dayMs("2026-11-02") + 9 * 3_600_000;
  await seedHour({ projectId, hourMs: h, tool: `${prefix}_search`, client: `${prefix}_cli`, counters: { calls: 40, ok: 30, empty: 3, bad_args: 10, first_call_attempts: 36, first_call_ok: 25, response_bytes_sum: 40 * 1234 }, histogram: histogramOf([...Array(30).fill(40), ...Array(10).fill(1500)]) });
  await seedHour({ projectId, hourMs: h + 86_400_000, tool: `${prefix}_fetch`, client: "shared", counters: { calls: 7, ok: 7, first_call_attempts: 7, first_call_ok: 7 } });
  await seedRegistered(projectId, `${prefix}_unused`, { schemaBytes: 2000 });
}

describe("dashboard sign-in", () => {
  it("shows the sign-in form without a cookie", async () => {
    const res = await page("/");
    expect(res.status).toBe(401);
    const html = await res.text();
    expect(html).toMatch(/^<!DOCTYPE html>/);
    expect(html).toContain('action="/signin"');
    expect(res.headers.get("set-cookie")).toBeNull();
  });

  it("answers ?key= with a confirmation step naming the project, and no cookie (SPEC §3)", async () => {
    const p = await createProject("Keyed project");
    const res = await page(`/?from=2026-11-01&key=${p.read_key}&client=x`);
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toBeNull();
    const html = await res.text();
    expect(html).toContain("data-confirm-signin");
    expect(html).toContain("Keyed project");
    expect(html).toMatch(/<form method="post" action="\/signin">/);
    expect(html).toContain(`name="key" value="${p.read_key}"`);
    expect(html).toContain('name="next" value="/?from=2026-11-01&amp;client=x"');
    const onTool = await (await page(`/tool?name=a%20b&key=${p.read_key}`)).text();
    expect(onTool).toContain('name="next" value="/tool?name=a+b"');
  });

  it("signs in from the confirmation step's form: an HttpOnly, Secure, SameSite=Strict cookie and back without the key", async () => {
    const p = await createProject();
    const res = await post("/signin", { key: p.read_key, next: "/?from=2026-11-01&client=x" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/?from=2026-11-01&client=x");
    const cookie = res.headers.get("set-cookie") ?? "";
    // A signed session id, never the key itself.
    expect(cookie).toMatch(new RegExp(`^${COOKIE}=read\\.[0-9A-Za-z]{32}\\.\\d+\\.`));
    expect(cookie).not.toContain(p.read_key);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\//);
  });

  it("never changes the cookie for a sign-in or sign-out another site sends", async () => {
    const p = await createProject();
    const crossSite: [string, Record<string, string>][] = [
      ["evil origin", { origin: "https://evil.example" }],
      ["evil origin, cross-site fetch metadata", { origin: "https://evil.example", "sec-fetch-site": "cross-site" }],
      ["same-site subdomain", { origin: "http://evil.worker", "sec-fetch-site": "same-site" }],
      ["opaque origin (sandboxed frame)", { origin: "null" }],
      ["neither header", {}],
    ];
    for (const [name, headers] of crossSite) {
      for (const [path, form] of [["/signin", { key: p.read_key }], ["/signout", {}]] as const) {
        const res = await exports.default.fetch(`http://worker${path}`, { method: "POST", headers, body: new URLSearchParams(form), redirect: "manual" });
        expect(res.status, `${name} ${path}`).toBe(403);
        expect(res.headers.get("set-cookie"), `${name} ${path}`).toBeNull();
      }
    }
    // Fetch metadata alone is enough (a browser sends Origin too, but a proxy may strip it).
    const bySecFetch = await exports.default.fetch("http://worker/signin", {
      method: "POST", headers: { "sec-fetch-site": "same-origin" }, body: new URLSearchParams({ key: p.read_key }), redirect: "manual",
    });
    expect(bySecFetch.status).toBe(303);
    expect(bySecFetch.headers.get("set-cookie")).toContain(`${COOKIE}=read.`);
  });

  it("leaves Secure off on localhost, where development runs over http", async () => {
    const p = await createProject();
    for (const host of ["http://localhost:8787", "http://127.0.0.1:8787"]) {
      const res = await post("/signin", { key: p.read_key }, host, host);
      expect(res.status).toBe(303);
      const cookie = res.headers.get("set-cookie") ?? "";
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Strict/);
      expect(cookie).not.toMatch(/Secure/);
    }
  });

  it("refuses ingest keys, unknown keys and revoked keys", async () => {
    const p = await createProject();
    for (const bad of [p.ingest_key, "mp_read_" + "x".repeat(32), "nonsense"]) {
      const res = await page(`/?key=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.text()).toContain("not a valid read key");
    }
    const extra = await createKey(p.project_id, "read");
    expect((await page("/", extra.key)).status).toBe(200);
    await revokeKey(extra.key_id);
    const res = await page("/", extra.key);
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toMatch(new RegExp(`${COOKIE}=;.*Max-Age=0`));
  });

  it("signs in with the form and out again", async () => {
    const p = await createProject();
    const ok = await post("/signin", { key: p.read_key });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/");
    const cookie = ok.headers.get("set-cookie") ?? "";
    expect(cookie).toContain(`${COOKIE}=read.`);
    expect(cookie).not.toContain(p.read_key);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Secure/);
    const bad = await post("/signin", { key: p.ingest_key });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("set-cookie")).toBeNull();
    const out = await post("/signout", {});
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/Max-Age=0/);
  });

  it("returns to the page asked for after signing in, and only to a page of this site", async () => {
    const p = await createProject();
    const form = await (await page("/tool?name=search&from=2026-11-01")).text();
    expect(form).toContain('name="next" value="/tool?name=search&amp;from=2026-11-01"');
    const signIn = (next: string) => post("/signin", { key: p.read_key, next });
    expect((await signIn("/tool?name=search&from=2026-11-01")).headers.get("location")).toBe("/tool?name=search&from=2026-11-01");
    for (const unsafe of ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "/a\nb", ""]) {
      const res = await signIn(unsafe);
      expect(res.status, unsafe).toBe(303);
      expect(res.headers.get("location"), unsafe).toBe("/");
    }
  });

  it("sends no-store, a same-origin referrer policy and a CSP that loads nothing from elsewhere", async () => {
    const p = await createProject();
    const res = await page("/", p.read_key);
    expect(res.headers.get("cache-control")).toBe("private, no-store");
    expect(res.headers.get("referrer-policy")).toBe("same-origin");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).not.toMatch(/<link|src="http|href="http/);
  });
});

describe("dashboard pages", () => {
  it("shows the API's figures for the key's project", async () => {
    const p = await createProject("Acme tools");
    await seedTwoTools(p.project_id, "acme");
    const range = "from=2026-11-01&to=2026-11-07";
    const res = await page(`/?${range}`, p.read_key);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain("Acme tools");
    const api = await getJson<{ tools: { tool_name: string; calls: number; first_call_rate: number | null; duration_ms: { p95: number | null } }[] }>(`/v1/metrics/tools?${range}`, p.read_key);
    for (const t of api.body.tools) {
      const row = new RegExp(`<tr data-tool="${t.tool_name}">([\\s\\S]*?)</tr>`).exec(html)?.[1] ?? "";
      expect(row, t.tool_name).toContain(`data-col="calls" data-value="${t.calls}"`);
      expect(row).toContain(`data-col="first_call_rate" data-value="${t.first_call_rate ?? ""}"`);
      expect(row).toContain(`data-col="p95" data-value="${t.duration_ms.p95 ?? ""}"`);
    }
    expect(html).toContain('data-card="calls" data-value="47"');
    expect(html).toMatch(/id="dead-tools"[\s\S]*acme_unused/);
    // The client picker lists the clients of the range.
    expect(html).toContain('<option value="acme_cli">acme_cli</option>');
  });

  it("shows the p95 card's change against the previous period of the same length", async () => {
    const p = await createProject();
    // 2026-10-25..31 is the period before 2026-11-01..07: p95 goes from 100 ms to 40 ms (−60 %).
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-10-28") + 3_600_000, tool: "acme_search", client: "acme_cli", counters: { calls: 20, ok: 20, first_call_attempts: 20, first_call_ok: 20 }, histogram: histogramOf(Array(20).fill(100)) });
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-03") + 3_600_000, tool: "acme_search", client: "acme_cli", counters: { calls: 20, ok: 20, first_call_attempts: 20, first_call_ok: 20 }, histogram: histogramOf(Array(20).fill(40)) });
    // Percentiles read back from histogram buckets (SPEC §2.3), as the API reports them.
    const [before, after] = [100, 40].map((ms) => bucketValueMs(durationBucket(ms)));
    const change = `−${((Math.abs(after! - before!) / before!) * 100).toFixed(1)}%`;
    const p95Card = (html: string) => /data-card="p95"(?:(?!data-card=)[\s\S])*?<span class="delta (\w+)"[^>]*>([^<]*)<\/span>/.exec(html)?.slice(1);
    const overview = await (await page("/?from=2026-11-01&to=2026-11-07", p.read_key)).text();
    expect(p95Card(overview)).toEqual(["good", change]);
    const tool = await (await page("/tool?name=acme_search&from=2026-11-01&to=2026-11-07", p.read_key)).text();
    expect(p95Card(tool)).toEqual(["good", change]);
  });

  it("filters by client and renders a tool page", async () => {
    const p = await createProject();
    await seedTwoTools(p.project_id, "acme");
    const one = await (await page("/?from=2026-11-01&to=2026-11-07&client=shared", p.read_key)).text();
    expect(one).toContain('data-card="calls" data-value="7"');
    // "All clients" in the form sends client= which means no filter.
    const all = await (await page("/?from=2026-11-01&to=2026-11-07&client=", p.read_key)).text();
    expect(all).toContain('data-card="calls" data-value="47"');
    const tool = await page("/tool?name=acme_search&from=2026-11-01&to=2026-11-07", p.read_key);
    expect(tool.status).toBe(200);
    const html = await tool.text();
    expect(html).toContain('data-card="calls" data-value="40"');
    expect(html).toContain('data-card="first_call_rate" data-value="0.6944"');
    expect(html).toContain('data-chart="latency"');
    expect(html).toContain('data-outcome="bad_args" data-value="10"');
  });

  it("answers bad parameters with a 400 page", async () => {
    const p = await createProject();
    for (const q of ["from=2026-02-30", "from=2026-03-02&to=2026-03-01", "to=2026-01-01&from=2024-01-01", "client=a&client=b", "nope=1"]) {
      const res = await page(`/?${q}`, p.read_key);
      expect(res.status, q).toBe(400);
      expect(res.headers.get("content-type")).toContain("text/html");
    }
    for (const q of [`name=${"t".repeat(201)}`, `name=${encodeURIComponent("🚀".repeat(201))}`, "name=", "", "name=a&name=b", "name=a&page=0", "name=a&page=x"]) {
      expect((await page(`/tool?${q}`, p.read_key)).status, q).toBe(400);
    }
  });

  it("never shows project A's data to project B's cookie", async () => {
    const a = await createProject("Alpha Corp");
    const b = await createProject("Beta Corp");
    await seedTwoTools(a.project_id, "alpha");
    await seedTwoTools(b.project_id, "beta");
    for (const path of ["/?from=2026-11-01&to=2026-11-07", "/tool?name=alpha_search&from=2026-11-01&to=2026-11-07", "/?from=2026-11-01&to=2026-11-07&client=alpha_cli"]) {
      const html = await (await page(path, b.read_key)).text();
      expect(html).toContain("Beta Corp");
      expect(html).not.toContain("Alpha Corp");
      // The page repeats the tool or client named in its own URL, never anything of A's.
      expect(html).not.toMatch(/alpha_(fetch|unused)/);
      if (!path.includes("alpha_cli")) expect(html).not.toContain("alpha_cli");
    }
    const toolForB = await (await page("/tool?name=alpha_search&from=2026-11-01&to=2026-11-07", b.read_key)).text();
    expect(toolForB).toContain('data-card="calls" data-value="0"');
  });

  it("escapes names taken from payloads (no markup injection)", async () => {
    const p = await createProject();
    const evil = '<script>alert("x")</script>';
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-02"), tool: evil, client: `"><img src=x onerror=alert(1)>`, counters: { calls: 1, ok: 1 } });
    for (const path of ["/?from=2026-11-01&to=2026-11-07", `/tool?name=${encodeURIComponent(evil)}&from=2026-11-01&to=2026-11-07`]) {
      const html = await (await page(path, p.read_key)).text();
      expect(html).not.toContain(evil);
      expect(html).not.toContain("<img src=x");
      expect(html).toContain("&lt;script&gt;");
    }
  });

  it("leaves other routes alone", async () => {
    expect(await (await exports.default.fetch("http://worker/healthz")).text()).toBe("ok");
    const res = await exports.default.fetch("http://worker/nothing-here");
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "not found", code: "NOT_FOUND", request_id: res.headers.get("x-request-id") });
  });
});
