// No rollup transaction holds the database long, whatever a tenant sends (issue: a project's
// sessions full of day-long calls made every chunk re-read a day of them). The bound is logical:
// every calls chunk's estimate of its rows of work (new calls + the calls of the state rows it
// loads) stays within `chunkTouchedCalls` unless it holds a single request, and what D1 reports
// each statement read (Miniflare's meta.rows_read) stays within a fixed multiple of that estimate
// — never the size of the history around it. The pathological project is still counted exactly
// (equal to the reference), and a quiet project's requests are taken in turn with it.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEFAULT_ROLLUP_OPTIONS, type RollupOptions } from "../../../src/worker/rollup/index.ts";
import { CALL_CHUNK_STATEMENTS, rollupCallChunk, type CallChunkBounds } from "../../../src/worker/rollup/calls.ts";
import { rollupStartupChunk } from "../../../src/worker/rollup/startups.ts";
import type { RunScope } from "../../../src/worker/rollup/scope.ts";

/** No move or recompute here: the chunk's own statements alone are metered (as a run's are). */
const NO_PROJECT_LEFT_ALONE: RunScope = { held: [], recomputing: [] };
import { call, deliver, faultyDb, resetDb, snapshot, type TestCall, type TestPayload } from "./fixtures.ts";
import { referenceRollup, type Received } from "./reference.ts";
import { runRollup } from "../../../src/worker/rollup/index.ts";

const db = env.DB;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 20, 0, 0);
/**
 * Rows D1 reads per statement for each call of work (json_each, the windows' sorts, the joins):
 * measured up to ~32 for a chunk of new calls alone, ~26 with loaded history.
 */
const ROWS_READ_PER_TOUCHED_CALL = 40;
/** What a statement reads whatever the chunk: the probe of waiting requests, rollup_state, indexes. */
const ROWS_READ_FIXED = 2_000;

/**
 * One session's calls, `perHour` an hour for `hours` hours from `from`: tools in turn, every other
 * call lasting the 1-day maximum (SPEC §1.2), args hashes so some are retries.
 */
function session(project_id: string, session_id: string, from: number, hours: number, perHour: number, tools: number): TestCall[] {
  return Array.from({ length: hours * perHour }, (_, i) =>
    call({
      project_id, session_id, started_at_ms: from + Math.floor((i * HOUR) / perHour),
      tool_name: `t${i % tools}`, duration_ms: i % 2 ? DAY : [0, 250, 20_000][i % 3]!, args_hash: `h${i % 5}`,
      outcome: i % 7 ? "ok" : "tool_error",
    }),
  );
}

/**
 * Requests of `size` consecutive calls (a producer batches what it just saw), arriving in a
 * scrambled but fixed order (late and early requests land between history on both sides).
 */
function requests(calls: TestCall[], size: number): TestCall[][] {
  const out: TestCall[][] = [];
  for (let i = 0; i < calls.length; i += size) out.push(calls.slice(i, i + size));
  return out.map((r, i) => ({ r, key: (i * 7919) % 1009 })).sort((a, b) => a.key - b.key).map(({ r }) => r);
}

type Shape = { name: string; noisy: TestCall[]; size: number; bounds: CallChunkBounds };

const BOUNDS: CallChunkBounds = { chunkCalls: 400, chunkTouchedCalls: 4_000, chunkSpans: 2_000, nearCalls: 800 };

const SHAPES: Shape[] = [
  // Long durations: two sessions of day-long calls, dense (120 an hour for 40 hours).
  { name: "long durations", noisy: [...session("noisy", "a", T0, 40, 120, 2), ...session("noisy", "b", T0 + HOUR / 2, 40, 120, 3)], size: 50, bounds: BOUNDS },
  // A huge session: 7,200 calls in one session over 24 hours, short and long.
  { name: "a huge session", noisy: session("noisy", "a", T0, 24, 300, 4), size: 100, bounds: BOUNDS },
  // Many tools: 150 tools in turn in one dense session of day-long calls (each tool's two previous
  // calls are up to 300 calls back: within the near rows, not within the nearest).
  { name: "many tools", noisy: session("noisy", "a", T0, 40, 160, 150), size: 50, bounds: BOUNDS },
];

