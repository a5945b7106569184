// The other read routes of SPEC §3: clients, pairs, sessions, timeseries, descriptions, agreement,
// schema regressions — sums, filters, null rules and as_of on every answer.
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { pricePerMillionTokens } from "../../../src/worker/metrics/reports.ts";
import { createProject } from "../helpers/projects.ts";
import {
  DAY, HOUR, dayMs, getJson, histogramOf, seedAgreement, seedDeclaration, seedHour, seedPair, seedRegistered,
  seedSession, seedVersion, setAsOf,
} from "./seed.ts";

type Body = Record<string, unknown>;

describe("GET /v1/metrics/clients", () => {
  it("gives the same counters per client, with the tool filter", async () => {
    const p = await createProject();
    const h = dayMs("2026-08-01");
    await seedHour({ projectId: p.project_id, hourMs: h, tool: "a", client: "cursor", counters: { calls: 5, ok: 4, crashed: 1, first_call_attempts: 5, first_call_ok: 4, response_bytes_sum: 50 } });
    await seedHour({ projectId: p.project_id, hourMs: h, tool: "b", client: "cursor", counters: { calls: 5, ok: 5, first_call_attempts: 5, first_call_ok: 5 } });
    await seedHour({ projectId: p.project_id, hourMs: h + HOUR, tool: "a", client: "claude", counters: { calls: 2, ok: 2, empty: 1, first_call_attempts: 2, first_call_ok: 1 } });
    const { status, body } = await getJson<{ from: string; clients: Body[]; as_of: unknown }>("/v1/metrics/clients?from=2026-08-01&to=2026-08-01", p.read_key);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(["from", "to", "as_of", "clients"]);
    expect(body.clients).toEqual([
      {
        client_name: "cursor", calls: 10, ok: 9, empty: 0, bad_args: 0, tool_error: 0, crashed: 1, retries: 0,
        first_call_attempts: 10, first_call_ok: 9, calls_without_session: 0, calls_without_args_hash: 0, first_call_rate: 0.9, empty_rate: 0, error_rate: 0.1,
        duration_ms: { p50: 10, p95: 10, p99: 10 }, response_bytes: { sum: 50, avg: 5 },
      },
      expect.objectContaining({ client_name: "claude", calls: 2, empty_rate: 0.5, first_call_rate: 0.5 }),
    ]);
    const toolB = await getJson<{ clients: Body[] }>("/v1/metrics/clients?from=2026-08-01&to=2026-08-01&tool=b", p.read_key);
    expect(toolB.body.clients.map((c) => [c.client_name, c.calls])).toEqual([["cursor", 5]]);
    const both = await getJson<{ clients: Body[] }>("/v1/metrics/clients?from=2026-08-01&to=2026-08-01&tool=a&client=claude", p.read_key);
    expect(both.body.clients.map((c) => [c.client_name, c.calls])).toEqual([["claude", 2]]);
  });
});

describe("GET /v1/metrics/pairs", () => {
  it("sums pairs over the range; tool matches either side; client the first call's client", async () => {
    const p = await createProject();
    await seedPair(p.project_id, "2026-08-01", "cursor", "search", "fetch", 3);
    await seedPair(p.project_id, "2026-08-02", "claude", "search", "fetch", 4);
    await seedPair(p.project_id, "2026-08-02", "cursor", "fetch", "summarize", 2);
    await seedPair(p.project_id, "2026-08-02", "cursor", "list", "summarize", 9);
    await seedPair(p.project_id, "2026-08-03", "cursor", "search", "fetch", 100);
    await seedPair(p.project_id, "2026-08-02", "cursor", "list", "gone", 0); // emptied by a late call
    const q = "/v1/metrics/pairs?from=2026-08-01&to=2026-08-02";
    const all = await getJson<{ pairs: Body[] }>(q, p.read_key);
    expect(Object.keys(all.body)).toEqual(["as_of", "pairs"]);
    expect(all.body.pairs).toEqual([
      { from_tool: "list", to_tool: "summarize", count: 9 },
      { from_tool: "search", to_tool: "fetch", count: 7 },
      { from_tool: "fetch", to_tool: "summarize", count: 2 },
    ]);
    const fetch = await getJson<{ pairs: Body[] }>(`${q}&tool=fetch`, p.read_key);
    expect(fetch.body.pairs.map((x) => x.count)).toEqual([7, 2]);
    const cursorFetch = await getJson<{ pairs: Body[] }>(`${q}&tool=fetch&client=cursor`, p.read_key);
    expect(cursorFetch.body.pairs).toEqual([
      { from_tool: "search", to_tool: "fetch", count: 3 },
      { from_tool: "fetch", to_tool: "summarize", count: 2 },
    ]);
  });
});

