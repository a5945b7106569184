// The retry rule's one definition (src/worker/retry-rule.ts): pinned to SPEC §2.2's edges, its SQL
// evaluated in D1 against its JavaScript, the rollup's statements built from its fragments, and every
// margin that follows from it (the span reach, retention's cutoff, the final days, the recompute's
// frozen days) checked against the rule itself — so a margin typed by hand, or an SQL fragment edited
// apart from the definition, fails here.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_DURATION_MS } from "../../src/shared/limits.ts";
import { MAX_PAST_MS } from "../../src/shared/timestamp.ts";
import { FINAL_AFTER_MS } from "../../src/worker/metrics/final-days.ts";
import {
  FLAG_REACHES, MAX_FLAG_REACH_MS, MAX_RETRY_REACH_MS, RETRY_WINDOW_MS, flagReachSql, gapMicros, inRetryWindow, isRetryOf,
  isRetryOfSql, retryReachMs, type RuleCall,
} from "../../src/worker/retry-rule.ts";
import { CALL_CHUNK_SQL, CHUNK_SELECTION_SQL, DURATIONS_AFTER_MS, DURATIONS_BEFORE_MS, IS_RETRY_SQL, WAS_RETRIED_SQL } from "../../src/worker/rollup/calls.ts";
import { NEEDED_BY_LATE_CALLS_MS } from "../../src/worker/rollup/retention.ts";
import { RECOMPUTE_LOOKBACK_MS, RECOMPUTE_SQL, recomputeFromMs } from "../../src/worker/rollup/recompute.ts";
import { DAY_MS, HOUR_MS } from "../../src/worker/time.ts";

const T = Date.UTC(2026, 10, 20, 10);
type Case = { c: RuleCall & { args_hash: string }; n: { started_at_ms: number; args_hash: string } };
const at = (start: number, duration: number, hash = "a") => ({ started_at_ms: start, duration_ms: duration, args_hash: hash });

/** SPEC §2.2 word for word: `0 ≤ gap ≤ 30,000 ms` after c's end, and another args_hash. */
const SPEC_CASES: [string, Case, boolean][] = [
  ["gap exactly 0", { c: at(T, 250), n: at(T + 250, 0, "b") }, true],
  ["gap 1 µs under 0 (overlap)", { c: at(T, 250), n: at(T + 249.999, 0, "b") }, false],
  ["gap exactly 30,000 ms", { c: at(T, 250), n: at(T + 30_250, 0, "b") }, true],
  ["gap 1 µs over 30,000 ms", { c: at(T, 250), n: at(T + 30_250.001, 0, "b") }, false],
  ["gap 30,001 ms", { c: at(T, 250), n: at(T + 30_251, 0, "b") }, false],
  // x.123 + 30,000 and a separately parsed (x + 30,000).123 are not the same double.
  ["fractional starts exactly 30,000 ms apart", { c: at(T + 0.123, 0), n: at(T + 30_000.123, 0, "b") }, true],
  ["fractional starts exactly 0 ms apart", { c: at(T + 0.1, 0), n: at(T + 0.1, 0, "b") }, true],
  ["a day-long call retried 30 s after its end", { c: at(T, MAX_DURATION_MS), n: at(T + MAX_DURATION_MS + 30_000, 0, "b") }, true],
  ["same hash inside the window (pagination)", { c: at(T, 250), n: at(T + 1_000, 0, "a") }, false],
];

describe("the rule's definition", () => {
  it.each(SPEC_CASES)("%s", (_name, { c, n }, expected) => {
    expect(isRetryOf(c, n)).toBe(expected);
  });

  it("compares whole microseconds: the gap of starts given with any float error rounds to the µs", () => {
    expect(gapMicros({ started_at_ms: 0.1 + 0.2, duration_ms: 0 }, { started_at_ms: 30_000.3 })).toBe(30_000_000);
  });
});