async function deliverAll(noisy: TestCall[][], quiet: TestCall[][]): Promise<Received<TestCall>[]> {
  const received: Received<TestCall>[] = [];
  let seq = 0;
  const n = Math.max(noisy.length, quiet.length);
  // The noisy project's backlog arrives first, the quiet project's requests after it.
  const all = [...noisy, ...quiet];
  for (const [i, request] of all.entries()) {
    const at = T0 + 2 * DAY + i * 1_000;
    await deliver(db, request.map((c): TestPayload => ({ type: "call", call: c })), at);
    for (const c of request) received.push({ seq: seq++, received_at_ms: at, item: c });
  }
  expect(n).toBeGreaterThan(0);
  return received;
}

describe("every calls chunk is bounded in rows touched, whatever the shape", () => {
  for (const shape of SHAPES) {
    it(`${shape.name}: chunks within the bound, reads within a multiple of it, counted exactly`, async () => {
      await resetDb(db);
      // Half the noisy project's calls are rolled up first, so the rest lands among a history.
      const noisyRequests = requests(shape.noisy, shape.size);
      const quiet = [0, 1, 2].map((i) => [call({ project_id: "quiet", session_id: "q", started_at_ms: T0 + DAY + i * 60_000 })]);
      const received = await deliverAll(noisyRequests, quiet);

      const metered = faultyDb(db);
      const chunks: { calls: number; requests: number; touched: number; quietAt: number | null }[] = [];
      let quietDone = 0;
      for (let i = 0; i < 2_000; i++) {
        const before = metered.calls.length;
        const r = await rollupCallChunk(metered.db, shape.bounds, NO_PROJECT_LEFT_ALONE);
        const statements = metered.calls[before]!.statements;
        expect(statements).toHaveLength(CALL_CHUNK_STATEMENTS);
        // The logical bound: the chunk's estimate, and what D1 read for each statement — both
        // independent of the history around the new calls (several times the bound here).
        expect(r.touched, `chunk ${i}`).toBeLessThanOrEqual(shape.bounds.chunkTouchedCalls);
        for (const s of statements) {
          expect(s.rows_read, `chunk ${i}: ${s.sql.slice(0, 60)}`).toBeLessThanOrEqual(
            ROWS_READ_PER_TOUCHED_CALL * shape.bounds.chunkTouchedCalls + ROWS_READ_FIXED,
          );
        }
        const quietLeft = (await db.prepare("SELECT COUNT(*) AS n FROM call_batches WHERE project_id = 'quiet' AND call_count > 0").first<{ n: number }>())!.n;
        chunks.push({ calls: r.calls, requests: r.requests, touched: r.touched, quietAt: quietLeft < 3 - quietDone ? i : null });
        quietDone = 3 - quietLeft;
        if (!r.more) break;
      }
      // The quiet project's requests were all taken within the first chunks, not after the backlog.
      expect(quietDone).toBe(3);
      expect(chunks.findIndex((c) => c.quietAt !== null)).toBeLessThanOrEqual(2);
      // The noisy project is fully counted, and exactly.
      await runRollup(db, T0 + 3 * DAY);
      expect(await snapshot(db)).toEqual(referenceRollup(received, [], []));
      // The history around the new calls was far larger than the bound, so the bound did the work.
      expect(shape.noisy.length).toBeGreaterThan(1.5 * shape.bounds.chunkTouchedCalls);
      console.log(JSON.stringify({ shape: shape.name, chunks: chunks.length, maxTouched: Math.max(...chunks.map((c) => c.touched)),
        maxRowsRead: Math.max(...metered.calls.flatMap((c) => c.statements.map((s) => s.rows_read))) }));
    }, 300_000);
  }
});