describe("GET /v1/metrics/sessions", () => {
  it("counts sessions first seen in range with all their calls; averages per session; cost", async () => {
    const p = await createProject();
    await seedSession(p.project_id, "s1", { firstSeenMs: Date.parse("2026-08-01T23:00:00Z"), client: "A", calls: 4, responseBytes: 1000, schemaBytes: 2000 });
    await seedSession(p.project_id, "s2", { firstSeenMs: Date.parse("2026-08-02T10:00:00Z"), client: "B", calls: 2, responseBytes: 3, schemaBytes: 0 });
    await seedSession(p.project_id, "s0", { firstSeenMs: Date.parse("2026-07-31T23:59:59.999Z"), client: "A", calls: 50, responseBytes: 9, schemaBytes: 9 });
    await seedSession(p.project_id, "s3", { firstSeenMs: Date.parse("2026-08-03T00:00:00Z"), client: "A", calls: 50, responseBytes: 9, schemaBytes: 9 });
    const all = await getJson<Body>("/v1/metrics/sessions?from=2026-08-01&to=2026-08-02", p.read_key);
    expect(Object.keys(all.body)).toEqual([
      "as_of", "sessions", "calls_per_session", "response_tokens_per_session", "schema_tokens_per_session", "cost_per_session_usd",
      "calls_without_session",
    ]);
    // Tokens are UTF-16 length ÷ 4, unrounded before summing: (1000 + 3) / 4 / 2 = 125.375 → 125.4.
    // Cost: (250.75 + 500) tokens / 2 sessions × $3 / 1e6 = 0.001126125 → 0.001126.
    expect(all.body).toMatchObject({
      sessions: 2, calls_per_session: 3, response_tokens_per_session: 125.4, schema_tokens_per_session: 250,
      cost_per_session_usd: 0.001126,
    });
    const a = await getJson<Body>("/v1/metrics/sessions?from=2026-08-01&to=2026-08-02&client=A", p.read_key);
    expect(a.body).toMatchObject({ sessions: 1, calls_per_session: 4, response_tokens_per_session: 250, schema_tokens_per_session: 500, cost_per_session_usd: 0.00225 });
    const none = await getJson<Body>("/v1/metrics/sessions?from=2026-09-01&to=2026-09-01", p.read_key);
    expect(none.body).toMatchObject({ sessions: 0, calls_per_session: null, response_tokens_per_session: null, schema_tokens_per_session: null, cost_per_session_usd: null });
  });

  it("reads the price from PRICE_PER_MILLION_TOKENS_USD, default 3", () => {
    expect(pricePerMillionTokens(undefined)).toBe(3);
    expect(pricePerMillionTokens("")).toBe(3);
    expect(pricePerMillionTokens("15")).toBe(15);
    expect(pricePerMillionTokens("0.25")).toBe(0.25);
    expect(pricePerMillionTokens("-1")).toBe(3);
    expect(pricePerMillionTokens("cheap")).toBe(3);
  });
});

