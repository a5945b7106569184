// started_at + duration_ms of a call never passes the next call's started_at (SPEC §2.2's gap ≥ 0
// for sequential calls), whatever the sub-millisecond phases; the wall clock anchor follows
// Date.now() within a second.
import fc from "fast-check";
import { afterEach, expect, test, vi } from "vitest";
import { elapsedMs, wallMsAt, wireTimestamp } from "../../src/sdk/clock.ts";

afterEach(() => vi.restoreAllMocks());

test("sequential calls never overlap on the wire (property)", () => {
  fc.assert(
    fc.property(
      fc.double({ min: 0, max: 1_000, noNaN: true }),
      fc.array(fc.tuple(fc.double({ min: 0, max: 5, noNaN: true }), fc.double({ min: 0, max: 3, noNaN: true })), { minLength: 2, maxLength: 20 }),
      (origin, steps) => {
        const wallOrigin = 1_790_000_000_000.25;
        let perf = origin;
        vi.spyOn(Date, "now").mockImplementation(() => Math.floor(wallOrigin + perf));
        const calls: { start: number; duration: number; perfStart: number }[] = [];
        for (const [duration, pause] of steps) {
          const perfStart = perf;
          const start = wallMsAt(perfStart);
          perf += duration; // the call runs
          calls.push({ start, duration: elapsedMs(perfStart, perf), perfStart });
          perf += pause; // the client waits before the next call
        }
        for (let i = 0; i + 1 < calls.length; i++) {
          const gap = calls[i + 1]!.start - (calls[i]!.start + calls[i]!.duration);
          expect(gap).toBeGreaterThanOrEqual(0);
        }
      },
    ),
    { numRuns: 2_000 },
  );
});

test("the wall clock is followed: a jump of more than a second re-anchors", () => {
  let wall = 1_790_000_000_000;
  vi.spyOn(Date, "now").mockImplementation(() => wall);
  const perf = 5_000;
  const first = wallMsAt(perf);
  expect(Math.abs(first - wall)).toBeLessThanOrEqual(1_000);
  wall += 3_600_000; // the machine slept for an hour, or NTP stepped the clock
  expect(wallMsAt(perf + 1)).toBe(wall);
});

test("durations are truncated, never rounded up", () => {
  expect(elapsedMs(10.2, 10.9)).toBe(0);
  expect(elapsedMs(10.2, 11.19)).toBe(0);
  expect(elapsedMs(10.2, 11.2)).toBe(1);
  expect(elapsedMs(10, 9)).toBe(0);
});

test("wire timestamps are exactly toISOString, across second, year and epoch boundaries (property)", () => {
  const edges = [0, -1, 999, 1_000, 1_001, -999, -1_000, -1_001, 1_790_000_000_999, 253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_001, 8.64e15, -8.64e15];
  for (const ms of edges) expect(wireTimestamp(ms)).toBe(new Date(ms).toISOString());
  fc.assert(
    fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), fc.array(fc.integer({ min: 0, max: 2_500 }), { maxLength: 10 }), (start, steps) => {
      // Consecutive calls, some within one second and some across: the remembered second is reused or replaced.
      let ms = start;
      for (const step of [0, ...steps]) {
        ms = Math.min(8.64e15, ms + step);
        expect(wireTimestamp(ms)).toBe(new Date(ms).toISOString());
      }
    }),
    { numRuns: 2_000 },
  );
  // Not a whole number of milliseconds: the Date path, the same text.
  expect(wireTimestamp(1_790_000_000_000.75)).toBe(new Date(1_790_000_000_000.75).toISOString());
});
