// Random workloads for the rollup's property tests: sessions of calls whose gaps sit on the
// SPEC §2.2 edges, startups and agreement verdicts, all placed relative to a base time; and the
// random delivery of them in batches with rollups in between.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { CALL_CHUNK_STATEMENTS } from "../../../src/worker/rollup/calls.ts";
import { STARTUP_CHUNK_STATEMENTS } from "../../../src/worker/rollup/startups.ts";
import { ROLLUP_FIXED_STATEMENTS, runRollup, type RollupOptions } from "../../../src/worker/rollup/index.ts";
import { deliver, type Outcome, type TestAgreement, type TestCall, type TestPayload, type TestStartup, type TestTool } from "./fixtures.ts";
import type { Received } from "./reference.ts";

const DAY = 86_400_000;

const TOOLS = ["search", "fetch", "list"];
const CLIENTS = ["claude", "cursor"];
const HASHES = ["aa01", "bb02", "cc03"];

// Gaps between consecutive calls of a session, measured from the previous call's end (SPEC
// §2.2), concentrated on the edges: ties, overlaps, 0, 30,000 and 30,001 ms, hours.
const gapArb = fc.oneof(
  fc.constantFrom(-1, 0, 1, 29_999, 30_000, 30_001, 45_000, 600_000, 1_800_000, 3_700_000),
  fc.constant("tie" as const),
  // Inside the previous call (it is still running), or at the retry edges after the end of the
  // longest call so far: with calls lasting hours or a day, a call's retry neighbour starts hours
  // before it, and the rollup must look that far.
  fc.constantFrom("inside" as const, "after_longest" as const),
  fc.integer({ min: -5_000, max: 100_000 }),
);
const durationArb = fc.constantFrom(0, 1, 5, 99, 250, 2_000, 45_000, 0, 1, 5, 250, 5_400_000, 86_400_000);
const outcomeArb = fc.constantFrom<Outcome>("ok", "ok", "ok", "bad_args", "tool_error", "crashed");

const sessionCallsArb = fc.record({
  project_id: fc.constantFrom("p1", "p2"),
  // "" is no session known (SPEC §2.2: each such call is a chain of its own); c4–c6 are more
  // conversations, interleaved in time with the others when their start offsets coincide.
  session_id: fc.constantFrom("s1", "s2", "s3", "", "c4", "c5", "c6"),
  // Where the session starts: around the base time, hours earlier, or up to 7 days back (late payloads).
  start_offset_ms: fc.constantFrom(0, -1_500_000, -3 * 3_600_000, -DAY + 1_000, -7 * DAY + 60_000, 1_800_000.5),
  tools: fc.subarray(TOOLS, { minLength: 1 }),
  steps: fc.array(
    fc.record({
      gap: gapArb,
      duration_ms: durationArb,
      tool_i: fc.nat(),
      client: fc.constantFrom(...CLIENTS),
      args_hash: fc.constantFrom(...HASHES),
      outcome: outcomeArb,
      empty: fc.boolean(),
      response_bytes: fc.nat({ max: 5_000 }),
      half_ms: fc.boolean(),
    }),
    { maxLength: 8 },
  ),
});

type SessionCalls = typeof sessionCallsArb extends fc.Arbitrary<infer T> ? T : never;

/** A session's calls, each placed `gap` after the previous call's end (SPEC §2.2's gap). */
function buildCalls(s: SessionCalls, t0: number): TestCall[] {
  const out: TestCall[] = [];
  let prev: TestCall | undefined;
  let longestEnd = -Infinity;
  for (const [i, st] of s.steps.entries()) {
    let start: number;
    if (!prev) start = t0 + s.start_offset_ms;
    else if (st.gap === "tie") start = prev.started_at_ms;
    else if (st.gap === "inside") start = prev.started_at_ms + Math.floor(prev.duration_ms / 2);
    else if (st.gap === "after_longest") start = Math.max(prev.started_at_ms, longestEnd + [0, 15_000, 30_000, 30_001][i % 4]!);
    else start = prev.started_at_ms + prev.duration_ms + st.gap;
    if (st.half_ms) start = Math.floor(start) + 0.5;
    const c: TestCall = {
      project_id: s.project_id,
      session_id: s.session_id,
      client_name: st.client,
      tool_name: s.tools[st.tool_i % s.tools.length]!,
      started_at_ms: start,
      duration_ms: st.duration_ms,
      outcome: st.outcome,
      response_bytes: st.response_bytes,
      is_empty: st.outcome === "ok" && st.empty,
      args_hash: st.args_hash,
    };
    out.push(c);
    prev = c;
    longestEnd = Math.max(longestEnd, c.started_at_ms + c.duration_ms);
  }
  return out;
}

const toolArb: fc.Arbitrary<TestTool> = fc.record({
  name: fc.constantFrom(...TOOLS, "admin_reset"),
  schema_bytes: fc.nat({ max: 900 }),
  schema_hash: fc.constantFrom("5c01", "5c02", null),
  description_hash: fc.constantFrom("d001", "d002", null),
  description_norm: fc.constantFrom("n001", "n002", null),
  policy: fc.constantFrom(null, { requires_authorization: true, requires_verified_identity: false }, { requires_authorization: false, requires_verified_identity: false }),
});