/** Evaluates isRetryOfSql in D1 for many (c, n), in one statement over a JSON list. */
async function sqlVerdicts(cases: Case[]): Promise<boolean[]> {
  const fragment = isRetryOfSql(
    { startedAt: "(j.value ->> '$.c.started_at_ms')", duration: "(j.value ->> '$.c.duration_ms')", argsHash: "(j.value ->> '$.c.args_hash')" },
    { startedAt: "(j.value ->> '$.n.started_at_ms')", argsHash: "(j.value ->> '$.n.args_hash')" },
  );
  const { results } = await env.DB.prepare(`SELECT COALESCE(${fragment}, 0) AS retry FROM json_each(?1) AS j ORDER BY j.key`)
    .bind(JSON.stringify(cases)).all<{ retry: number }>();
  return results.map((r) => r.retry === 1);
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  start: fc.integer({ min: 0, max: 10 * DAY_MS }),
  startMicros: fc.integer({ min: 0, max: 999 }),
  duration: fc.constantFrom(0, 1, 250, 29_999, 30_000, MAX_DURATION_MS),
  gapMicros: fc.oneof(
    fc.constantFrom(-1, 0, 1, RETRY_WINDOW_MS * 1000 - 1, RETRY_WINDOW_MS * 1000, RETRY_WINDOW_MS * 1000 + 1),
    fc.integer({ min: -2_000_000, max: 2 * RETRY_WINDOW_MS * 1000 }),
  ),
  nMicros: fc.integer({ min: 0, max: 999 }),
  sameHash: fc.boolean(),
}).map(({ start, startMicros, duration, gapMicros: gap, sameHash }) => {
  const cStart = T + start + startMicros / 1000;
  // n's start as a producer would send it: whole microseconds, parsed separately from c's.
  const nMicros = Math.round(cStart * 1000) + duration * 1000 + gap;
  return { c: at(cStart, duration), n: at(Number(`${Math.floor(nMicros / 1000)}.${String(nMicros % 1000).padStart(3, "0")}`), 0, sameHash ? "a" : "b") };
});

describe("the SQL of the rule", () => {
  it("agrees with the JavaScript on SPEC §2.2's edges", async () => {
    const cases = SPEC_CASES.map(([, c]) => c);
    expect(await sqlVerdicts(cases)).toEqual(SPEC_CASES.map(([, , expected]) => expected));
  });

  it("agrees with the JavaScript on random gaps around both edges, fractional starts and day-long calls", async () => {
    const cases = fc.sample(caseArb, { numRuns: 2_000, seed: 22 });
    const verdicts = await sqlVerdicts(cases);
    const disagree = cases.filter((c, i) => verdicts[i] !== isRetryOf(c.c, c.n));
    expect(disagree).toEqual([]);
    // Both edges are met (a sample that never lands on them would prove nothing about them).
    expect(cases.some((c) => gapMicros(c.c, c.n) === 0) && cases.some((c) => gapMicros(c.c, c.n) === RETRY_WINDOW_MS * 1000)).toBe(true);
  });

  it("is what the rollup's statements use: its flags and span reach are the generated fragments, and no window is typed", () => {
    expect(CALL_CHUNK_SQL.applyHourDeltas).toContain(IS_RETRY_SQL);
    expect(CALL_CHUNK_SQL.applyHourDeltas).toContain(WAS_RETRIED_SQL);
    expect(CHUNK_SELECTION_SQL).toContain(`cl.lo - ${flagReachSql("cl.reach")}`);
    expect(CHUNK_SELECTION_SQL).toContain(`cl.hi + ${flagReachSql("cl.reach")}`);
    // Each span's exact time reach, which the hour-row statement keeps the loaded calls within.
    expect(CHUNK_SELECTION_SQL).toContain(`lo - ${flagReachSql("reach")} AS reach_from_ms, hi + ${flagReachSql("reach")} AS reach_to_ms`);
    expect(RECOMPUTE_SQL.countHours).toContain(IS_RETRY_SQL);
    expect(RECOMPUTE_SQL.countHours).toContain(WAS_RETRIED_SQL);
    // With the generated fragments taken out, no statement holds the window (in ms or µs) of its own.
    const fragments = [IS_RETRY_SQL, WAS_RETRIED_SQL, flagReachSql("cl.reach"), flagReachSql("reach")];
    for (const sql of [CHUNK_SELECTION_SQL, ...Object.values(CALL_CHUNK_SQL), ...Object.values(RECOMPUTE_SQL)]) {
      const rest = fragments.reduce((s, f) => s.split(f).join(""), sql);
      expect(rest).not.toMatch(new RegExp(`\\b(${RETRY_WINDOW_MS}|${RETRY_WINDOW_MS * 1000})\\b`));
    }
  });
});

