// Explore's executors (SPEC §8 "Where it runs"): which interface answers, and 429/503/507 retried
// per Retry-After within a bounded number of retries and a bounded wait, else a clear 503.
import { describe, expect, it } from "vitest";
import { AnalyticsUnavailable, executorFor, fetchWithRetry, MAX_RETRY_WAIT_MS, retryAfterMs } from "../../src/worker/analytics/executors.ts";

function responses(...list: [number, Record<string, string>?, unknown?][]) {
  let i = 0;
  const sent: number[] = [];
  const send = async () => {
    const [status, headers, body] = list[Math.min(i, list.length - 1)]!;
    sent.push(i++);
    return new Response(body === undefined ? null : JSON.stringify(body), { status, headers });
  };
  return { send, sent };
}

describe("fetchWithRetry", () => {
  it("retries 429, 503 and 507 after their Retry-After, then answers", async () => {
    const waits: number[] = [];
    const { send, sent } = responses([429, { "retry-after": "1" }], [507, { "retry-after": "2" }], [200, {}, { data: [] }]);
    const res = await fetchWithRetry(send, async (ms) => void waits.push(ms));
    expect(res.status).toBe(200);
    expect(waits).toEqual([1000, 2000]);
    expect(sent).toHaveLength(3);
  });

  it("gives up after two retries", async () => {
    const { send, sent } = responses([503, { "retry-after": "1" }]);
    await expect(fetchWithRetry(send, async () => undefined)).rejects.toBeInstanceOf(AnalyticsUnavailable);
    expect(sent).toHaveLength(3);
  });

  it("does not wait past the bound: a Retry-After too long is a 503 at once, with its own Retry-After", async () => {
    const { send, sent } = responses([429, { "retry-after": String(MAX_RETRY_WAIT_MS / 1000 + 1) }]);
    const error = await fetchWithRetry(send, async () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnalyticsUnavailable);
    expect((error as AnalyticsUnavailable).retryAfterSeconds).toBe(6);
    expect(sent).toHaveLength(1);
    // At the bound exactly, the wait is taken.
    const atBound = responses([429, { "retry-after": String(MAX_RETRY_WAIT_MS / 1000) }], [200, {}, { data: [] }]);
    expect((await fetchWithRetry(atBound.send, async () => undefined)).status).toBe(200);
  });

  it("never retries other statuses", async () => {
    const { send, sent } = responses([400], [200]);
    expect((await fetchWithRetry(send, async () => undefined)).status).toBe(400);
    expect(sent).toHaveLength(1);
  });

  it("reads Retry-After as seconds or an HTTP date, 1 s when missing or unreadable", () => {
    expect(retryAfterMs("3")).toBe(3000);
    expect(retryAfterMs(null)).toBe(1000);
    expect(retryAfterMs("soon")).toBe(1000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
  });
});

describe("executorFor", () => {
  const fetchRecorder = () => {
    const seen: { url: string; init: RequestInit | undefined }[] = [];
    const fake = (async (url: string | URL | Request, init?: RequestInit) => {
      seen.push({ url: String(url), init });
      return new Response(JSON.stringify({ meta: [], data: [{ sum_calls: 1 }], rows: 1 }), { status: 200 });
    }) as typeof fetch;
    return { seen, fake };
  };

  it("prefers the binding, then the SQL API, then the local engine; none configured is null", async () => {
    expect(executorFor({})).toBeNull();
    const { seen, fake } = fetchRecorder();
    const api = executorFor({ CF_ACCOUNT_ID: "acc", CF_ANALYTICS_TOKEN: "tok", ANALYTICS_LOCAL_URL: "http://127.0.0.1:1" }, { fetch: fake })!;
    expect(api.name).toBe("sql-api");
    expect(await api.query("SELECT 1\nFORMAT JSON")).toEqual([{ sum_calls: 1 }]);
    expect(seen[0]!.url).toBe("https://api.cloudflare.com/client/v4/accounts/acc/analytics_engine/sql");
    expect(new Headers(seen[0]!.init!.headers).get("authorization")).toBe("Bearer tok");
    const queries: string[] = [];
    const binding = executorFor({ ANALYTICS_SQL: { query: async ({ query }) => (queries.push(query), { data: [{ x: 1 }] }) }, CF_ACCOUNT_ID: "acc", CF_ANALYTICS_TOKEN: "tok" })!;
    expect(binding.name).toBe("binding");
    expect(await binding.query("SELECT 1\nFORMAT JSON")).toEqual([{ x: 1 }]);
    expect(queries).toEqual(["SELECT 1"]);
    expect(executorFor({ ANALYTICS_LOCAL_URL: "http://127.0.0.1:1" }, { fetch: fake })!.name).toBe("local");
  });

  it("turns a refusal into AnalyticsUnavailable without the engine's words", async () => {
    const failing = (async () => new Response("secret detail", { status: 500 })) as typeof fetch;
    const api = executorFor({ CF_ACCOUNT_ID: "acc", CF_ANALYTICS_TOKEN: "tok" }, { fetch: failing })!;
    const error = await api.query("SELECT 1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AnalyticsUnavailable);
    expect((error as Error).message).not.toContain("secret");
  });
});