const startupArb: fc.Arbitrary<TestStartup> = fc.record({
  project_id: fc.constantFrom("p1", "p2"),
  session_id: fc.constantFrom("s1", "s2", "s4"),
  client_name: fc.constantFrom(...CLIENTS),
  tools: fc.array(toolArb, { maxLength: 4 }),
  agree_declared: fc.array(fc.record({ field: fc.constantFrom("total", "count"), tools: fc.subarray(TOOLS) }), { maxLength: 2 }),
});

const agreementArb: fc.Arbitrary<TestAgreement> = fc.record({
  project_id: fc.constantFrom("p1", "p2"),
  session_id: fc.constantFrom("s1", "s2"),
  field: fc.constantFrom("total", "count"),
  tool_a: fc.constantFrom(...TOOLS),
  tool_b: fc.constantFrom(...TOOLS),
  agreed: fc.boolean(),
  // Offsets from the workload's base time (added by buildPayloads).
  checked_at_ms: fc.constantFrom(-1, 3_600_000 - 1, 3_600_000, -3 * DAY + 0.25),
  window_ms: fc.constant(300_000),
});

export const workloadArb = fc.record({
  sessions: fc.array(sessionCallsArb, { maxLength: 7 }),
  startups: fc.array(startupArb, { maxLength: 3 }),
  agreements: fc.array(agreementArb, { maxLength: 4 }),
});

export const rollupOptionsArb: fc.Arbitrary<RollupOptions> = fc.record({
  chunkCalls: fc.constantFrom(1, 2, 3, 7, 10_000),
  // Rows of work and spans per calls chunk: 1 takes one request a chunk, whatever it loads.
  chunkTouchedCalls: fc.constantFrom(1, 12, 60_000),
  chunkSpans: fc.constantFrom(1, 4, 2_000),
  nearCalls: fc.constantFrom(1, 3, 5_000),
  chunkStartups: fc.constantFrom(1, 2, 200),
  chunkAgreements: fc.constantFrom(1, 3, 10_000),
  // The probe, as_of and the largest chunk (a calls or a startups chunk): the least budget that
  // always makes progress on every stream.
  maxQueries: fc.constantFrom(ROLLUP_FIXED_STATEMENTS + Math.max(CALL_CHUNK_STATEMENTS, STARTUP_CHUNK_STATEMENTS), 30, 45),
});

export type Workload = typeof workloadArb extends fc.Arbitrary<infer T> ? T : never;

/** The workload's payloads, with every time placed relative to `t0`. */
export function buildPayloads(w: Workload, t0: number): TestPayload[] {
  return [
    ...w.sessions.flatMap((s) => buildCalls(s, t0).map((call) => ({ type: "call" as const, call }))),
    ...w.startups.map((startup) => ({ type: "startup" as const, startup })),
    ...w.agreements.map((a) => ({ type: "agreement" as const, agreement: { ...a, checked_at_ms: t0 + a.checked_at_ms } })),
  ];
}

export interface ReceivedPayloads {
  calls: Received<TestCall>[];
  startups: Received<TestStartup>[];
  agreements: Received<TestAgreement>[];
}

export const emptyReceived = (): ReceivedPayloads => ({ calls: [], startups: [], agreements: [] });

/**
 * Delivers `payloads` in a random order, in random batches 1 s apart from `firstReceivedAt`, with
 * a rollup of random options after some batches; records what was received, in receive order.
 * Returns the time of the last rollup's schedule.
 */
export async function deliverRandomly(
  g: fc.GeneratorValue,
  payloads: TestPayload[],
  firstReceivedAt: number,
  received: ReceivedPayloads,
): Promise<number> {
  const db = env.DB;
  const arrival = g(fc.shuffledSubarray, payloads, { minLength: payloads.length, maxLength: payloads.length });
  let i = 0;
  let batchNo = 0;
  let scheduled = firstReceivedAt;
  while (i < arrival.length) {
    const size = g(fc.integer, { min: 1, max: 6 });
    const batch = arrival.slice(i, i + size);
    i += size;
    const receivedAt = firstReceivedAt + batchNo++ * 1_000;
    await deliver(db, batch, receivedAt);
    for (const p of batch) {
      const seq = received.calls.length + received.startups.length + received.agreements.length;
      if (p.type === "call") received.calls.push({ seq, received_at_ms: receivedAt, item: p.call });
      else if (p.type === "startup") received.startups.push({ seq, received_at_ms: receivedAt, item: p.startup });
      else received.agreements.push({ seq, received_at_ms: receivedAt, item: p.agreement });
    }
    if (g(fc.boolean)) await runRollup(db, (scheduled = receivedAt + 300_000), g(() => rollupOptionsArb));
  }
  return scheduled;
}

/** Runs the rollup (random options) until it reports it caught up; false if it never does. */
export async function rollupUntilCaughtUp(g: fc.GeneratorValue, scheduledFrom: number): Promise<boolean> {
  const options = g(() => rollupOptionsArb);
  let scheduled = scheduledFrom;
  for (let n = 0; n < 500; n++) if ((await runRollup(env.DB, (scheduled += 300_000), options)).caughtUp) return true;
  return false;
}
