// Every calls chunk's transaction reads a bounded number of rows (the sum of D1's meta.rows_read
// over its statements, which local D1 reports per statement as production does), whatever the
// shape of what a tenant sends, and every call is counted exactly once. The shapes come from one
// generator over the axes that change what a chunk reads: name lengths up to the SPEC §1.2 caps,
// distinct argument hashes, 1,000-call and 1-call requests, day-long and zero-length calls, many
// sessions and two, many tools. Half of each workload is rolled up first, so the rest lands among
// a history, as it does in production.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CHUNK_ROWS_READ_BOUND, DEFAULT_ROLLUP_OPTIONS, runRollup } from "../../../src/worker/rollup/index.ts";
import { TURN_WINDOW_REQUESTS, rollupCallChunk, type CallChunkBounds } from "../../../src/worker/rollup/calls.ts";
import { call, deliver, resetDb, snapshot, type TestCall } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";

const db = env.DB;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 20, 0, 0);

/**
 * The model of what a chunk reads (measured on these shapes and bench:fairness's, with a margin):
 * per call of work allowed (chunkTouchedCalls: new calls plus the calls of the state rows loaded
 * around them) up to ~42 rows over the statements at the default bounds, ~50 with 150 tools; per
 * request the first statement looks at (at most chunkSpans) up to ~130; per request of the turn
 * window (the oldest waiting ones) ~20; per emptied request row kept for the Idempotency-Key
 * window (an hour: with ingest's appends, about one row per project and run) 2–3, stepped over;
 * and a fixed part (rollup_state, the indexes' first pages). Nothing grows with the history.
 */
const ROWS_PER_TOUCHED_CALL = 55;
const ROWS_PER_CANDIDATE_REQUEST = 150;
const ROWS_PER_WAITING_REQUEST = 25;
const ROWS_PER_EMPTIED_ROW = 3;
const ROWS_FIXED = 2_000;
/** The model's bound for a chunk under `b` with `waiting` requests waiting and `emptied` rows kept. */
const rowsReadBound = (b: CallChunkBounds) => (waiting: number, emptied: number) =>
  ROWS_PER_TOUCHED_CALL * b.chunkTouchedCalls + ROWS_PER_CANDIDATE_REQUEST * Math.min(waiting, b.chunkSpans)
  + ROWS_PER_WAITING_REQUEST * Math.min(waiting, TURN_WINDOW_REQUESTS) + ROWS_PER_EMPTIED_ROW * emptied + ROWS_FIXED;

interface Shape {
  sessions: number;
  callsPerSession: number;
  /** The session's calls spread evenly over this many hours. */
  hours: number;
  tools: number;
  /** Length of tool names, session ids and client names (capped at SPEC §1.2's 200 / 128 / 128). */
  nameChars: number;
  argsHashes: number;
  /** Calls per request (one session's consecutive calls; SPEC §1.2 allows 1,000 a request). */
  requestCalls: number;
  durationsMs: readonly number[];
  /** Calls with no session (SPEC §2.2) in every this many (0: none). */
  sessionlessEvery: number;
}

const padded = (base: string, chars: number) => (base + "_" + "x".repeat(Math.max(0, chars))).slice(0, Math.max(base.length, chars));

/** The calls of a shape, deterministic: session s's call i starts i × hours / callsPerSession into the span. */
function shapeCalls(shape: Shape): TestCall[][] {
  const requests: TestCall[][] = [];
  for (let s = 0; s < shape.sessions; s++) {
    const sessionId = padded(`s${s}`, Math.min(128, shape.nameChars));
    const client = padded(["claude", "cursor"][s % 2]!, Math.min(128, shape.nameChars));
    const calls = Array.from({ length: shape.callsPerSession }, (_, i): TestCall => {
      const k = s * 7_919 + i;
      return call({
        project_id: "noisy",
        session_id: shape.sessionlessEvery && k % shape.sessionlessEvery === 0 ? "" : sessionId,
        client_name: client,
        tool_name: padded(`t${(k * 31) % shape.tools}`, Math.min(200, shape.nameChars)),
        started_at_ms: T0 + Math.floor((i * shape.hours * HOUR) / shape.callsPerSession) + s * 37,
        duration_ms: shape.durationsMs[k % shape.durationsMs.length]!,
        args_hash: ((k * 2_654_435_761) % shape.argsHashes).toString(16).padStart(12, "0"),
        outcome: k % 11 === 0 ? "tool_error" : k % 13 === 0 ? "bad_args" : "ok",
        is_empty: k % 17 === 5,
        response_bytes: (k * 101) % 5_000,
      });
    });
    for (let i = 0; i < calls.length; i += shape.requestCalls) requests.push(calls.slice(i, i + shape.requestCalls));
  }
  // Requests arrive in a scrambled but fixed order: late and early requests land between history on both sides.
  return requests.map((r, i) => ({ r, key: (i * 7_919) % 1_009 })).sort((a, b) => a.key - b.key || 0).map(({ r }) => r);
}