describe("GET /v1/metrics/timeseries", () => {
  it("answers every day bucket, empty ones included, with percentiles per bucket", async () => {
    const p = await createProject();
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-08-01") + 3 * HOUR, tool: "a", client: "c1", counters: { calls: 2, ok: 2 }, histogram: histogramOf([5, 7]) });
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-08-03") + 3 * HOUR, tool: "a", client: "c2", counters: { calls: 1, bad_args: 1 }, histogram: histogramOf([50]) });
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-08-03") + 4 * HOUR, tool: "b", client: "c1", counters: { calls: 4, ok: 4 } });
    const { body } = await getJson<{ grain: string; buckets: Body[] }>("/v1/metrics/timeseries?from=2026-08-01&to=2026-08-03", p.read_key);
    expect(body.grain).toBe("day");
    expect(Object.keys(body)).toEqual(["from", "to", "grain", "as_of", "buckets"]);
    expect(body.buckets.map((b) => [b.start, b.calls])).toEqual([
      ["2026-08-01T00:00:00.000Z", 2], ["2026-08-02T00:00:00.000Z", 0], ["2026-08-03T00:00:00.000Z", 5],
    ]);
    expect(body.buckets[0]).toMatchObject({ duration_ms: { p50: 5, p95: 7, p99: 7 }, error_rate: 0 });
    expect(body.buckets[1]).toMatchObject({ duration_ms: { p50: null, p95: null, p99: null }, error_rate: null, empty_rate: null });
    const filtered = await getJson<{ buckets: Body[] }>("/v1/metrics/timeseries?from=2026-08-01&to=2026-08-03&tool=a&client=c2", p.read_key);
    expect(filtered.body.buckets.map((b) => b.calls)).toEqual([0, 0, 1]);
    expect(filtered.body.buckets[2]).toMatchObject({ error_rate: 1, duration_ms: { p50: 50 } });
  });

  it("answers 24 hour buckets a day with grain=hour", async () => {
    // Hour grain reads only the last 90 days' hours (SPEC §7): the request's clock stands a few days after the data.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.UTC(2026, 7, 10) });
    onTestFinished(() => void vi.useRealTimers());
    const p = await createProject();
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-08-01") + 23 * HOUR, tool: "a", client: "c1", counters: { calls: 3, ok: 3 } });
    const { body } = await getJson<{ grain: string; buckets: Body[] }>("/v1/metrics/timeseries?from=2026-08-01&to=2026-08-02&grain=hour", p.read_key);
    expect(body.grain).toBe("hour");
    expect(body.buckets).toHaveLength(48);
    expect(body.buckets[23]).toMatchObject({ start: "2026-08-01T23:00:00.000Z", calls: 3 });
    expect(body.buckets.reduce((n, b) => n + (b.calls as number), 0)).toBe(3);
  });
});

describe("GET /v1/metrics/descriptions", () => {
  it("reports churn (description changed, schema not) and convergence (same latest norm)", async () => {
    const p = await createProject();
    const t0 = Date.parse("2026-08-01T00:00:00Z");
    await seedVersion(p.project_id, "churny", { schemaHash: "s1", descriptionHash: "d1", firstSeenMs: t0, lastSeenMs: t0 + 1, startups: 2 });
    await seedVersion(p.project_id, "churny", { schemaHash: "s1", descriptionHash: "d2", firstSeenMs: t0 + DAY, lastSeenMs: t0 + 2 * DAY, startups: 5 });
    // Description and schema changed together: not churn.
    await seedVersion(p.project_id, "evolving", { schemaHash: "s1", descriptionHash: "d1", firstSeenMs: t0, lastSeenMs: t0 });
    await seedVersion(p.project_id, "evolving", { schemaHash: "s2", descriptionHash: "d2", firstSeenMs: t0 + DAY, lastSeenMs: t0 + DAY });
    await seedRegistered(p.project_id, "churny", { descriptionNorm: "aaaa11112222" });
    await seedRegistered(p.project_id, "twin", { descriptionNorm: "aaaa11112222" });
    await seedRegistered(p.project_id, "other", { descriptionNorm: "bbbb11112222" });
    await seedRegistered(p.project_id, "blank1", { descriptionNorm: "e3b0c44298fc" });
    await seedRegistered(p.project_id, "blank2", { descriptionNorm: "e3b0c44298fc" });
    await seedRegistered(p.project_id, "unknown1", { descriptionNorm: null });
    await seedRegistered(p.project_id, "unknown2", { descriptionNorm: null });
    const { body } = await getJson<{ churn: Body[]; convergence: Body[] }>("/v1/metrics/descriptions", p.read_key);
    expect(Object.keys(body)).toEqual(["as_of", "churn", "convergence"]);
    expect(body.churn).toEqual([
      {
        tool_name: "churny", schema_hash: "s1", registered: true, description_versions: 2,
        descriptions: [
          { description_hash: "d1", first_seen: "2026-08-01T00:00:00.000Z", last_seen: "2026-08-01T00:00:00.001Z", startups: 2 },
          { description_hash: "d2", first_seen: "2026-08-02T00:00:00.000Z", last_seen: "2026-08-03T00:00:00.000Z", startups: 5 },
        ],
      },
    ]);
    // SPEC §2.5: the same latest norm converges, the norm of an empty description included; a tool
    // whose producer sent no norm is left out.
    expect(body.convergence).toEqual([
      { description_norm: "aaaa11112222", tools: ["churny", "twin"] },
      { description_norm: "e3b0c44298fc", tools: ["blank1", "blank2"] },
    ]);
    const other = await getJson<{ churn: Body[]; convergence: Body[] }>("/v1/metrics/descriptions?tool=other", p.read_key);
    expect(other.body).toMatchObject({ churn: [], convergence: [] });
    const twin = await getJson<{ churn: Body[]; convergence: Body[] }>("/v1/metrics/descriptions?tool=twin", p.read_key);
    expect(twin.body.convergence).toHaveLength(1);
    expect(twin.body.churn).toEqual([]);
  });
});

