// GET /v1/explore (SPEC §8) through the real worker: calls ingested, their data points in the local
// Analytics Engine (the embedded ClickHouse vitest.config.ts starts), the builder's SQL run there;
// past 90 days, D1's day rows. The project is always the key's.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/worker/index.ts";
import { EXPLORE_PARAMETERS } from "../../src/worker/analytics/explore-query.ts";
import { callPayload, postIngest } from "./helpers/ingest.ts";
import { createProject } from "./helpers/projects.ts";
import { DAY, dayMs, getJson, seedHour } from "./metrics/seed.ts";

type Answer = { rows: Record<string, unknown>[]; sampled: boolean; sample_interval_max: number; as_of: string; source: string; approximate: string[] };
const OUTCOMES = ["ok", "bad_args", "tool_error", "crashed"] as const;
const HOUR = 3_600_000;
const STARTED_AT = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR + 1000).toISOString();

async function ingestCalls(key: string, count: number, tools = 3) {
  const batch = Array.from({ length: count }, (_, i) =>
    callPayload({ tool_name: `tool_${i % tools}`, outcome: OUTCOMES[i % 4], duration_ms: 100 + i, started_at: STARTED_AT, session_kind: "transport", transport: "http" }),
  );
  expect((await postIngest({ batch }, { key, cf: { country: "DE", colo: "FRA" } })).status).toBe(202);
}

const explore = (query: string, key: string | null) => getJson<Answer & { error?: string; code?: string }>(`/v1/explore${query}`, key);

