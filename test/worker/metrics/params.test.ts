// Every bad parameter of the read API answers 400 {"error", "code": "BAD_REQUEST", "request_id"}; limits are tested at, under and over.
import { env } from "cloudflare:test";
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { callPayload, postIngest } from "../helpers/ingest.ts";
import { createKey, createProject, revokeKey } from "../helpers/projects.ts";
import { getJson } from "./seed.ts";
import { runCron } from "../helpers/cron.ts";

const ENDPOINTS = [
  "tools", "clients", "pairs", "sessions", "timeseries", "descriptions", "agreement", "insights", "schema-regressions",
] as const;
const RANGED = ["tools", "clients", "pairs", "sessions", "timeseries", "agreement", "insights"] as const;

async function expect400(path: string, key: string, fragment: RegExp): Promise<void> {
  const { status, body, headers } = await getJson<{ error: string; code: string }>(path, key);
  expect(status, path).toBe(400);
  expect(headers.get("content-type")).toContain("application/json");
  expect(Object.keys(body)).toEqual(["error", "code", "request_id"]);
  expect((body as { request_id?: string }).request_id).toBe(headers.get("x-request-id"));
  expect(body.code).toBe("BAD_REQUEST");
  expect(body.error).toMatch(fragment);
}

function daysBefore(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);
}

describe("read API authentication", () => {
  it("answers 401 without a key, with an ingest key, and with a revoked read key", async () => {
    const p = await createProject();
    const extra = await createKey(p.project_id, "read");
    await revokeKey(extra.key_id);
    for (const endpoint of ENDPOINTS) {
      const path = `/v1/metrics/${endpoint}`;
      expect((await getJson(path, null)).status, path).toBe(401);
      expect((await getJson(path, p.ingest_key)).status, path).toBe(401);
      expect((await getJson(path, extra.key)).status, path).toBe(401);
      expect((await getJson(path, p.read_key)).status, path).toBe(200);
    }
  });

  it("checks the key before the parameters", async () => {
    expect((await getJson("/v1/metrics/tools?from=nope", null)).status).toBe(401);
  });

  it("never lets the answers be cached by a shared cache", async () => {
    const p = await createProject();
    expect((await getJson("/v1/metrics/tools", p.read_key)).headers.get("cache-control")).toBe("private, no-store");
  });
});

