// SPEC §2.2 retries and first-call success, one rule per test, through the real rollup in D1.
import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { durationBucket } from "../../../src/worker/histogram.ts";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { call, calls, deliver, hourCounters, resetDb, snapshot, type TestCall } from "./fixtures.ts";

const db = env.DB;
// 2026-11-20 10:00:00 UTC
const H10 = Date.UTC(2026, 10, 20, 10);
const H11 = H10 + 3_600_000;
const NOW = Date.UTC(2026, 10, 21, 0);

beforeEach(() => resetDb(db));

async function rollupOf(list: TestCall[]) {
  await deliver(db, calls(list), NOW - 60_000);
  const r = await runRollup(db, NOW);
  expect(r.caughtUp).toBe(true);
  return hourCounters(db);
}

/** Sums over all hour rows: the figures of SPEC §2.2 for the whole workload. */
async function totals(list: TestCall[]) {
  const rows = await rollupOf(list);
  const sum = (k: "retries" | "first_call_attempts" | "first_call_ok" | "calls") => rows.reduce((a, r) => a + r[k], 0);
  return { calls: sum("calls"), retries: sum("retries"), attempts: sum("first_call_attempts"), firstOk: sum("first_call_ok") };
}

describe("SPEC §2.2 retries", () => {
  it("a different hash within 30 s of the end is a retry; the first call was retried", async () => {
    const t = await totals([
      call({ started_at_ms: H10, duration_ms: 1000, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 1000 + 5000, args_hash: "bbbb" }),
    ]);
    expect(t).toEqual({ calls: 2, retries: 1, attempts: 1, firstOk: 0 });
  });

  it("a same-hash repeat is never a retry (pagination, polling)", async () => {
    const t = await totals([
      call({ started_at_ms: H10, duration_ms: 100, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 200, args_hash: "aaaa" }),
    ]);
    expect(t).toEqual({ calls: 2, retries: 0, attempts: 2, firstOk: 2 });
  });

  it("gap exactly 0 ms is a retry", async () => {
    const t = await totals([
      call({ started_at_ms: H10, duration_ms: 250, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 250, args_hash: "bbbb" }),
    ]);
    expect(t.retries).toBe(1);
  });

  it("gap exactly 30,000 ms is a retry, 30,001 ms is not", async () => {
    const at = await totals([
      call({ started_at_ms: H10, duration_ms: 250, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 250 + 30_000, args_hash: "bbbb" }),
    ]);
    expect(at.retries).toBe(1);
    await resetDb(db);
    const over = await totals([
      call({ started_at_ms: H10, duration_ms: 250, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 250 + 30_001, args_hash: "bbbb" }),
    ]);
    expect(over).toEqual({ calls: 2, retries: 0, attempts: 2, firstOk: 2 });
  });

  it("keeps the 30,000 ms edge exact with fractional-millisecond timestamps", async () => {
    const start = H10 + 0.123456;
    const t = await totals([
      call({ started_at_ms: start, duration_ms: 7, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 30_007.123456, args_hash: "bbbb" }),
    ]);
    expect(t.retries).toBe(1);
  });

  it("an overlapping call (starts before the previous one ended) is never a retry", async () => {
    const t = await totals([
      call({ started_at_ms: H10, duration_ms: 1000, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 999, args_hash: "bbbb" }),
    ]);
    expect(t).toEqual({ calls: 2, retries: 0, attempts: 2, firstOk: 2 });
  });

  it("only the next call of the same tool in the same session counts", async () => {
    const t = await totals([
      call({ started_at_ms: H10, args_hash: "aaaa", tool_name: "search" }),
      call({ started_at_ms: H10 + 10, args_hash: "bbbb", tool_name: "fetch" }),
      call({ started_at_ms: H10 + 20, args_hash: "cccc", tool_name: "search", session_id: "s2" }),
      call({ started_at_ms: H10 + 30, args_hash: "dddd", tool_name: "search", project_id: "p2" }),
    ]);
    expect(t).toEqual({ calls: 4, retries: 0, attempts: 4, firstOk: 4 });
  });

  it("a call between two others of the same tool breaks the pair: only the very next call counts", async () => {
    // a (hash x) → b (hash x, same: not a retry) → c (hash y, retry of b, not of a).
    const t = await totals([
      call({ started_at_ms: H10, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 10, args_hash: "aaaa" }),
      call({ started_at_ms: H10 + 20, args_hash: "bbbb" }),
    ]);
    expect(t).toEqual({ calls: 3, retries: 1, attempts: 2, firstOk: 1 });
  });

  it("ties in started_at resolve by receive order", async () => {
    // Same start, 0 ms each: the second received is the next call (gap 0) and a retry.
    const t = await totals([
      call({ started_at_ms: H10, args_hash: "aaaa", outcome: "tool_error" }),
      call({ started_at_ms: H10, args_hash: "bbbb" }),
    ]);
    expect(t).toEqual({ calls: 2, retries: 1, attempts: 1, firstOk: 0 });
  });

  it("a chain of 3 is 1 attempt and 2 retries; it succeeds first time only if its first call was not retried", async () => {
    const t = await totals([
      call({ started_at_ms: H10, duration_ms: 100, args_hash: "aaaa", outcome: "bad_args" }),
      call({ started_at_ms: H10 + 1_100, duration_ms: 100, args_hash: "bbbb", outcome: "bad_args" }),
      call({ started_at_ms: H10 + 2_200, duration_ms: 100, args_hash: "cccc" }),
    ]);
    expect(t).toEqual({ calls: 3, retries: 2, attempts: 1, firstOk: 0 });
  });

  it("first_call_ok needs ok, not empty and not retried", async () => {
    const far = 3_600_000 / 4;
    const t = await totals([
      call({ started_at_ms: H10, args_hash: "aaaa" }), // ok
      call({ started_at_ms: H10 + far, args_hash: "bbbb", is_empty: true }), // empty
      call({ started_at_ms: H10 + 2 * far, args_hash: "cccc", outcome: "tool_error" }),
      call({ started_at_ms: H10 + 3 * far, args_hash: "dddd", outcome: "crashed" }),
    ]);
    expect(t).toEqual({ calls: 4, retries: 0, attempts: 4, firstOk: 1 });
  });

  it("a chain counts in its first call's hour; a retry in its own", async () => {
    const rows = await rollupOf([
      call({ started_at_ms: H11 - 10_000, duration_ms: 2_000, args_hash: "aaaa", client_name: "cursor" }),
      call({ started_at_ms: H11 + 5_000, args_hash: "bbbb", client_name: "cursor" }),
    ]);
    const pick = (hour: number) => rows.find((r) => r.start_ms === hour && r.client_name === "cursor");
    expect(pick(H10)).toMatchObject({ calls: 1, retries: 0, first_call_attempts: 1, first_call_ok: 0 });
    expect(pick(H11)).toMatchObject({ calls: 1, retries: 1, first_call_attempts: 0, first_call_ok: 0 });
    expect(rows).toHaveLength(2);
  });

  it("two clients interleaved in one session are two sequences: neither retries the other's calls", async () => {
    // One SDK session behind an HTTP server serving two users (SPEC §2.2): claude's aaaa → cursor's
    // bbbb 1 s later (no retry: another client) → claude's cccc (a retry of claude's aaaa, whose
    // next call in its own sequence it is).
    const rows = await rollupOf([
      call({ started_at_ms: H10, args_hash: "aaaa", client_name: "claude" }),
      call({ started_at_ms: H10 + 1_000, args_hash: "bbbb", client_name: "cursor" }),
      call({ started_at_ms: H10 + 2_000, args_hash: "cccc", client_name: "claude" }),
      call({ started_at_ms: H10 + 3_000, args_hash: "bbbb", client_name: "cursor" }),
    ]);
    const pick = (client: string) => rows.find((r) => r.client_name === client);
    expect(pick("claude")).toMatchObject({ calls: 2, retries: 1, first_call_attempts: 1, first_call_ok: 0 });
    // cursor's two calls share a hash: a repeat, not a retry; both chains succeed first time.
    expect(pick("cursor")).toMatchObject({ calls: 2, retries: 0, first_call_attempts: 2, first_call_ok: 2 });
  });

  it("a call without a session is a chain of its own: never a retry, never retried, in no session or pair (SPEC §2.2)", async () => {
    // With a session these five would be a chain of 3 (aaaa → bbbb → cccc, 1 s apart, other hashes)
    // and a pair search → lookup; without one each call is a first call.
    const sessionless = [
      call({ session_id: "", started_at_ms: H10, args_hash: "aaaa" }),
      call({ session_id: "", started_at_ms: H10 + 1_000, args_hash: "bbbb", outcome: "bad_args" }),
      call({ session_id: "", started_at_ms: H10 + 2_000, args_hash: "cccc", is_empty: true }),
      call({ session_id: "", started_at_ms: H10 + 3_000, args_hash: "cccc", tool_name: "lookup" }),
    ];
    const rows = await rollupOf([...sessionless, call({ session_id: "s9", started_at_ms: H10 + 500, args_hash: "dddd" })]);
    const search = rows.find((r) => r.tool_name === "search")!;
    // 4 calls of search (3 sessionless + 1 in s9), each its own chain; ok and not empty: aaaa and dddd.
    expect(search).toMatchObject({ calls: 4, retries: 0, first_call_attempts: 4, first_call_ok: 2, calls_without_session: 3 });
    expect(rows.find((r) => r.tool_name === "lookup")).toMatchObject({ calls: 1, first_call_attempts: 1, first_call_ok: 1, calls_without_session: 1 });
    const snap = await snapshot(db);
    expect(snap.pairs).toEqual([]);
    expect(snap.sessions.map((s) => [s.session_id, s.calls])).toEqual([["s9", 1]]);
    expect(snap.days.reduce((n, d) => n + d.calls_without_session, 0)).toBe(4);
    // No per-session storage for them: the only call_state row is s9's.
    const state = await db.prepare("SELECT session_id, call_count FROM call_state").all();
    expect(state.results).toEqual([{ session_id: "s9", call_count: 1 }]);
  });

  it("two clients interleaved in one session: pairs follow each client's own next call (SPEC §2.4)", async () => {
    await rollupOf([
      call({ started_at_ms: H10, tool_name: "search", client_name: "claude" }),
      call({ started_at_ms: H10 + 1_000, tool_name: "fetch", client_name: "cursor" }),
      call({ started_at_ms: H10 + 2_000, tool_name: "list", client_name: "claude" }),
      call({ started_at_ms: H10 + 3_000, tool_name: "search", client_name: "cursor" }),
    ]);
    const pairs = (await snapshot(db)).pairs.map((p) => [p.client_name, p.from_tool, p.to_tool, p.pair_count]);
    expect(pairs).toEqual([
      ["claude", "search", "list", 1],
      ["cursor", "fetch", "search", 1],
    ]);
  });

  it("a session's client is its latest call's, to the fraction of a millisecond, then by receive order (SPEC §2.4)", async () => {
    await rollupOf([
      call({ started_at_ms: H10 + 0.5, client_name: "cursor" }),
      call({ started_at_ms: H10, client_name: "claude" }),
      call({ started_at_ms: H10 - 1_000, client_name: "zed" }),
    ]);
    expect((await snapshot(db)).sessions.map((s) => s.client_name)).toEqual(["cursor"]);
    await resetDb(db);
    await rollupOf([call({ started_at_ms: H10, client_name: "cursor" }), call({ started_at_ms: H10, client_name: "claude" })]);
    expect((await snapshot(db)).sessions.map((s) => s.client_name)).toEqual(["claude"]);
  });

  it("a late call of another client between two calls changes neither's flags", async () => {
    await rollupOf([
      call({ started_at_ms: H10, args_hash: "aaaa", client_name: "claude" }),
      call({ started_at_ms: H10 + 2_000, args_hash: "cccc", client_name: "claude" }),
    ]);
    await deliver(db, calls([call({ started_at_ms: H10 + 1_000, args_hash: "bbbb", client_name: "cursor", tool_name: "fetch" })]), NOW);
    expect((await runRollup(db, NOW + 300_000)).caughtUp).toBe(true);
    const snap = await snapshot(db);
    expect(snap.hours.find((r) => r.client_name === "claude")).toMatchObject({ calls: 2, retries: 1, first_call_attempts: 1 });
    expect(snap.pairs).toEqual([]);
  });

  it("a chain across UTC midnight counts on its first call's day; the retry on the next day", async () => {
    const midnight = Date.UTC(2026, 10, 21);
    await rollupOf([
      call({ started_at_ms: midnight - 10_000, duration_ms: 1_000, args_hash: "aaaa" }),
      call({ started_at_ms: midnight + 20_000, args_hash: "bbbb" }),
    ]);
    const days = (await snapshot(db)).days.map((d) => [d.start_ms, d.calls, d.retries, d.first_call_attempts, d.first_call_ok]);
    expect(days).toEqual([
      [midnight - 86_400_000, 1, 0, 1, 0],
      [midnight, 1, 1, 0, 0],
    ]);
  });

  it("counts outcomes, empties, bytes and durations per hour, tool and client (SPEC §2.1)", async () => {
    const rows = await rollupOf([
      call({ started_at_ms: H10, duration_ms: 5, response_bytes: 100, args_hash: "a1" }),
      call({ started_at_ms: H10 + 600_000, duration_ms: 7, response_bytes: 0, is_empty: true, args_hash: "a1" }),
      call({ started_at_ms: H10 + 1_200_000, duration_ms: 250, response_bytes: 0, outcome: "bad_args", args_hash: "a1" }),
      call({ started_at_ms: H10 + 1_800_000, duration_ms: 250, response_bytes: 3, outcome: "tool_error", args_hash: "a1" }),
      call({ started_at_ms: H10 + 2_400_000, duration_ms: 0, response_bytes: 0, outcome: "crashed", args_hash: "a1" }),
    ]);
    expect(rows).toEqual([
      {
        project_id: "p1", start_ms: H10, tool_name: "search", client_name: "claude",
        calls: 5, ok: 2, empty: 1, bad_args: 1, tool_error: 1, crashed: 1,
        response_bytes_sum: 103, duration_ms_sum: 512, retries: 0, first_call_attempts: 5, first_call_ok: 1,
        calls_without_session: 0, calls_without_args_hash: 0,
      },
    ]);
    const snap = await snapshot(db);
    expect(snap.hours[0]!.histogram).toEqual(histOf([5, 7, 250, 250, 0]));
    expect(snap.days).toEqual([{ ...snap.hours[0], start_ms: Date.UTC(2026, 10, 20) }]);
  });
});

function histOf(durations: number[]): Record<string, number> {
  const h: Record<string, number> = {};
  for (const d of durations) h[String(durationBucket(d))] = (h[String(durationBucket(d))] ?? 0) + 1;
  return h;
}
