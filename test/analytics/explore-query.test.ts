// Explore's query model (SPEC §8): every parameter from a fixed list, every limit at, just under and
// just over it, and hostile input answered with our own words and the allowed list — never echoed,
// never reaching SQL.
import { describe, expect, it } from "vitest";
import {
  DIMENSION_NAMES,
  EXPLORE_MAX_FILTER_VALUES,
  EXPLORE_MAX_FILTER_VALUES_TOTAL,
  EXPLORE_MAX_LIMIT,
  EXPLORE_PARAMETERS,
  MEASURES,
  parseExploreQuery,
  reachesPastRetention,
} from "../../src/worker/analytics/explore-query.ts";

const NOW = Date.UTC(2026, 11, 2, 12);
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

function ok(params: Record<string, string | string[]>) {
  const parsed = parseExploreQuery(params, NOW);
  if (!parsed.ok) throw new Error(`expected a query, got: ${parsed.message}`);
  return parsed.query;
}

function refused(params: Record<string, string | string[]>): string {
  const parsed = parseExploreQuery(params, NOW);
  if (parsed.ok) throw new Error("expected a refusal");
  return parsed.message;
}

describe("parseExploreQuery", () => {
  it("defaults to calls over the last 7 days, no breakdown, no grain, 50 groups", () => {
    expect(ok({})).toEqual({ measures: ["calls"], by: [], filters: {}, startMs: NOW - 7 * DAY, endMs: NOW, grain: "none", limit: 50 });
  });

  it("takes measures comma-separated or repeated, in the fixed order, once each", () => {
    expect(ok({ measure: ["p95,calls", "errors", "calls"] }).measures).toEqual(["calls", "errors", "p95"]);
    expect(ok({ measure: MEASURES.join(",") }).measures).toEqual([...MEASURES]);
  });

  it("takes up to two dimensions in `by`, and refuses a third", () => {
    expect(ok({ by: "tool,client" }).by).toEqual(["tool", "client"]);
    expect(ok({ by: ["client", "client"] }).by).toEqual(["client"]);
    expect(refused({ by: "tool,client,outcome" })).toBe("'by' names at most 2 dimensions");
  });

  it("reads a date `to` as its whole day and an instant as itself", () => {
    const q = ok({ from: "2026-11-30", to: "2026-12-01" });
    expect([q.startMs, q.endMs]).toEqual([Date.UTC(2026, 10, 30), Date.UTC(2026, 11, 2)]);
    const i = ok({ from: "2026-12-01T10:00:00+02:00", to: "2026-12-01T09:30:00.123456789Z" });
    expect([iso(i.startMs), iso(i.endMs)]).toEqual(["2026-12-01T08:00:00.000Z", "2026-12-01T09:30:00.123Z"]);
  });

  it.each(["2026-02-30", "2026-13-01", "yesterday", "2026-12-01T25:00:00Z", "2026-12-01T10:00:00", "1e12", "2026-02-30T00:00:00Z"])(
    "refuses %j as a time",
    (from) => {
      expect(refused({ from })).toBe("'from' and 'to' must be dates YYYY-MM-DD or ISO 8601 instants with Z or an offset");
    },
  );

  it("refuses an empty or reversed range", () => {
    expect(refused({ from: iso(NOW), to: iso(NOW) })).toBe("'from' must be before 'to'");
    expect(refused({ from: "2026-12-02", to: "2026-12-01" })).toBe("'from' must be before 'to'");
  });

  it("accepts a range of 366 days and refuses one longer", () => {
    expect(ok({ from: iso(NOW - 366 * DAY), to: iso(NOW) }).startMs).toBe(NOW - 366 * DAY);
    expect(refused({ from: iso(NOW - 366 * DAY - 1), to: iso(NOW) })).toBe("the range is longer than 366 days");
  });

  it("hour grain covers 31 days at most", () => {
    expect(ok({ grain: "hour", from: iso(NOW - 31 * DAY) }).grain).toBe("hour");
    expect(refused({ grain: "hour", from: iso(NOW - 31 * DAY - 1) })).toBe("'grain=hour' covers at most 31 days");
  });

  it("says when a range reaches past the 90 days AE keeps", () => {
    expect(reachesPastRetention(ok({ from: iso(NOW - 90 * DAY) }), NOW)).toBe(false);
    expect(reachesPastRetention(ok({ from: iso(NOW - 90 * DAY - 1) }), NOW)).toBe(true);
  });

  it.each([
    ["1", 1],
    ["199", 199],
    [String(EXPLORE_MAX_LIMIT), 200],
  ])("accepts limit=%s", (limit, expected) => {
    expect(ok({ limit }).limit).toBe(expected);
  });

  it.each(["0", "201", "-1", "1e2", "2.5", "0x10", "99999999999999999999999", " 5", "", "Infinity", "NaN"])("refuses limit=%j", (limit) => {
    expect(refused({ limit })).toBe("'limit' must be a whole number from 1 to 200");
  });

  it("filters: repeatable per dimension, ANDed across dimensions", () => {
    expect(ok({ "filter[tool]": ["a", "b", "a"], "filter[outcome]": "ok" }).filters).toEqual({ tool: ["a", "b"], outcome: ["ok"] });
  });

  it("filter values: at and over the count limits", () => {
    const list = (n: number, p = "t") => Array.from({ length: n }, (_, i) => `${p}${i}`);
    expect(ok({ "filter[tool]": list(EXPLORE_MAX_FILTER_VALUES) }).filters.tool).toHaveLength(20);
    expect(refused({ "filter[tool]": list(EXPLORE_MAX_FILTER_VALUES + 1) })).toBe("'filter[tool]' lists more than 20 values");
    const split = { "filter[tool]": list(20), "filter[client]": list(20, "c"), "filter[colo]": list(10, "k") };
    expect(Object.keys(ok(split).filters)).toHaveLength(3);
    expect(refused({ ...split, "filter[country]": "DE" })).toBe(`more than ${EXPLORE_MAX_FILTER_VALUES_TOTAL} filter values in all`);
  });

  it("a tool name of 200 characters is a filter; 201 is not (code points, as the wire counts)", () => {
    expect(ok({ "filter[tool]": "🎉".repeat(200) }).filters.tool).toEqual(["🎉".repeat(200)]);
    expect(refused({ "filter[tool]": "t".repeat(201) })).toBe("'filter[tool]' has a value ingest could not have stored (up to 200 characters, no control characters)");
  });

  it("an enum dimension's filter names the values it allows", () => {
    expect(refused({ "filter[outcome]": "'; DROP TABLE x; --" })).toBe(
      "'filter[outcome]' has a value ingest could not have stored (one of: ok, bad_args, tool_error, crashed)",
    );
    expect(refused({ "filter[args_hash]": "ABC" })).toBe("'filter[args_hash]' has a value ingest could not have stored (4 to 64 lowercase hex digits)");
  });

  it("an empty session_id filter means calls without a session; an empty tool is refused", () => {
    expect(ok({ "filter[session_id]": "" }).filters.session_id).toEqual([""]);
    expect(refused({ "filter[tool]": "" })).toContain("'filter[tool]'");
  });

  it.each(["a'b", "back\\slash", "🎉 ünï", "'; DROP TABLE mcpulse_calls; --", "\\'"])("keeps a quoted or unicode tool name %j as it is (escaped by the builder)", (tool) => {
    expect(ok({ "filter[tool]": tool }).filters.tool).toEqual([tool]);
  });

  describe("hostile input is refused in our own words, never echoed", () => {
    const cases: [string, Record<string, string | string[]>, string][] = [
      ["NUL in a filter", { "filter[tool]": "a\u0000b" }, "'filter[tool]' has a value"],
      ["a newline in a filter", { "filter[client]": "a\nb" }, "'filter[client]' has a value"],
      ["a measure that is SQL", { measure: "calls) FROM x --" }, `'measure' must be among: ${MEASURES.join(", ")}`],
      ["a quoted measure", { measure: "'calls'" }, "'measure' must be among:"],
      ["a column name as a dimension", { by: "blob1" }, `'by' must be among: ${DIMENSION_NAMES.join(", ")}`],
      ["an unknown filter", { "filter[blob1]": "x" }, `unknown parameter (allowed: ${EXPLORE_PARAMETERS.join(", ")})`],
      ["the project index", { index1: "prj_other" }, "unknown parameter (allowed:"],
      ["a project parameter", { project_id: "prj_other" }, "unknown parameter (allowed:"],
      ["a huge grain", { grain: "x".repeat(100_000) }, "'grain' must be among: none, hour, day"],
      ["a repeated grain", { grain: ["hour", "day"] }, "parameter 'grain' is given more than once"],
      ["an empty measure list", { measure: "," }, "'measure' must be among:"],
    ];
    it.each(cases)("%s", (_, params, message) => {
      const got = refused(params);
      expect(got.startsWith(message)).toBe(true);
      for (const value of Object.values(params).flat()) if (value.length > 3 && !EXPLORE_PARAMETERS.includes(value)) expect(got).not.toContain(value);
      for (const key of Object.keys(params)) if (!EXPLORE_PARAMETERS.includes(key)) expect(got).not.toContain(key);
    });
  });

  it("lists every parameter once in the allowed list", () => {
    expect(new Set(EXPLORE_PARAMETERS).size).toBe(EXPLORE_PARAMETERS.length);
    expect(EXPLORE_PARAMETERS).toContain("filter[session_kind]");
  });
});