describe("GET /v1/metrics/agreement", () => {
  it("sums checks and disagreements per (field, tool_a, tool_b) and lists silent declared fields", async () => {
    const p = await createProject();
    await seedAgreement(p.project_id, "2026-08-01", "price", "quote", "invoice", 10, 1);
    await seedAgreement(p.project_id, "2026-08-02", "price", "quote", "invoice", 10, 3);
    await seedAgreement(p.project_id, "2026-08-05", "stock", "inventory", "catalog", 4, 4);
    await seedDeclaration(p.project_id, "price", "quote");
    await seedDeclaration(p.project_id, "price", "invoice");
    await seedDeclaration(p.project_id, "stock", "inventory");
    await seedDeclaration(p.project_id, "stock", "catalog");
    const { body } = await getJson<Body>("/v1/metrics/agreement?from=2026-08-01&to=2026-08-02", p.read_key);
    expect(body).toMatchObject({
      from: "2026-08-01",
      to: "2026-08-02",
      agreement: [{ field: "price", tool_a: "quote", tool_b: "invoice", checks: 20, disagreements: 4, disagreement_rate: 0.2 }],
      silent: [{ field: "stock", tools: ["catalog", "inventory"] }],
    });
    const wide = await getJson<Body>("/v1/metrics/agreement?from=2026-08-01&to=2026-08-05&tool=catalog", p.read_key);
    expect(wide.body).toMatchObject({
      agreement: [{ field: "stock", checks: 4, disagreements: 4, disagreement_rate: 1 }],
      silent: [],
    });
  });
});

