// The security headers of every answer (SPEC §3): a CSP whose scripts need this request's nonce (no
// 'unsafe-inline' scripts), nosniff on pages, API answers, errors and 404s alike, HSTS over https only.
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { adminHeaders, createProject, readSessionCookie } from "./helpers/projects.ts";


type Case = { name: string; path: string; init?: RequestInit; status: number };

async function cases(): Promise<Case[]> {
  const p = await createProject();
  const cookie = { cookie: await readSessionCookie(p.read_key) };
  const bearer = { authorization: `Bearer ${p.read_key}` };
  return [
    { name: "dashboard", path: "/", init: { headers: cookie }, status: 200 },
    { name: "tool page", path: "/tool?name=x", init: { headers: cookie }, status: 200 },
    { name: "sign-in page", path: "/", status: 401 },
    { name: "dashboard 400", path: "/?from=nope", init: { headers: cookie }, status: 400 },
    { name: "API answer", path: "/v1/metrics/tools", init: { headers: bearer }, status: 200 },
    { name: "API 400", path: "/v1/metrics/tools?from=nope", init: { headers: bearer }, status: 400 },
    { name: "API 401", path: "/v1/metrics/tools", status: 401 },
    { name: "admin answer", path: "/v1/admin/projects", init: { headers: adminHeaders() }, status: 200 },
    { name: "ingest 415", path: "/v1/ingest", init: { method: "POST", headers: { authorization: `Bearer ${p.ingest_key}` }, body: "x" }, status: 415 },
    { name: "404", path: "/nothing-here", status: 404 },
    { name: "API 404", path: "/v1/metrics/nothing", init: { headers: bearer }, status: 404 },
    { name: "health", path: "/healthz", status: 200 },
  ];
}

function directives(csp: string): Map<string, string[]> {
  return new Map(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name ?? "", values]));
}

describe("security headers", () => {
  it("are on every answer: pages, API, errors and 404s", async () => {
    for (const c of await cases()) {
      const res = await exports.default.fetch(`http://worker${c.path}`, { redirect: "manual", ...c.init });
      expect(res.status, c.name).toBe(c.status);
      expect(res.headers.get("x-content-type-options"), c.name).toBe("nosniff");
      expect(res.headers.get("x-frame-options"), c.name).toBe("DENY");
      expect(res.headers.get("referrer-policy"), c.name).toBe("same-origin");
      const csp = directives(res.headers.get("content-security-policy") ?? "");
      expect(csp.get("default-src"), c.name).toEqual(["'none'"]);
      expect(csp.get("frame-ancestors"), c.name).toEqual(["'none'"]);
      expect(csp.get("script-src"), c.name).toEqual([expect.stringMatching(/^'nonce-[A-Za-z0-9+/]{22}==?'$/)]);
      expect(res.headers.get("strict-transport-security"), c.name).toBeNull();
    }
  });

  it("let a page's script run only with the nonce of its own answer", async () => {
    const p = await createProject();
    const nonces = new Set<string>();
    for (const path of ["/", "/tool?name=x", "/?from=nope"]) {
      for (let i = 0; i < 2; i++) {
        const res = await exports.default.fetch(`http://worker${path}`, { headers: { cookie: await readSessionCookie(p.read_key) } });
        const csp = res.headers.get("content-security-policy") ?? "";
        expect(csp).not.toContain("unsafe-inline' 'nonce");
        expect(directives(csp).get("script-src")?.join(" ")).not.toContain("unsafe-inline");
        const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1] ?? "";
        const html = await res.text();
        const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]);
        expect(scripts.length, path).toBeGreaterThan(0);
        for (const attrs of scripts) expect(attrs, path).toBe(` nonce="${nonce}"`);
        // No inline event handlers either: they would need 'unsafe-inline'.
        expect(html).not.toMatch(/\son[a-z]+=/);
        nonces.add(nonce);
      }
    }
    expect(nonces.size).toBe(6);
  });

  it("add HSTS over https, and only there", async () => {
    const p = await createProject();
    for (const [path, init] of [["/", { headers: { cookie: await readSessionCookie(p.read_key) } }], ["/v1/metrics/tools", {}], ["/nothing-here", {}]] as const) {
      const https = await exports.default.fetch(`https://worker${path}`, init);
      expect(https.headers.get("strict-transport-security"), path).toBe("max-age=31536000; includeSubDomains");
      const http = await exports.default.fetch(`http://worker${path}`, init);
      expect(http.headers.get("strict-transport-security"), path).toBeNull();
    }
  });
});