it("the default bounds are the documented ones", () => {
  const o: Required<RollupOptions> = DEFAULT_ROLLUP_OPTIONS;
  expect(o).toMatchObject({ chunkCalls: 12_000, chunkTouchedCalls: 12_000, chunkSpans: 2_000, nearCalls: 5_000 });
});

describe("the chunk's limits, at, under and over", () => {
  // Three requests of 2, 3 and 4 calls, each in its own session (one span each), nothing rolled up
  // before: a request's rows of work are its calls.
  async function seedThree(): Promise<void> {
    await resetDb(db);
    for (const [i, n] of [2, 3, 4].entries()) {
      await deliver(db, Array.from({ length: n }, (_, k): TestPayload => ({ type: "call", call: call({ session_id: `s${i}`, started_at_ms: T0 + k }) })), T0 + i);
    }
  }
  const loose: CallChunkBounds = { chunkCalls: 100, chunkTouchedCalls: 100, chunkSpans: 100, nearCalls: 100 };

  it("chunkTouchedCalls: requests while their rows of work add up to at most the bound, the first always", async () => {
    for (const [bound, requests] of [[1, 1], [4, 1], [5, 2], [8, 2], [9, 3]] as const) {
      await seedThree();
      const r = await rollupCallChunk(db, { ...loose, chunkTouchedCalls: bound });
      expect({ bound, requests: r.requests, touched: r.touched }).toEqual({ bound, requests, touched: [2, 5, 9][requests - 1] });
    }
  });

  it("chunkSpans: requests while their (session, client, hour) spans number at most the bound", async () => {
    for (const [bound, requests] of [[1, 1], [2, 2], [3, 3]] as const) {
      await seedThree();
      expect((await rollupCallChunk(db, { ...loose, chunkSpans: bound })).requests, `spans ${bound}`).toBe(requests);
    }
  });

  it("chunkCalls: requests while the calls before each are fewer than the bound", async () => {
    for (const [bound, requests] of [[1, 1], [2, 1], [3, 2], [5, 2], [6, 3]] as const) {
      await seedThree();
      expect((await rollupCallChunk(db, { ...loose, chunkCalls: bound })).requests, `calls ${bound}`).toBe(requests);
    }
  });
});

describe("many startups at the caps", () => {
  it("each startups chunk writes within a multiple of its rows of work; every declaration is counted", async () => {
    await resetDb(db);
    const STARTUPS = 12;
    const FIELDS = 16;
    const startups = Array.from({ length: STARTUPS }, (_, s): TestPayload => ({
      type: "startup",
      startup: {
        project_id: "noisy", session_id: `s${s}`, client_name: "flood",
        tools: Array.from({ length: 100 }, (_, t) => ({ name: `t${s}_${t}`, schema_bytes: 10, schema_hash: "5c01", description_hash: null, description_norm: null, policy: null })),
        agree_declared: Array.from({ length: FIELDS }, (_, f) => ({ field: `f${s}_${f}`, tools: Array.from({ length: 16 }, (_, t) => `x${s}_${t}`) })),
      },
    }));
    await deliver(db, startups, T0);
    // A startup is 100 + 16 × 16 = 356 rows of work: a bound of 800 takes two a chunk.
    const MAX_ROWS = 800;
    const metered = faultyDb(db);
    let chunks = 0;
    for (let more = 1; more; chunks++) {
      const before = metered.calls.length;
      more = (await rollupStartupChunk(metered.db, 200, MAX_ROWS, 0, NO_PROJECT_LEFT_ALONE)).more;
      const written = metered.calls[before]!.statements.reduce((n, s) => n + s.rows_written, 0);
      expect(written, `chunk ${chunks}`).toBeLessThanOrEqual(3 * MAX_ROWS);
    }
    expect(chunks).toBe(STARTUPS / 2);
    const declared = await db.prepare("SELECT COUNT(*) AS n FROM agreement_declarations WHERE project_id = 'noisy'").first<{ n: number }>();
    expect(declared!.n).toBe(STARTUPS * FIELDS * 16);
  });
});
