// The SQL builder's golden snapshots (SPEC §8, STYLE "SQL a reviewer reads as SQL"): each named
// query's SQL is checked in as test/analytics/sql/<name>.sql, and a change to the builder that
// changes any of them fails here until the snapshot is updated (`vitest -u`) and reviewed.
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseExploreQuery, type ExploreQuery } from "../../src/worker/analytics/explore-query.ts";
import { exploreSql, hourlyCallsSql, sqlString } from "../../src/worker/analytics/explore-sql.ts";

/** A fixed clock: 2026-12-02T12:00:00Z. */
const NOW = Date.UTC(2026, 11, 2, 12);

function query(params: Record<string, string | string[]>): ExploreQuery {
  const parsed = parseExploreQuery(params, NOW);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.query;
}

export const GOLDEN: Record<string, Record<string, string | string[]>> = {
  "calls-last-7-days": {},
  "every-measure-by-tool": {
    measure: "calls,errors,error_rate,bad_args,tool_errors,crashes,empty_rate,p50,p95,p99,mean_ms,response_bytes,distinct_args,distinct_sessions",
    by: "tool",
    limit: "10",
  },
  "bad-args-by-tool-and-client-per-hour": {
    measure: ["bad_args", "calls"],
    by: ["tool", "client"],
    grain: "hour",
    from: "2026-12-01",
    to: "2026-12-01",
    "filter[outcome]": ["bad_args", "crashed"],
    "filter[client]": "claude-ai",
  },
  "p95-per-day-hostile-tool-name": {
    measure: "p95",
    grain: "day",
    from: "2026-11-01T00:00:00Z",
    to: "2026-11-30T12:30:00+02:00",
    "filter[tool]": "it's a \\ tool 'quoted' ünïcödé 🎉",
  },
  "sessions-by-kind-and-version": {
    measure: "distinct_sessions,calls",
    by: "session_kind,protocol_version",
    "filter[transport]": "http",
    "filter[session_id]": "",
  },
};

const SQL_DIR = fileURLToPath(new URL("./sql/", import.meta.url));

describe("exploreSql golden snapshots", () => {
  for (const [name, params] of Object.entries(GOLDEN)) {
    it(`${name}.sql is the builder's output`, async () => {
      await expect(exploreSql(query(params), { projectId: "prj_golden" })).toMatchFileSnapshot(`./sql/${name}.sql`);
    });
  }

  it("reconcile-hourly-calls.sql is the reconciliation's SQL", async () => {
    await expect(hourlyCallsSql(NOW - 3 * 3_600_000, NOW)).toMatchFileSnapshot("./sql/reconcile-hourly-calls.sql");
  });

  it("has no snapshot without a query (a removed case leaves no stale file)", () => {
    const files = readdirSync(SQL_DIR).filter((f) => f.endsWith(".sql")).sort();
    expect(files).toEqual([...Object.keys(GOLDEN), "reconcile-hourly-calls"].map((n) => `${n}.sql`).sort());
  });

  it("is pure: the same query gives the same text", () => {
    const q = query(GOLDEN["every-measure-by-tool"]!);
    expect(exploreSql(q, { projectId: "p" })).toBe(exploreSql(structuredClone(q), { projectId: "p" }));
  });

  it("refuses a table name that is not an identifier", () => {
    expect(() => exploreSql(query({}), { projectId: "p", table: "x; DROP TABLE y" })).toThrow();
    expect(exploreSql(query({}), { projectId: "p", table: "analytics_engine.mcpulse_calls" })).toContain("FROM analytics_engine.mcpulse_calls");
  });
});

describe("sqlString", () => {
  it.each([
    ["plain", "'plain'"],
    ["it's", "'it''s'"],
    ["back\\slash", "'back\\\\slash'"],
    ["\\'", "'\\\\'''"],
    ["ünï 🎉", "'ünï 🎉'"],
    ["", "''"],
  ])("quotes %j as %s", (value, literal) => {
    expect(sqlString(value)).toBe(literal);
  });

  it.each(["\u0000", "a\nb", "\u007f", "x\u001fy"])("refuses a control character (%j)", (value) => {
    expect(() => sqlString(value)).toThrow();
  });

  it("puts the project id from the target, escaped, and nothing else from outside", () => {
    const sql = exploreSql(query({}), { projectId: "prj_'x" });
    expect(sql).toContain("index1 = 'prj_''x'");
  });
});
