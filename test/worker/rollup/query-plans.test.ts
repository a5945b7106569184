// Every rollup statement must reach call_state (the raw calls, one row per session, client and
// hour) by its key, never by scanning it: a scan per chunk makes a rollup's cost grow with the
// whole table (docs/benchmarks.md, bench:rollup). Checked on D1's own query planner.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AGREEMENT_CHUNK_SQL } from "../../../src/worker/rollup/agreements.ts";
import { CALL_CHUNK_SQL, CHUNK_SELECTION_SQL } from "../../../src/worker/rollup/calls.ts";
import { RETENTION_SQL } from "../../../src/worker/rollup/retention.ts";
import { STARTUP_CHUNK_SQL } from "../../../src/worker/rollup/startups.ts";

/** Aliases the statements give call_state / raw_startups / raw_agreements. */
const RAW_ALIASES = /^SCAN (call_state|raw_startups|raw_agreements|cs|x|y|r|r2)\b/;

async function plan(sql: string): Promise<string[]> {
  const params = [10, 10, 10, 10].slice(0, Math.max(0, ...[...sql.matchAll(/\?(\d)/g)].map((m) => Number(m[1]))));
  const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...params).all<{ detail: string }>();
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
      const scans = (await plan(sql)).filter((d) => RAW_ALIASES.test(d));
      expect(scans).toEqual(EARLY_STOPPING_SCANS[name] ?? []);
    });
  }

  it("would notice a scan (the check itself works)", async () => {
    const scans = (await plan("SELECT COUNT(*) FROM call_state WHERE max_duration_ms > ?1")).filter((d) => RAW_ALIASES.test(d));
    expect(scans.length).toBeGreaterThan(0);
  });
});