describe("read API parameters", () => {
  it("refuses dates that are not YYYY-MM-DD calendar dates", async () => {
    const p = await createProject();
    for (const endpoint of RANGED) {
      for (const bad of ["2026-13-01", "2026-02-30", "2026-2-01", "20260201", "yesterday", "2026-02-01T00:00:00Z", ""]) {
        await expect400(`/v1/metrics/${endpoint}?from=${encodeURIComponent(bad)}&to=2026-03-01`, p.read_key, /'from'/);
        await expect400(`/v1/metrics/${endpoint}?to=${encodeURIComponent(bad)}`, p.read_key, /'to'/);
      }
    }
    // A leap day exists in 2028, not in 2026.
    expect((await getJson("/v1/metrics/tools?from=2028-02-29&to=2028-02-29", p.read_key)).status).toBe(200);
    await expect400("/v1/metrics/tools?from=2026-02-29&to=2026-03-01", p.read_key, /calendar/);
  });

  it("refuses from after to, and accepts from equal to to", async () => {
    const p = await createProject();
    for (const endpoint of RANGED) {
      await expect400(`/v1/metrics/${endpoint}?from=2026-03-02&to=2026-03-01`, p.read_key, /after/);
      expect((await getJson(`/v1/metrics/${endpoint}?from=2026-03-01&to=2026-03-01`, p.read_key)).status).toBe(200);
    }
  });

  it("accepts at most 366 days", async () => {
    const p = await createProject();
    const to = "2026-06-30";
    for (const endpoint of RANGED.filter((e) => e !== "timeseries")) {
      expect((await getJson(`/v1/metrics/${endpoint}?from=${daysBefore(to, 364)}&to=${to}`, p.read_key)).status).toBe(200);
      expect((await getJson(`/v1/metrics/${endpoint}?from=${daysBefore(to, 365)}&to=${to}`, p.read_key)).status).toBe(200);
      await expect400(`/v1/metrics/${endpoint}?from=${daysBefore(to, 366)}&to=${to}`, p.read_key, /^the range is longer than 366 days$/);
    }
    const day = await getJson<{ buckets: unknown[] }>(`/v1/metrics/timeseries?grain=day&from=${daysBefore(to, 365)}&to=${to}`, p.read_key);
    expect(day.body.buckets).toHaveLength(366);
    await expect400(`/v1/metrics/timeseries?grain=day&from=${daysBefore(to, 366)}&to=${to}`, p.read_key, /longer than 366 days/);
  });

  it("limits grain=hour to 31 days and refuses unknown grains", async () => {
    // Hour grain reads only the last 90 days' hours (SPEC §7): the request's clock stands just after the ranges asked.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 6, 2) });
    onTestFinished(() => void vi.useRealTimers());
    const p = await createProject();
    const to = "2026-06-30";
    const ok = await getJson<{ buckets: unknown[] }>(`/v1/metrics/timeseries?grain=hour&from=${daysBefore(to, 30)}&to=${to}`, p.read_key);
    expect(ok.status).toBe(200);
    expect(ok.body.buckets).toHaveLength(31 * 24);
    expect((await getJson(`/v1/metrics/timeseries?grain=hour&from=${daysBefore(to, 29)}&to=${to}`, p.read_key)).status).toBe(200);
    await expect400(`/v1/metrics/timeseries?grain=hour&from=${daysBefore(to, 31)}&to=${to}`, p.read_key, /^the range is longer than 31 days$/);
    for (const grain of ["week", "HOUR", "", "minute"]) {
      await expect400(`/v1/metrics/timeseries?grain=${grain}`, p.read_key, /'grain'/);
    }
  });

  it("refuses repeated and unknown parameters on every endpoint", async () => {
    const p = await createProject();
    for (const endpoint of ENDPOINTS) {
      await expect400(`/v1/metrics/${endpoint}?tools=x`, p.read_key, /^unknown parameter \(allowed: [a-z, ]+\)$/);
      const repeatable = endpoint === "sessions" ? "client" : "tool";
      await expect400(`/v1/metrics/${endpoint}?${repeatable}=a&${repeatable}=b`, p.read_key, /more than once/);
    }
    await expect400("/v1/metrics/tools?from=2026-01-01&from=2026-01-02", p.read_key, /'from' is given more than once/);
    await expect400("/v1/metrics/tools?client=a&client=a", p.read_key, /more than once/);
    // Parameters an endpoint does not take are unknown there.
    // The answer lists the names allowed there; it never repeats the one the request used (SPEC §3).
    await expect400("/v1/metrics/sessions?tool=x", p.read_key, /^unknown parameter \(allowed: from, to, client\)$/);
    await expect400("/v1/metrics/descriptions?from=2026-01-01", p.read_key, /^unknown parameter \(allowed: tool\)$/);
    await expect400("/v1/metrics/tools?grain=day", p.read_key, /^unknown parameter \(allowed: from, to, client, tool\)$/);
  });

  it("refuses empty filters and filters longer than the wire caps (client 128, tool 200)", async () => {
    const p = await createProject();
    await expect400("/v1/metrics/tools?client=", p.read_key, /'client' must not be empty/);
    await expect400("/v1/metrics/tools?tool=", p.read_key, /'tool' must not be empty/);
    expect((await getJson(`/v1/metrics/tools?client=${"c".repeat(127)}`, p.read_key)).status).toBe(200);
    expect((await getJson(`/v1/metrics/tools?client=${"c".repeat(128)}`, p.read_key)).status).toBe(200);
    await expect400(`/v1/metrics/tools?client=${"c".repeat(129)}`, p.read_key, /longer than 128/);
    expect((await getJson(`/v1/metrics/tools?tool=${"t".repeat(199)}`, p.read_key)).status).toBe(200);
    expect((await getJson(`/v1/metrics/tools?tool=${"t".repeat(200)}`, p.read_key)).status).toBe(200);
    await expect400(`/v1/metrics/tools?tool=${"t".repeat(201)}`, p.read_key, /longer than 200/);
  });

  it("counts the filter caps in code points, as ingest does (SPEC §1.2)", async () => {
    const p = await createProject();
    // 🚀 (U+1F680) is one code point, two UTF-16 units.
    const rockets = (n: number) => encodeURIComponent("🚀".repeat(n));
    for (const endpoint of ["tools", "clients", "timeseries", "agreement"]) {
      expect((await getJson(`/v1/metrics/${endpoint}?tool=${rockets(199)}`, p.read_key)).status, endpoint).toBe(200);
      expect((await getJson(`/v1/metrics/${endpoint}?tool=${rockets(200)}`, p.read_key)).status, endpoint).toBe(200);
      await expect400(`/v1/metrics/${endpoint}?tool=${rockets(201)}`, p.read_key, /'tool' is longer than 200/);
    }
    for (const endpoint of ["tools", "clients", "sessions"]) {
      expect((await getJson(`/v1/metrics/${endpoint}?client=${rockets(127)}`, p.read_key)).status, endpoint).toBe(200);
      expect((await getJson(`/v1/metrics/${endpoint}?client=${rockets(128)}`, p.read_key)).status, endpoint).toBe(200);
      await expect400(`/v1/metrics/${endpoint}?client=${rockets(129)}`, p.read_key, /'client' is longer than 128/);
    }
  });

  it("filters on a 150-emoji tool name and client name that ingest accepted", async () => {
    const p = await createProject();
    const tool = "🚀".repeat(150);
    const client = "🦊".repeat(128);
    const batch = [callPayload({ tool_name: tool, client_name: client }), callPayload({ tool_name: "other" })];
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    await runCron(Date.now());
    const query = `tool=${encodeURIComponent(tool)}&client=${encodeURIComponent(client)}`;
    const { status, body } = await getJson<{ tools: { tool_name: string; calls: number }[] }>(`/v1/metrics/tools?${query}`, p.read_key);
    expect(status).toBe(200);
    expect(body.tools.map((t) => [t.tool_name, t.calls])).toEqual([[tool, 1]]);
  });
});
