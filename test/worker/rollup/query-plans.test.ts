// Every rollup statement must reach call_state (the raw calls, one row per session, client and
// hour) by its key, never by scanning it: a scan per chunk makes a rollup's cost grow with the
// whole table (docs/benchmarks.md, bench:rollup). Checked on D1's own query planner.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AGREEMENT_CHUNK_SQL } from "../../../src/worker/rollup/agreements.ts";
import { CALL_CHUNK_SQL, CHUNK_SELECTION_SQL } from "../../../src/worker/rollup/calls.ts";
import { RETENTION_SQL } from "../../../src/worker/rollup/retention.ts";
import { STARTUP_CHUNK_SQL } from "../../../src/worker/rollup/startups.ts";
import { compileNamed, namedStatement } from "../../../src/worker/db/named-sql.ts";

const RAW_TABLES = ["call_state", "raw_startups", "raw_agreements"];
const NOT_AN_ALIAS = new Set(["WHERE", "JOIN", "LEFT", "INNER", "CROSS", "ON", "SET", "GROUP", "ORDER", "LIMIT", "USING", "VALUES", "UNION", "AS", "INDEXED", "NOT", "DEFAULT", "SELECT", "RETURNING"]);

/**
 * The names a scan of a raw table can carry in `sql`'s plan: the tables, and every alias the
 * statement gives them (`FROM call_state AS cs`, `JOIN raw_startups r`), read from the statement
 * itself so that a renamed alias is still checked.
 */
function rawNames(sql: string): Set<string> {
  const names = new Set(RAW_TABLES);
  for (const m of sql.matchAll(/\b(call_state|raw_startups|raw_agreements)\s+(?:AS\s+)?([A-Za-z_]\w*)/gi)) {
    if (!NOT_AN_ALIAS.has((m[2] as string).toUpperCase())) names.add(m[2] as string);
  }
  return names;
}

/** The plan's full scans of a raw table (under its name or an alias). */
async function rawScans(sql: string): Promise<string[]> {
  const names = rawNames(sql);
  return (await plan(sql)).filter((detail) => {
    const scanned = /^SCAN (\w+)/.exec(detail)?.[1];
    return scanned !== undefined && names.has(scanned);
  });
}

async function plan(sql: string): Promise<string[]> {
  const params = Object.fromEntries(compileNamed(sql).names.map((name) => [name, 10]));
  const { results } = await namedStatement(env.DB, `EXPLAIN QUERY PLAN ${sql}`, params).all<{ detail: string }>();
  return results.map((r) => r.detail);
}

// Retention of startups and verdicts finds "the first row received at or after the cutoff" by
// walking the table in call_seq order from its start: everything before that row is deleted by
// the same statement, so the walk reads the rows it deletes and stops at the first one it keeps.
// Retention of call_state runs once a day and reads the whole table (one row per session,
// client and hour, not per call) to find the hours before the cutoff: by design, outside the rollup.
const EARLY_STOPPING_SCANS: Record<string, string[]> = {
  deleteStartups: ["SCAN raw_startups"],
  deleteAgreements: ["SCAN raw_agreements"],
  deleteCalls: ["SCAN x"],
  trimKeptCalls: ["SCAN x"],
};

describe("rollup query plans", () => {
  const all = { chooseCallChunk: CHUNK_SELECTION_SQL, ...CALL_CHUNK_SQL, ...STARTUP_CHUNK_SQL, ...AGREEMENT_CHUNK_SQL, ...RETENTION_SQL };
  for (const [name, sql] of Object.entries(all)) {
    it(`${name} never scans a raw table`, async () => {
      expect(await rawScans(sql)).toEqual(EARLY_STOPPING_SCANS[name] ?? []);
    });
  }

  it("would notice a scan (the check itself works), under the table's name or any alias", async () => {
    expect((await rawScans("SELECT COUNT(*) FROM call_state WHERE max_duration_ms > :ms")).length).toBeGreaterThan(0);
    expect(await rawScans("SELECT COUNT(*) FROM call_state AS a_new_alias WHERE max_duration_ms > :ms")).toEqual(["SCAN a_new_alias"]);
    expect(await rawScans("SELECT COUNT(*) FROM raw_startups renamed WHERE received_at_ms > :ms")).toEqual(["SCAN renamed"]);
  });

  it("reads the aliases the statements use from the statements", () => {
    const all = { ...CALL_CHUNK_SQL, ...STARTUP_CHUNK_SQL, ...AGREEMENT_CHUNK_SQL, ...RETENTION_SQL };
    const aliases = new Set(Object.values(all).flatMap((sql) => [...rawNames(sql)].filter((n) => !RAW_TABLES.includes(n))));
    // The statements alias the raw tables today; were none found, the alias reading would be broken.
    expect(aliases.size).toBeGreaterThan(0);
    expect(rawNames("UPDATE call_state SET calls_json = ?1 WHERE x = 1")).toEqual(new Set(RAW_TABLES));
  });
});