/**
 * The farthest after a call `c` of duration `d` a call that retries it can start, found from the
 * rule itself (isRetryOf), not from the constants: the largest whole-µs start where it still holds.
 */
function farthestRetryStart(d: number): number {
  const c = at(T, d);
  let lo = d * 1000; // gap 0: a retry
  let hi = lo + 10 * DAY_MS * 1000; // far beyond any window: not one
  expect(isRetryOf(c, at(T + lo / 1000, 0, "b"))).toBe(true);
  expect(isRetryOf(c, at(T + hi / 1000, 0, "b"))).toBe(false);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (isRetryOf(c, at(T + mid / 1000, 0, "b"))) lo = mid;
    else hi = mid;
  }
  return lo / 1000;
}

describe("every margin follows from the rule", () => {
  const farthest = farthestRetryStart(MAX_DURATION_MS);

  it("the retry reach is how far a retry of a call can start after it", async () => {
    for (const d of [0, 250, 30_000, MAX_DURATION_MS]) expect(retryReachMs(d)).toBe(farthestRetryStart(d));
    expect(MAX_RETRY_REACH_MS).toBe(farthest);
    // The span's reach in SQL, for durations read from rows: FLAG_REACHES retry reaches.
    const durations = [0, 250, 30_000, 3_600_000, MAX_DURATION_MS];
    const { results } = await env.DB.prepare(`SELECT ${flagReachSql("j.value")} AS reach FROM json_each(?1) AS j ORDER BY j.key`)
      .bind(JSON.stringify(durations)).all<{ reach: number }>();
    expect(results.map((r) => r.reach)).toEqual(durations.map((d) => FLAG_REACHES * farthestRetryStart(d)));
  });

  it("a chain pp → p → c of farthest retries spans the flag reach, which the rollup's row lookups and retention cover", () => {
    const pp = at(T, MAX_DURATION_MS, "a");
    const p = at(T + farthest, MAX_DURATION_MS, "b");
    const c = at(T + 2 * farthest, 0, "c");
    expect(isRetryOf(pp, p) && isRetryOf(p, c)).toBe(true);
    expect(MAX_FLAG_REACH_MS).toBe(c.started_at_ms - pp.started_at_ms);
    // The durations the cluster's reach reads: p's and pp's rows before it, n's after it.
    expect(DURATIONS_BEFORE_MS).toBe(c.started_at_ms - pp.started_at_ms);
    expect(DURATIONS_AFTER_MS).toBe(farthest);
    // A call still accepted (7 days old) may need pp: retention keeps it.
    expect(NEEDED_BY_LATE_CALLS_MS).toBe(MAX_PAST_MS + (c.started_at_ms - pp.started_at_ms));
  });

  it("a day is final once no accepted call can still retry into it, and an hour for clocks", () => {
    expect(FINAL_AFTER_MS - HOUR_MS).toBe(MAX_PAST_MS + farthest);
  });

  it("the recompute reads back one farthest retry before its first day and freezes the days before", () => {
    expect(RECOMPUTE_LOOKBACK_MS).toBe(farthest);
    const kept = Date.UTC(2026, 10, 1, 4);
    const from = recomputeFromMs(kept);
    expect(from % DAY_MS).toBe(0);
    expect(from - RECOMPUTE_LOOKBACK_MS).toBeGreaterThanOrEqual(kept);
    expect(from - DAY_MS - RECOMPUTE_LOOKBACK_MS).toBeLessThan(kept);
  });
});
