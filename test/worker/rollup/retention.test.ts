// SPEC §2.6 raw-row retention: RAW_RETENTION_DAYS (default 30, never under 8); never a row the
// rollup has not folded in, never a row a future rollup needs; counters survive it unchanged.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { parseRetentionDays, retentionCutoffMs, runRetention, runRollup } from "../../../src/worker/rollup/index.ts";
import { call, calls, countingDb, deliver, resetDb, snapshot, type TestCall, type TestPayload, type TestStartup } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";

const db = env.DB;
const DAY = 86_400_000;
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 21, 3, 30); // the daily cron's time
const CUTOFF_30 = Date.UTC(2026, 9, 22, 2); // NOW − 30 days − 1 hour, on the hour

beforeEach(() => resetDb(db));

/** The starts of the raw calls kept (call_state holds one row per session, client and hour). */
async function rawCallStarts(): Promise<number[]> {
  const { results } = await db
    .prepare("SELECT j.value ->> 2 AS started_at_ms FROM call_state, json_each(calls_json) AS j ORDER BY started_at_ms, j.value ->> 0")
    .all<{ started_at_ms: number }>();
  return results.map((r) => r.started_at_ms);
}

describe("RAW_RETENTION_DAYS", () => {
  it("defaults to 30 and is never under 8", () => {
    expect(parseRetentionDays(undefined)).toBe(30);
    expect(parseRetentionDays("")).toBe(30);
    expect(parseRetentionDays("thirty")).toBe(30);
    expect(parseRetentionDays("30")).toBe(30);
    expect(parseRetentionDays("9")).toBe(9);
    expect(parseRetentionDays("8")).toBe(8);
    expect(parseRetentionDays("7")).toBe(8);
    expect(parseRetentionDays("0")).toBe(8);
    expect(parseRetentionDays("-3")).toBe(8);
  });

  it("cuts at least 8 days and an hour back, on the hour", () => {
    expect(retentionCutoffMs(NOW, 30)).toBe(CUTOFF_30);
    // 8 and 9 days keep 9 days, a minute and an hour: a 7-day-old call may need the two days of
    // neighbours before it (src/worker/rollup/calls.ts).
    const eight = retentionCutoffMs(NOW, 8);
    expect(eight).toBe(Date.UTC(2026, 10, 12, 2));
    expect(retentionCutoffMs(NOW, 7)).toBe(eight);
    expect(retentionCutoffMs(NOW, 1)).toBe(eight);
    expect(retentionCutoffMs(NOW, 9)).toBe(eight);
    expect(retentionCutoffMs(NOW, 10)).toBe(eight - DAY);
    expect(NOW - eight).toBeGreaterThanOrEqual(8 * DAY + HOUR);
  });
});

