// A per-call counter's rule is written twice: in JS (`perCall` of src/worker/metrics/counters.ts,
// what the Analytics Engine points and the reference model count) and in SQL (the rollup's
// DELTAS_CTES in src/worker/rollup/calls.ts, what the hour rows hold). Here both are evaluated on
// generated calls — every outcome, empty or not, with and without a session and an args_hash (an
// OTLP span without arguments, SPEC §10) — stored by the ingest's own write path, folded by the
// real cron, and compared per (hour, tool, client) for every counter with a `perCall`.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { CallPayload } from "../../src/shared/index.ts";
import { batchTuples, storeBatchOnce } from "../../src/worker/db/raw-writes.ts";
import { COUNTERS, PER_CALL_COUNTER_NAMES, type CallFacts, type PerCallCounterName } from "../../src/worker/metrics/counters.ts";
import { runCron } from "./helpers/cron.ts";
import { createProject } from "./helpers/projects.ts";

const HOUR_MS = 3_600_000;

const callArb = fc
  .record({
    session_id: fc.constantFrom("", "s_aaaaaaaaaaaa", "s_bbbbbbbbbbbb"),
    client_name: fc.constantFrom("claude-ai", "cursor"),
    tool_name: fc.constantFrom("search", "refund"),
    hour: fc.integer({ min: 1, max: 3 }),
    offset_ms: fc.integer({ min: 0, max: HOUR_MS - 1 }),
    duration_ms: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 120_000 })),
    outcome: fc.constantFrom("ok", "bad_args", "tool_error", "crashed"),
    response_bytes: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1_000_000 })),
    is_empty: fc.boolean(),
    args_hash: fc.constantFrom("", "52a4fe5fc814", "0123456789ab"),
  })
  // SPEC §1.2: is_empty only on an ok call (the ingest refuses anything else).
  .map((c) => ({ ...c, is_empty: c.is_empty && c.outcome === "ok" }) as CallFacts & { client_name: string; tool_name: string; hour: number; offset_ms: number });

// 12 runs of ingest and rollup: more than the default 5 s on a loaded machine.
it("every per-call counter's JS rule and the rollup's SQL agree on generated calls", { timeout: 60_000 }, async () => {
  // Whole hours before now, so every call's hour is closed and folded by the run at `now`.
  const now = Date.now();
  const baseHour = now - (now % HOUR_MS) - 4 * HOUR_MS;
  await fc.assert(
    fc.asyncProperty(fc.array(callArb, { minLength: 1, maxLength: 60 }), async (calls) => {
      const project = await createProject("counter rules");
      const payloads: CallPayload[] = calls.map((c) => ({
        v: 1, type: "call", session_id: c.session_id, client_name: c.client_name, tool_name: c.tool_name,
        started_at_ms: baseHour + c.hour * HOUR_MS + c.offset_ms, duration_ms: c.duration_ms, outcome: c.outcome,
        response_bytes: c.response_bytes, is_empty: c.is_empty, args_hash: c.args_hash,
        client_version: null, server_version: null, protocol_version: null, session_kind: null, transport: null,
      }));
      const batchId = crypto.randomUUID();
      const stored = await storeBatchOnce(
        env.DB,
        { projectId: project.project_id, receivedAtMs: now, requestId: batchId, batchId, resendGuard: false, tuples: batchTuples(payloads) },
        now,
      );
      expect(stored).toBe("stored");
      await runCron(now);

      // JS: each call's perCall, added up per hour row.
      const expected = new Map<string, Record<PerCallCounterName, number>>();
      for (const c of calls) {
        const key = `${baseHour + c.hour * HOUR_MS}|${c.tool_name}|${c.client_name}`;
        const row = expected.get(key) ?? (Object.fromEntries(PER_CALL_COUNTER_NAMES.map((n) => [n, 0])) as Record<PerCallCounterName, number>);
        for (const name of PER_CALL_COUNTER_NAMES) row[name] += COUNTERS[name].perCall(c);
        expected.set(key, row);
      }
      // SQL: what the rollup wrote.
      const { results } = await env.DB.prepare(
        `SELECT hour_start_ms, tool_name, client_name, ${PER_CALL_COUNTER_NAMES.join(", ")} FROM tool_hour_metrics WHERE project_id = ?1`,
      )
        .bind(project.project_id)
        .all<Record<string, number | string>>();
      const actual = new Map(
        results.map((r) => [
          `${r.hour_start_ms}|${r.tool_name}|${r.client_name}`,
          Object.fromEntries(PER_CALL_COUNTER_NAMES.map((n) => [n, r[n]])) as Record<PerCallCounterName, number>,
        ]),
      );
      expect(Object.fromEntries(actual)).toEqual(Object.fromEntries(expected));
    }),
    { numRuns: 12 },
  );
});
