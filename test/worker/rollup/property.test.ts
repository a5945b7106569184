// SPEC §2.2 "exact and final regardless of arrival order", checked as a property: random
// workloads, delivered in random order and random batches, with rollups (of random chunk sizes
// and query budgets) at random points; once everything has arrived and a rollup has caught up,
// every rollup table equals the plain reference computation over all payloads, and running the
// rollup again changes nothing.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runRollup } from "../../../src/worker/rollup/index.ts";
import { resetDb, snapshot } from "./fixtures.ts";
import { referenceRollup } from "./reference.ts";
import { buildPayloads, deliverRandomly, emptyReceived, rollupOptionsArb, rollupUntilCaughtUp, workloadArb } from "./workloads.ts";

const db = env.DB;
// One hour before a UTC midnight, so workloads cross hours and the day boundary.
const T0 = Date.UTC(2026, 10, 20, 23, 0);

describe("rollup equals the reference computation whatever the arrival order", () => {
  it("holds for random workloads, arrival orders, batches and rollup points", async () => {
    await fc.assert(
      fc.asyncProperty(workloadArb, fc.gen(), async (w, g) => {
        await resetDb(db);
        const received = emptyReceived();
        const scheduled = await deliverRandomly(g, buildPayloads(w, T0), T0 + 2 * 3_600_000, received);
        expect(await rollupUntilCaughtUp(g, scheduled)).toBe(true);
        const first = await snapshot(db);
        expect(first).toEqual(referenceRollup(received.calls, received.startups, received.agreements));

        // Idempotent: a second run changes nothing.
        const second = await runRollup(db, scheduled + 3_600_000, g(() => rollupOptionsArb));
        expect(second.newCalls).toBe(0);
        expect(await snapshot(db)).toEqual(first);
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