describe("retention", () => {
  it("deletes rolled-up hours before the cutoff, keeping each session's latest one; a call at the cutoff stays", async () => {
    await deliver(
      db,
      calls([
        call({ session_id: "s1", started_at_ms: CUTOFF_30 - 3 * DAY }),
        call({ session_id: "s1", started_at_ms: CUTOFF_30 - 2 * DAY, tool_name: "fetch" }),
        call({ session_id: "s1", started_at_ms: CUTOFF_30 - 1 }),
        call({ session_id: "s1", started_at_ms: CUTOFF_30 }),
        call({ session_id: "s2", started_at_ms: CUTOFF_30 - 5 * DAY }),
        call({ session_id: "s2", started_at_ms: CUTOFF_30 - 4 * DAY }),
      ]),
      NOW - 40 * DAY,
    );
    await runRollup(db, NOW);
    const before = await snapshot(db);
    const r = await runRetention(db, NOW, { retentionDays: 30 });
    expect(r).toMatchObject({ cutoffMs: CUTOFF_30, deletedCallRows: 3, caughtUp: true });
    expect(await rawCallStarts()).toEqual([CUTOFF_30 - 4 * DAY, CUTOFF_30 - 1, CUTOFF_30]);
    expect(await snapshot(db)).toEqual(before); // counters are kept forever
  });

  it("cuts the row kept for a session's pairs down to its latest call; a later call still pairs with it", async () => {
    const early = [0, 1, 2].map((i) => call({ started_at_ms: CUTOFF_30 - 2 * HOUR + i * 60_000, tool_name: ["search", "fetch", "list"][i]! }));
    const received: Received<TestCall>[] = early.map((item, seq) => ({ seq, received_at_ms: NOW - 40 * DAY, item }));
    await deliver(db, calls(early), NOW - 40 * DAY);
    await runRollup(db, NOW);
    const r = await runRetention(db, NOW);
    expect(r).toMatchObject({ deletedCallRows: 0, trimmedCallRows: 1 });
    expect(await rawCallStarts()).toEqual([CUTOFF_30 - 2 * HOUR + 120_000]);
    expect((await runRetention(db, NOW)).trimmedCallRows).toBe(0);
    const later = call({ started_at_ms: NOW - HOUR, tool_name: "search" });
    received.push({ seq: 3, received_at_ms: NOW - HOUR, item: later });
    await deliver(db, calls([later]), NOW - HOUR);
    await runRollup(db, NOW);
    const snap = await snapshot(db);
    expect(snap).toEqual(referenceRollup(received, [], []));
    expect(snap.pairs.map((p) => [p.from_tool, p.to_tool])).toEqual([["fetch", "list"], ["list", "search"], ["search", "fetch"]]);
  });

  it("with RAW_RETENTION_DAYS under 8 still keeps 8 days", async () => {
    const eight = retentionCutoffMs(NOW, 8);
    await deliver(
      db,
      calls([
        call({ started_at_ms: eight - 2 * HOUR }),
        call({ started_at_ms: eight - 1 }),
        call({ started_at_ms: eight }),
        call({ started_at_ms: NOW - 8 * DAY }),
        call({ started_at_ms: NOW - 7 * DAY }),
      ]),
      NOW - 7 * DAY,
    );
    await runRollup(db, NOW);
    const r = await runRetention(db, NOW, { retentionDays: parseRetentionDays("3") });
    expect(r.deletedCallRows).toBe(1);
    expect(await rawCallStarts()).toEqual([eight - 1, eight, NOW - 8 * DAY, NOW - 7 * DAY]);
  });

  it("deletes nothing while the rollup is more than 12 hours behind (as_of), and runs at exactly 12", async () => {
    await deliver(db, calls([0, 1, 2].map((i) => call({ started_at_ms: CUTOFF_30 - (3 - i) * DAY }))), NOW - 40 * DAY);
    await runRollup(db, NOW - 12 * HOUR - 1);
    const behind = await runRetention(db, NOW);
    expect(behind).toMatchObject({ skippedBecauseRollupBehind: true, deletedCallRows: 0, queries: 1 });
    expect(await db.prepare("SELECT value FROM rollup_state WHERE name = 'raw_kept_from_ms'").first()).toBeNull();
    await runRollup(db, NOW - 12 * HOUR);
    expect(await runRetention(db, NOW)).toMatchObject({ skippedBecauseRollupBehind: false, deletedCallRows: 2 });
  });

  it("never deletes rows the rollup has not folded in yet", async () => {
    await runRollup(db, NOW); // the rollup is current (as_of = NOW), then old rows arrive unrolled
    const old = [0, 1, 2, 3].map((i) => call({ started_at_ms: CUTOFF_30 - (10 - i) * DAY }));
    await deliver(db, calls(old), NOW - 50 * DAY);
    const startup: TestStartup = { project_id: "p1", session_id: "s1", client_name: "claude", tools: [], agree_declared: [] };
    await deliver(db, [{ type: "startup", startup }], NOW - 50 * DAY);
    const early = await runRetention(db, NOW);
    expect(early).toMatchObject({ skippedBecauseRollupBehind: false, deletedCallRows: 0, deletedStartups: 0 });
    await runRollup(db, NOW);
    const r = await runRetention(db, NOW);
    expect(r.deletedCallRows).toBe(3);
    expect(r.deletedStartups).toBe(1);
  });

  it("works in bounded chunks within the query budget and carries on the next day", async () => {
    // 25 hours of calls: the first 23 go (the 24th is the latest before the cutoff, the 25th after
    // it); a day later the 25th is before the cutoff too and the 24th goes.
    const old = Array.from({ length: 25 }, (_, i) => call({ started_at_ms: CUTOFF_30 - DAY + i * HOUR }));
    await deliver(db, calls(old), NOW - 40 * DAY);
    await runRollup(db, NOW);
    const counted = countingDb(db);
    const first = await runRetention(counted.db, NOW, { chunkRows: 4, maxQueries: 4 });
    expect(counted.count()).toBe(4);
    expect(first).toMatchObject({ deletedCallRows: 12, caughtUp: false });
    await runRollup(db, NOW + DAY);
    const second = await runRetention(db, NOW + DAY, { chunkRows: 4 });
    expect(second).toMatchObject({ deletedCallRows: 12, caughtUp: true });
    expect(await rawCallStarts()).toEqual([CUTOFF_30]);
  });

  it("a row kept as a session's latest before the cutoff goes once a later row of the session is before a later cutoff", async () => {
    // s1 and s2 each keep their latest call before the first cutoff; both go on later.
    await deliver(
      db,
      calls([
        call({ session_id: "s1", started_at_ms: CUTOFF_30 - DAY - 1 }),
        call({ session_id: "s2", started_at_ms: CUTOFF_30 - DAY }),
        call({ session_id: "s1", started_at_ms: CUTOFF_30 + HOUR }),
        call({ session_id: "s2", started_at_ms: CUTOFF_30 + HOUR }),
      ]),
      NOW - 31 * DAY,
    );
    await runRollup(db, NOW);
    expect((await runRetention(db, NOW)).deletedCallRows).toBe(0);
    await runRollup(db, NOW + 2 * DAY);
    const second = await runRetention(db, NOW + 2 * DAY);
    expect(second.deletedCallRows).toBe(2);
    expect(await rawCallStarts()).toEqual([CUTOFF_30 + HOUR, CUTOFF_30 + HOUR]);
  });

  it("changes no figure: after retention and newer calls, every table equals the reference over all calls ever received", async () => {
    // s1: P then K, a retry of P 5 s after P ended, both before the cutoff, in two hours (K's hour
    // is s1's latest there for claude, P's goes); Q, cursor's only call in s1 before the cutoff,
    // stays even though it is older than K: pairs follow each client's own sequence (SPEC §2.4).
    // Later calls of s1 arrive after retention. s2: old calls an hour apart, one new call.
    const P = call({ session_id: "s1", started_at_ms: CUTOFF_30 - 2 * DAY - 3_000, duration_ms: 1_000, args_hash: "aaaa" });
    const K = call({ session_id: "s1", started_at_ms: CUTOFF_30 - 2 * DAY + 3_000, args_hash: "bbbb" });
    const Q = call({ session_id: "s1", started_at_ms: CUTOFF_30 - 2 * DAY, client_name: "cursor", tool_name: "list" });
    const s2Old = [0, 1, 2, 3].map((i) =>
      call({ session_id: "s2", started_at_ms: CUTOFF_30 - 10 * DAY + i * HOUR, tool_name: i % 2 ? "fetch" : "search" }),
    );
    const s3 = [call({ session_id: "s3", started_at_ms: NOW - 5 * DAY })];
    const newer = [
      call({ session_id: "s1", started_at_ms: NOW - 2 * HOUR, args_hash: "cccc" }),
      call({ session_id: "s1", started_at_ms: NOW - 2 * HOUR + 10_000, tool_name: "fetch" }),
      call({ session_id: "s1", started_at_ms: NOW - 2 * HOUR + 20_000, tool_name: "fetch", client_name: "cursor" }),
      call({ session_id: "s2", started_at_ms: NOW - 3 * HOUR, tool_name: "list" }),
    ];
    const received: Received<TestCall>[] = [];
    const send = async (list: TestCall[], at: number) => {
      for (const item of list) received.push({ seq: received.length, received_at_ms: at, item });
      await deliver(db, calls(list), at);
    };
    await send([P, Q, K, ...s2Old, ...s3], NOW - 40 * DAY);
    await runRollup(db, NOW);
    const before = await snapshot(db);

    const r = await runRetention(db, NOW);
    expect(r.deletedCallRows).toBe(1 + 3);
    expect(await snapshot(db)).toEqual(before);

    await send(newer, NOW - HOUR);
    await runRollup(db, NOW);
    expect(await snapshot(db)).toEqual(referenceRollup(received, [], []));
  });

  it("deletes old startups and verdicts once folded in, and the tables they fed stay", async () => {
    const startup: TestStartup = {
      project_id: "p1", session_id: "s1", client_name: "claude",
      tools: [{ name: "search", schema_bytes: 120, schema_hash: "5c01", description_hash: "d001", description_norm: "n001", policy: null }],
      agree_declared: [{ field: "total", tools: ["search"] }],
    };
    const payloads: TestPayload[] = [
      { type: "startup", startup },
      { type: "agreement", agreement: { project_id: "p1", session_id: "s1", field: "total", tool_a: "search", tool_b: "fetch", agreed: false, checked_at_ms: NOW - 40 * DAY, window_ms: 1 } },
    ];
    await deliver(db, payloads, NOW - 40 * DAY);
    await deliver(db, [{ type: "startup", startup: { ...startup, session_id: "s2" } }], NOW - DAY);
    await runRollup(db, NOW);
    const before = await snapshot(db);
    const r = await runRetention(db, NOW);
    expect(r).toMatchObject({ deletedStartups: 1, deletedAgreements: 1 });
    expect(await snapshot(db)).toEqual(before);
    expect(before.registered).toHaveLength(1);
    expect(before.agreementDays).toHaveLength(1);
  });
});

describe("retention's call_state statements are bounded by calls as well as rows", () => {
  it("takes rows while the calls before each are fewer than chunkCalls (the first always), at, under and over", async () => {
    // Five old hours of 2 calls each, then the kept latest row before the cutoff.
    const old = Array.from({ length: 6 }, (_, i) => [
      call({ started_at_ms: CUTOFF_30 - 7 * HOUR + i * HOUR }),
      call({ started_at_ms: CUTOFF_30 - 7 * HOUR + i * HOUR + 1_000, tool_name: "fetch" }),
    ]).flat();
    const expected: [number, number][] = [[1, 1], [2, 1], [3, 2], [4, 2], [5, 3], [100, 5]];
    for (const [chunkCalls, rows] of expected) {
      await resetDb(db);
      await deliver(db, calls(old), NOW - 40 * DAY);
      await runRollup(db, NOW);
      // The probe that writes the cutoff, then one delete statement.
      const r = await runRetention(db, NOW, { chunkCalls, maxQueries: 2 });
      expect(r.deletedCallRows, `chunkCalls ${chunkCalls}`).toBe(rows);
    }
  });
});
