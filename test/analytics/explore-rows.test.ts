// From engine rows to Explore's answer: measures from weighted sums, the largest `limit` groups,
// the rest summed as (other) per time bucket, and what the answer says about sampling.
import { describe, expect, it } from "vitest";
import { parseExploreQuery } from "../../src/worker/analytics/explore-query.ts";
import { MAX_SQL_ROWS } from "../../src/worker/analytics/explore-sql.ts";
import { shapeExploreRows } from "../../src/worker/analytics/explore-rows.ts";

const NOW = Date.UTC(2026, 11, 2, 12);
const query = (params: Record<string, string | string[]>) => {
  const parsed = parseExploreQuery(params, NOW);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.query;
};

const raw = (tool: string, calls: number, extra: Record<string, unknown> = {}) => ({
  tool, sum_calls: calls, sum_bad_args: 1, sum_tool_error: 0, sum_crashed: 0, sum_empty: 0, sum_duration_ms_sum: calls * 10,
  sample_interval_max: 1, p95: 40, ...extra,
});

describe("shapeExploreRows", () => {
  it("keeps the largest `limit` groups and sums the rest into (other), additive measures only", () => {
    const q = query({ by: "tool", measure: "calls,errors,error_rate,mean_ms,p95", limit: "2" });
    const shaped = shapeExploreRows(q, [raw("a", 10), raw("b", 30), raw("c", 5), raw("d", 5)]);
    expect(shaped.rows).toEqual([
      { tool: "b", calls: 30, errors: 1, error_rate: 0.0333, mean_ms: 10, p95: 40 },
      { tool: "a", calls: 10, errors: 1, error_rate: 0.1, mean_ms: 10, p95: 40 },
      { tool: "(other)", calls: 10, errors: 2, error_rate: 0.2, mean_ms: 10, p95: null },
    ]);
    expect(shaped).toMatchObject({ sampled: false, sample_interval_max: 1, approximate: [], truncated: false });
  });

  it("keeps exactly `limit` groups without an (other) row when there are no more", () => {
    const shaped = shapeExploreRows(query({ by: "tool", limit: "2" }), [raw("a", 1), raw("b", 2)]);
    expect(shaped.rows.map((r) => r.tool)).toEqual(["b", "a"]);
  });

  it("ranks groups over the whole range and keeps time order per bucket", () => {
    const q = query({ by: "tool", grain: "hour", limit: "1", from: "2026-12-01" , to: "2026-12-01"});
    const h0 = Date.UTC(2026, 11, 1, 0);
    const h1 = h0 + 3_600_000;
    const shaped = shapeExploreRows(q, [raw("a", 5, { bucket_ms: h1 }), raw("b", 4, { bucket_ms: h0 }), raw("b", 4, { bucket_ms: h1 }), raw("a", 1, { bucket_ms: h0 })]);
    expect(shaped.rows).toEqual([
      { time: "2026-12-01T00:00:00.000Z", tool: "b", calls: 4 },
      { time: "2026-12-01T00:00:00.000Z", tool: "(other)", calls: 1 },
      { time: "2026-12-01T01:00:00.000Z", tool: "b", calls: 4 },
      { time: "2026-12-01T01:00:00.000Z", tool: "(other)", calls: 5 },
    ]);
  });

  it("marks every measure approximate when sampled, and distinct counts always", () => {
    const q = query({ measure: "calls,distinct_sessions" });
    expect(shapeExploreRows(q, [{ sum_calls: 3, distinct_sessions: 2, sample_interval_max: 1 }])).toMatchObject({ sampled: false, approximate: ["distinct_sessions"] });
    expect(shapeExploreRows(q, [{ sum_calls: 30, distinct_sessions: 2, sample_interval_max: "10" }])).toMatchObject({
      sampled: true,
      sample_interval_max: 10,
      approximate: ["calls", "distinct_sessions"],
    });
  });

  it("answers no rows when nothing matched (an aggregate's all-zero row is not a row)", () => {
    expect(shapeExploreRows(query({}), [{ sum_calls: 0, sample_interval_max: 0 }]).rows).toEqual([]);
    expect(shapeExploreRows(query({ measure: "error_rate" }), []).rows).toEqual([]);
  });

  it("reads ClickHouse's quoted 64-bit numbers, and says when the engine's rows were cut", () => {
    const rows = Array.from({ length: MAX_SQL_ROWS + 1 }, (_, i) => raw(`t${i}`, 1, { sum_calls: "1" }));
    const shaped = shapeExploreRows(query({ by: "tool", limit: "200" }), rows);
    expect(shaped.truncated).toBe(true);
    expect(shaped.rows).toHaveLength(201);
    expect(shaped.rows.at(-1)).toMatchObject({ tool: "(other)", calls: MAX_SQL_ROWS - 200 });
  });
});