describe("GET /v1/metrics/schema-regressions", () => {
  it("compares bad_args rate and first-call success 7 days before and after the latest schema change", async () => {
    const p = await createProject();
    const change = Date.parse("2026-09-10T06:10:00Z");
    const changeHour = Date.parse("2026-09-10T06:00:00Z");
    await seedRegistered(p.project_id, "s", { schemaHash: "bbbb" });
    await seedVersion(p.project_id, "s", { schemaHash: "aaaa", descriptionHash: "d", firstSeenMs: change - 9 * DAY, lastSeenMs: change - 40 * 60_000 });
    await seedVersion(p.project_id, "s", { schemaHash: "bbbb", descriptionHash: "d", firstSeenMs: change, lastSeenMs: change + DAY });
    const put = (hourMs: number, client: string, calls: number, bad: number, fco: number) =>
      seedHour({ projectId: p.project_id, hourMs, tool: "s", client, counters: { calls, ok: calls - bad, bad_args: bad, first_call_attempts: calls, first_call_ok: fco } });
    await put(changeHour - HOUR, "c1", 20, 1, 18); // before
    await put(changeHour - 7 * DAY, "c2", 10, 0, 10); // before, first hour of the window
    await put(changeHour - 7 * DAY - HOUR, "c1", 100, 100, 0); // outside the window
    await put(changeHour, "c1", 50, 50, 0); // the change hour: mixed, left out
    await put(changeHour + HOUR, "c1", 20, 5, 12); // after
    await put(changeHour + HOUR + 7 * DAY, "c1", 100, 100, 0); // outside the window
    // A tool with one schema only, and one registered without a hash: never listed.
    await seedRegistered(p.project_id, "steady", { schemaHash: "cccc" });
    await seedVersion(p.project_id, "steady", { schemaHash: "cccc", descriptionHash: "d", firstSeenMs: change - DAY, lastSeenMs: change });
    await seedRegistered(p.project_id, "nohash", { schemaHash: null });

    const { body } = await getJson<{ window_days: number; regressions: Body[] }>("/v1/metrics/schema-regressions", p.read_key);
    expect(body.window_days).toBe(7);
    expect(body.regressions).toEqual([
      {
        tool_name: "s", schema_hash: "bbbb", previous_schema_hash: "aaaa", changed_at: "2026-09-10T06:10:00.000Z",
        before: { from: "2026-09-03T06:00:00.000Z", to: "2026-09-10T06:00:00.000Z", calls: 30, bad_args: 1, bad_args_rate: 0.0333, first_call_attempts: 30, first_call_ok: 28, first_call_rate: 0.9333 },
        after: { from: "2026-09-10T07:00:00.000Z", to: "2026-09-17T07:00:00.000Z", calls: 20, bad_args: 5, bad_args_rate: 0.25, first_call_attempts: 20, first_call_ok: 12, first_call_rate: 0.6 },
        bad_args_rate_change: 0.2167, first_call_rate_change: -0.3333, regressed: true,
      },
    ]);
    // client c1 only: before has 20 calls (c2's 10 drop out).
    const c1 = await getJson<{ regressions: Body[] }>("/v1/metrics/schema-regressions?client=c1", p.read_key);
    expect(c1.body.regressions[0]).toMatchObject({ before: { calls: 20, bad_args_rate: 0.05 }, regressed: true });
    // client c2: no calls after → not enough to call it a regression.
    const c2 = await getJson<{ regressions: Body[] }>("/v1/metrics/schema-regressions?client=c2", p.read_key);
    expect(c2.body.regressions[0]).toMatchObject({ after: { calls: 0, bad_args_rate: null }, bad_args_rate_change: null, regressed: false });
    const other = await getJson<{ regressions: Body[] }>("/v1/metrics/schema-regressions?tool=steady", p.read_key);
    expect(other.body.regressions).toEqual([]);
  });

  it("dates a return to an older schema from the last sighting of the schema in between", async () => {
    const p = await createProject();
    const t = Date.parse("2026-09-01T00:00:00Z");
    await seedRegistered(p.project_id, "flip", { schemaHash: "aaaa" });
    await seedVersion(p.project_id, "flip", { schemaHash: "aaaa", descriptionHash: "d", firstSeenMs: t, lastSeenMs: t + 5 * DAY });
    await seedVersion(p.project_id, "flip", { schemaHash: "bbbb", descriptionHash: "d", firstSeenMs: t + DAY, lastSeenMs: t + 3 * DAY });
    const { body } = await getJson<{ regressions: Body[] }>("/v1/metrics/schema-regressions", p.read_key);
    expect(body.regressions[0]).toMatchObject({ changed_at: "2026-09-04T00:00:00.000Z", previous_schema_hash: "bbbb", regressed: false });
  });
});

describe("as_of on every answer", () => {
  it("is present on every endpoint", async () => {
    const p = await createProject();
    await setAsOf(Date.parse("2026-08-01T00:05:00Z"));
    for (const endpoint of ["tools", "clients", "pairs", "sessions", "timeseries", "descriptions", "agreement", "insights", "schema-regressions"]) {
      const { status, body } = await getJson<Body>(`/v1/metrics/${endpoint}`, p.read_key);
      expect(status).toBe(200);
      expect(body.as_of, endpoint).toBe("2026-08-01T00:05:00.000Z");
    }
  });
});
