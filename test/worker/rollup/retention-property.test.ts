// SPEC §2.6 retention never changes a figure, as a property: a random workload is rolled up,
// retention deletes its old raw rows, then a second random workload arrives in the same
// sessions (up to 7 days late, as ingest allows) and is rolled up; every table must equal the
// reference computation over ALL calls ever received, the deleted ones included.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runRetention, runRollup } from "../../../src/worker/rollup/index.ts";
import { resetDb, snapshot } from "./fixtures.ts";
import { referenceRollup } from "./reference.ts";
import { buildPayloads, deliverRandomly, emptyReceived, rollupUntilCaughtUp, workloadArb } from "./workloads.ts";

const db = env.DB;
const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 20, 23, 0);
// The daily job 9 days later: with 8 days kept the cutoff falls a day after the first workload,
// with 9 days inside it.
const RETENTION_AT = T0 + 9 * DAY + 3 * 3_600_000;
const T1 = RETENTION_AT + 3_600_000;

describe("retention changes no figure", () => {
  it("holds for random workloads before and after a retention run", async () => {
    await fc.assert(
      fc.asyncProperty(workloadArb, workloadArb, fc.constantFrom(8, 9), fc.gen(), async (before, after, days, g) => {
        await resetDb(db);
        const received = emptyReceived();
        const s1 = await deliverRandomly(g, buildPayloads(before, T0), T0 + 2 * 3_600_000, received);
        expect(await rollupUntilCaughtUp(g, s1)).toBe(true);
        const rolled = await snapshot(db);

        await runRollup(db, RETENTION_AT); // the 5-minute cron keeps running; retention needs it current
        const r = await runRetention(db, RETENTION_AT, { retentionDays: days, chunkRows: g(fc.constantFrom, 1, 3, 20_000) });
        expect(r.caughtUp || r.queries === 45).toBe(true);
        expect(await snapshot(db)).toEqual(rolled);

        const s2 = await deliverRandomly(g, buildPayloads(after, T1), T1, received);
        expect(await rollupUntilCaughtUp(g, s2)).toBe(true);
        expect(await snapshot(db)).toEqual(referenceRollup(received.calls, received.startups, received.agreements));
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});