describe("GET /v1/explore", () => {
  it("answers calls, errors and p95 per tool from Analytics Engine, weighted", async () => {
    const p = await createProject();
    await ingestCalls(p.ingest_key, 400);
    const { status, body, headers } = await explore("?measure=calls,errors,error_rate,p95&by=tool", p.read_key);
    expect(status).toBe(200);
    expect(headers.get("cache-control")).toBe("private, no-store");
    expect(body).toMatchObject({ sampled: false, sample_interval_max: 1, source: "analytics-engine", approximate: [] });
    expect(Date.parse(body.as_of)).toBeGreaterThan(0);
    expect(body.rows.map((r) => r.tool).sort()).toEqual(["tool_0", "tool_1", "tool_2"]);
    const total = body.rows.reduce((s, r) => s + (r.calls as number), 0);
    expect(total).toBe(400);
    const tool0 = body.rows.find((r) => r.tool === "tool_0")!;
    // i % 3 == 0 and i % 4 != 0: 134 calls of tool_0, 100 of them not ok.
    expect(tool0).toMatchObject({ calls: 134, errors: 100, error_rate: 0.7463 });
    expect(tool0.p95).toBeGreaterThan(0);
  });

  it("filters, breaks down by request facts, and never shows another project's calls", async () => {
    const mine = await createProject();
    const theirs = await createProject();
    await ingestCalls(mine.ingest_key, 40);
    await ingestCalls(theirs.ingest_key, 80);
    const { body } = await explore("?by=country,outcome&filter[tool]=tool_1&filter[outcome]=ok&filter[outcome]=crashed", mine.read_key);
    // tool_1 is i % 3 == 1; ok is i % 4 == 0 (4, 16, 28) and crashed i % 4 == 3 (7, 19, 31).
    expect(body.rows).toEqual([
      { country: "DE", outcome: "crashed", calls: 3 },
      { country: "DE", outcome: "ok", calls: 3 },
    ]);
  });

  it("holds the calls of the last seconds in the default range", async () => {
    const p = await createProject();
    const batch = [callPayload({ started_at: new Date().toISOString() })];
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    expect((await explore("", p.read_key)).body.rows).toEqual([{ calls: 1 }]);
  });

  it("needs a read key", async () => {
    const p = await createProject();
    expect((await explore("", null)).status).toBe(401);
    expect((await explore("", p.ingest_key)).status).toBe(401);
  });

  it.each([
    ["an unknown parameter", "?project_id=prj_other", `unknown parameter (allowed: ${EXPLORE_PARAMETERS.join(", ")})`],
    ["the project index", "?index1=prj_other", "unknown parameter (allowed:"],
    ["a measure that is SQL", "?measure=calls%27)%20--", "'measure' must be among:"],
    ["NUL in a filter", "?filter[tool]=a%00b", "'filter[tool]' has a value"],
    ["a limit over 200", "?limit=201", "'limit' must be a whole number from 1 to 200"],
    ["a huge limit", "?limit=1e400", "'limit' must be a whole number from 1 to 200"],
    ["three dimensions", "?by=tool,client,colo", "'by' names at most 2 dimensions"],
  ])("answers %s with 400 in its own words", async (_, query, message) => {
    const p = await createProject();
    const { status, body } = await explore(query, p.read_key);
    expect(status).toBe(400);
    expect(body.code).toBe("BAD_REQUEST");
    expect(body.error!.startsWith(message)).toBe(true);
    expect(body.error).not.toContain("prj_other");
    expect(body.error).not.toContain("--");
  });

  it("answers a quoted, backslashed, unicode tool name by its exact value", async () => {
    const p = await createProject();
    const name = "it's \\ 'quoted' 🎉";
    const batch = [callPayload({ tool_name: name, started_at: STARTED_AT }), callPayload({ tool_name: "plain", started_at: STARTED_AT })];
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    const { status, body } = await explore(`?by=tool&filter[tool]=${encodeURIComponent(name)}`, p.read_key);
    expect(status).toBe(200);
    expect(body.rows).toEqual([{ tool: name, calls: 1 }]);
  });

  it("caches an answer per (project, query) for 60 s", async () => {
    const p = await createProject();
    await ingestCalls(p.ingest_key, 10);
    const first = await explore("?measure=calls&from=2020-01-01T00:00:00Z&to=2099-01-01T00:00:00Z", p.read_key);
    expect(first.status).toBe(400); // more than 366 days: refused before any query
    const range = `?from=${new Date(Date.now() - 2 * DAY).toISOString().slice(0, 10)}`;
    const a = await explore(range, p.read_key);
    await ingestCalls(p.ingest_key, 10);
    const b = await explore(range, p.read_key);
    expect(a.body.rows).toEqual([{ calls: 10 }]);
    expect(b.body).toEqual(a.body); // the same answer, as_of included: from the cache
    const other = await explore(`${range}&measure=calls,errors`, p.read_key);
    expect(other.body.rows).toEqual([{ calls: 20, errors: 14 }]); // 7 of each 10 are not ok
  });

  it("answers 503 ANALYTICS_UNAVAILABLE when no AE SQL interface is configured, and when AE fails", async () => {
    const p = await createProject();
    const call = async (bindings: typeof env) => {
      const ctx = createExecutionContext();
      const res = await worker.fetch(new Request("http://worker/v1/explore?measure=errors", { headers: { authorization: `Bearer ${p.read_key}` } }) as never, bindings, ctx);
      await waitOnExecutionContext(ctx);
      return { status: res.status, body: await res.json<{ error: string; code: string }>(), retryAfter: res.headers.get("retry-after") };
    };
    const unconfigured = await call({ ...env, ANALYTICS_LOCAL_URL: undefined } as unknown as typeof env);
    expect(unconfigured.status).toBe(503);
    expect(unconfigured.body.code).toBe("ANALYTICS_UNAVAILABLE");
    expect(unconfigured.body.error).toContain("CF_ACCOUNT_ID");
    const failing = await call({ ...env, ANALYTICS_SQL: { query: async () => Promise.reject(new Error("boom")) } } as unknown as typeof env);
    expect(failing).toMatchObject({ status: 503, body: { code: "ANALYTICS_UNAVAILABLE" }, retryAfter: "30" });
    expect(failing.body.error).not.toContain("boom");
  });

  describe("past 90 days: D1's day rows", () => {
    const from = new Date(Date.now() - 120 * DAY).toISOString().slice(0, 10);
    const to = new Date(Date.now() - 100 * DAY).toISOString().slice(0, 10);

    it("answers the measures the day rows hold, by tool, with source rollups", async () => {
      const p = await createProject();
      await seedHour({ projectId: p.project_id, hourMs: dayMs(from) + 5 * HOUR, tool: "a", client: "c", counters: { calls: 10, ok: 7, bad_args: 3, duration_ms_sum: 100 } });
      await seedHour({ projectId: p.project_id, hourMs: dayMs(to) + 5 * HOUR, tool: "b", client: "c", counters: { calls: 4, ok: 4, duration_ms_sum: 40 } });
      const { status, body } = await explore(`?from=${from}&to=${to}&by=tool&measure=calls,errors,error_rate,mean_ms,p95`, p.read_key);
      expect(status).toBe(200);
      expect(body).toMatchObject({ source: "rollups", sampled: false, approximate: ["p95"] });
      expect(body.rows).toEqual([
        { tool: "a", calls: 10, errors: 3, error_rate: 0.3, mean_ms: 10, p95: 10 },
        { tool: "b", calls: 4, errors: 0, error_rate: 0, mean_ms: 10, p95: 10 },
      ]);
      const days = await explore(`?from=${from}&to=${to}&grain=day`, p.read_key);
      expect(days.body.rows).toEqual([
        { time: new Date(dayMs(from)).toISOString(), calls: 10 },
        { time: new Date(dayMs(to)).toISOString(), calls: 4 },
      ]);
    });

    it("sums the tools past `limit` into (other) from their sums", async () => {
      const p = await createProject();
      for (const [tool, calls, bad] of [["a", 10, 1], ["b", 6, 3], ["c", 4, 1]] as const) {
        await seedHour({ projectId: p.project_id, hourMs: dayMs(from) + HOUR, tool, client: "c", counters: { calls, ok: calls - bad, bad_args: bad } });
      }
      const { body } = await explore(`?from=${from}&to=${to}&by=tool&limit=1&measure=calls,error_rate,p50`, p.read_key);
      expect(body.rows).toEqual([
        { tool: "a", calls: 10, error_rate: 0.1, p50: 10 },
        { tool: "(other)", calls: 10, error_rate: 0.4, p50: null },
      ]);
    });

    it.each([
      ["a measure they do not hold", "&measure=distinct_sessions", "hold no distinct_sessions"],
      ["a dimension they do not keep", "&by=colo", "break down by tool or by client only"],
      ["hours", "&grain=hour", "hold days, not hours"],
    ])("answers %s with 400", async (_, extra, message) => {
      const p = await createProject();
      const { status, body } = await explore(`?from=${from}&to=${to}${extra}`, p.read_key);
      expect(status).toBe(400);
      expect(body.error).toContain(message);
    });
  });
});
