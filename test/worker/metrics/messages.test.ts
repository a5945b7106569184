// The read API's 400 messages name the parameter and never repeat what the caller wrote — not a
// value, not an unknown parameter's name (SPEC §3),
// and the dashboard refuses exactly what the API refuses (one schema, metrics/query.ts).
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createProject, readSessionCookie } from "../helpers/projects.ts";
import { getJson } from "./seed.ts";

const MARK = "zq<b>\u202e";

describe("read API error messages", () => {
  it("never contain the value of a bad parameter", async () => {
    const p = await createProject();
    const bad = [
      `from=${MARK}`,
      `to=2026-02-30${MARK}`,
      `from=2026-03-02&to=2026-03-01`,
      `client=${MARK.repeat(40)}`,
      `tool=${MARK.repeat(60)}`,
      `grain=${MARK}`,
      `client=${MARK}&client=${MARK}`,
    ];
    for (const q of bad) {
      const path = `/v1/metrics/timeseries?${q.split("&").map((kv) => kv.split("=").map(encodeURIComponent).join("=")).join("&")}`;
      const { status, body } = await getJson<{ error: string }>(path, p.read_key);
      expect(status, q).toBe(400);
      expect(body.error, q).not.toMatch(/zq|<b>|\u202e|2026-02-30|2026-03-0/);
    }
  });

  it("never quote an unknown parameter's name, however plain; they list the allowed names", async () => {
    const p = await createProject();
    const odd = await getJson<{ error: string }>(`/v1/metrics/tools?${encodeURIComponent(MARK)}=1`, p.read_key);
    expect(odd.status).toBe(400);
    expect(odd.body.error).toBe("unknown parameter (allowed: from, to, client, tool)");
    const long = await getJson<{ error: string }>(`/v1/metrics/tools?${"a".repeat(33)}=1`, p.read_key);
    expect(long.body.error).not.toContain("aaa");
    const typo = await getJson<{ error: string }>("/v1/metrics/sessions?tools=x", p.read_key);
    expect(typo.body.error).toBe("unknown parameter (allowed: from, to, client)");
    const plain = await getJson<{ error: string }>("/v1/metrics/tools?zqname=1", p.read_key);
    expect(plain.body.error).not.toContain("zqname");
  });

  it("never echo anything the request held, on the API or the dashboard", async () => {
    const p = await createProject();
    const cookie = { cookie: await readSessionCookie(p.read_key) };
    for (const q of ["zqname=1", "from=2026-01-01&zqname=1", `client=zq${"x".repeat(200)}`, "from=1999-01-01&to=2026-01-01"]) {
      const api = await getJson<{ error: string }>(`/v1/metrics/tools?${q}`, p.read_key);
      expect(api.status, q).toBe(400);
      expect(api.body.error, q).not.toMatch(/zq|1999|2026/);
      const page = await exports.default.fetch(`http://worker/?${q}`, { headers: cookie });
      expect(page.status, q).toBe(400);
      const message = /role="alert">([^<]*)</.exec(await page.text())?.[1] ?? "";
      expect(message, q).not.toBe("");
      expect(message, q).not.toMatch(/zq|1999|2026/);
    }
  });

  it("the dashboard refuses what the API refuses, and takes client= as no filter", async () => {
    const p = await createProject();
    const cookie = { cookie: await readSessionCookie(p.read_key) };
    for (const q of ["from=2026-02-30", "client=" + "c".repeat(129), "tool=x", "grain=day", "to=2026-01-01&from=2024-01-01"]) {
      const res = await exports.default.fetch(`http://worker/?${q}`, { headers: cookie });
      expect(res.status, q).toBe(400);
      expect(await res.text(), q).not.toContain("c".repeat(129));
    }
    const all = await exports.default.fetch("http://worker/?client=", { headers: cookie });
    expect(all.status).toBe(200);
  });
});