/** Delivers the requests (one D1 batch each, as ingest writes them), numbering the calls as the reference does. */
async function deliverAll(requests: TestCall[][], received: Received<TestCall>[], from: number): Promise<void> {
  for (const [i, request] of requests.entries()) {
    const at = T0 + 3 * DAY + from + i;
    await deliver(db, request.map((c) => ({ type: "call" as const, call: c })), at);
    for (const c of request) received.push({ seq: received.length, received_at_ms: at, item: c });
  }
}

/** Rolls up every waiting request chunk by chunk: each chunk's rows read and estimate. */
type Chunk = { rowsRead: number; touched: number; calls: number; waiting: number; emptied: number };
async function rollAll(bounds: CallChunkBounds): Promise<Chunk[]> {
  const chunks: Chunk[] = [];
  for (let i = 0; i < 5_000; i++) {
    const rows = (await db.prepare("SELECT SUM(call_count > 0) AS waiting, SUM(call_count = 0) AS emptied FROM call_batches").first<{ waiting: number; emptied: number }>())!;
    const r = await rollupCallChunk(db, bounds);
    chunks.push({ rowsRead: r.rowsRead, touched: r.touched, calls: r.calls, waiting: rows.waiting, emptied: rows.emptied });
    if (!r.more) return chunks;
  }
  throw new Error("the rollup never caught up");
}

/** Delivers a shape in two halves, rolling up after each; checks every chunk's reads and the result. */
async function checkShape(shape: Shape, bounds: CallChunkBounds, bound: (waiting: number, emptied: number) => number) {
  await resetDb(db);
  const requests = shapeCalls(shape);
  const half = Math.ceil(requests.length / 2);
  const received: Received<TestCall>[] = [];
  await deliverAll(requests.slice(0, half), received, 0);
  const chunks = await rollAll(bounds);
  await deliverAll(requests.slice(half), received, half);
  chunks.push(...(await rollAll(bounds)));
  for (const [i, c] of chunks.entries()) expect(c.rowsRead, `chunk ${i} of ${chunks.length}: ${JSON.stringify(c)}`).toBeLessThanOrEqual(bound(c.waiting, c.emptied));
  // Every call counted exactly once: the chunks took each call once, and every counter equals the reference.
  expect(chunks.reduce((n, c) => n + c.calls, 0)).toBe(received.length);
  await runRollup(db, T0 + 4 * DAY, { pauseMs: 0 });
  expect(await snapshot(db)).toEqual(referenceRollup(received, [], []));
  return chunks;
}

/**
 * Small bounds for a shape, so that its history is many chunks: the bound holds when a chunk may
 * take one whole request (the first request is always taken, SPEC §1.2 allows 1,000 calls) and the
 * near rows may hold two earlier calls of every tool (nearCalls, rollup/calls.ts) — what the
 * defaults (12,000 and 5,000) leave room for up to 1,000-call requests and ~1,000 tools in turn.
 */
const smallBounds = (shape: Shape): CallChunkBounds => ({
  chunkCalls: Math.max(600, shape.requestCalls), chunkTouchedCalls: Math.max(600, 3 * shape.requestCalls, 12 * shape.tools),
  chunkSpans: 60, nearCalls: Math.max(150, 4 * shape.tools),
});

/** The generator's axes: each value moves what a chunk reads; the cases below take them in turn. */
const BASE: Shape = {
  sessions: 2, callsPerSession: 1_200, hours: 30, tools: 5, nameChars: 8, argsHashes: 5, requestCalls: 50,
  durationsMs: [DAY, 250, DAY, 0], sessionlessEvery: 0,
};
const CASES: [string, Partial<Shape>][] = [
  ["day-long calls, two dense sessions", {}],
  ["names at the caps (200-character tools, 128-character sessions and clients)", { nameChars: 200 }],
  ["many distinct argument hashes", { argsHashes: 100_000 }],
  ["1,000-call requests", { requestCalls: 1_000 }],
  ["1-call requests of many sessions", { sessions: 300, callsPerSession: 6, hours: 6, requestCalls: 1, durationsMs: [40, 0, 1_200] }],
  ["zero-length calls only", { durationsMs: [0] }],
  ["many tools", { tools: 150, callsPerSession: 1_500 }],
  ["many sessions of day-long calls, some calls without a session", { sessions: 40, callsPerSession: 60, hours: 20, sessionlessEvery: 9 }],
];

describe("every calls transaction reads a bounded number of rows, for every generated shape", () => {
  for (const [name, over] of CASES) {
    it(`${name}: each chunk within the bound, every call counted once`, async () => {
      const shape = { ...BASE, ...over };
      const bounds = smallBounds(shape);
      const chunks = await checkShape(shape, bounds, rowsReadBound(bounds));
      // The history around the new calls was larger than a chunk may touch, so the bounds did the work.
      expect(chunks.length).toBeGreaterThan(2);
      console.log(JSON.stringify({ shape: name, chunks: chunks.length, maxRowsRead: Math.max(...chunks.map((c) => c.rowsRead)) }));
    }, 300_000);
  }

  it("random shapes from the generator's axes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          sessions: fc.constantFrom(1, 2, 9), callsPerSession: fc.constantFrom(1, 40, 200), hours: fc.constantFrom(1, 5, 30),
          tools: fc.constantFrom(1, 4, 60), nameChars: fc.constantFrom(1, 40, 200), argsHashes: fc.constantFrom(1, 3, 10_000),
          requestCalls: fc.constantFrom(1, 7, 1_000), durationsMs: fc.constantFrom([0], [DAY], [DAY, 0, 30_000], [5_400_000, 31_000]),
          sessionlessEvery: fc.constantFrom(0, 4),
        }),
        async (shape) => {
          await checkShape(shape, smallBounds(shape), rowsReadBound(smallBounds(shape)));
        },
      ),
      { numRuns: 4, seed: 29 },
    );
  }, 300_000);
});

describe("at the default bounds", () => {
  it("the defaults are the documented ones", () => {
    expect(DEFAULT_ROLLUP_OPTIONS).toMatchObject({ chunkCalls: 12_000, chunkTouchedCalls: 12_000, chunkSpans: 2_000, nearCalls: 5_000 });
    expect(CHUNK_ROWS_READ_BOUND).toBe(600_000);
  });

  // Large enough to fill default chunks: dense sessions of day-long calls with 200-character names,
  // and 1-call requests of many sessions.
  const DEFAULT_CASES: [string, Shape][] = [
    ["long names, many arguments, 1,000-call requests", { ...BASE, callsPerSession: 16_000, hours: 12, nameChars: 200, argsHashes: 4_000, requestCalls: 1_000 }],
    ["1-call requests of many sessions", { ...BASE, sessions: 3_000, callsPerSession: 2, hours: 4, requestCalls: 1, durationsMs: [40, 0] }],
  ];
  for (const [name, shape] of DEFAULT_CASES) {
    it(`${name}: each chunk reads at most CHUNK_ROWS_READ_BOUND rows`, async () => {
      const chunks = await checkShape(shape, DEFAULT_ROLLUP_OPTIONS, () => CHUNK_ROWS_READ_BOUND);
      expect(chunks.length).toBeGreaterThan(2);
      console.log(JSON.stringify({ shape: name, chunks: chunks.length, maxRowsRead: Math.max(...chunks.map((c) => c.rowsRead)) }));
    }, 600_000);
  }
});
