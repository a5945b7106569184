// Wire timestamps (SPEC §1.2): ISO 8601 with Z or ±hh:mm, 0–9 fraction digits, real dates only,
// and the 7-day / 5-minute window.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_FUTURE_MS, MAX_PAST_MS, parseTimestampMs, timeWindowProblem } from "../../src/shared/index.ts";

const NOON = Date.UTC(2026, 10, 29, 12, 0, 0);

describe("parseTimestampMs", () => {
  it("reads Z and ±hh:mm offsets", () => {
    expect(parseTimestampMs("2026-11-29T12:00:00Z")).toBe(NOON);
    expect(parseTimestampMs("2026-11-29T13:00:00+01:00")).toBe(NOON);
    expect(parseTimestampMs("2026-11-29T06:30:00-05:30")).toBe(NOON);
    expect(parseTimestampMs("2026-11-30T01:45:00+13:45")).toBe(NOON);
    expect(parseTimestampMs("2026-11-29T12:00:00-00:00")).toBe(NOON);
    expect(parseTimestampMs("2026-11-28T12:01:00-23:59")).toBe(NOON);
  });

  it("reads 0 to 9 fractional digits, keeping microseconds (Go sends nanoseconds)", () => {
    expect(parseTimestampMs("2026-11-29T12:00:00.5Z")).toBe(NOON + 500);
    expect(parseTimestampMs("2026-11-29T12:00:00.12Z")).toBe(NOON + 120);
    expect(parseTimestampMs("2026-11-29T12:00:00.123Z")).toBe(NOON + 123);
    expect(parseTimestampMs("2026-11-29T12:00:00.000001Z")).toBe(NOON + 0.001);
    expect(parseTimestampMs("2026-11-29T12:00:00.123456Z")).toBe(NOON + 123.456);
    // Nanoseconds: truncated to the microsecond.
    expect(parseTimestampMs("2026-11-29T12:00:00.123456789Z")).toBe(NOON + 123.456);
    expect(parseTimestampMs("2026-11-29T12:00:00.999999999Z")).toBe(NOON + 999.999);
    expect(parseTimestampMs("2026-11-29T13:00:00.000000001+01:00")).toBe(NOON);
    // Two calls a few microseconds apart stay ordered.
    expect(parseTimestampMs("2026-11-29T12:00:00.000002Z")!).toBeGreaterThan(parseTimestampMs("2026-11-29T12:00:00.000001Z")!);
  });

  it("agrees with Date.parse wherever Date.parse is exact (0–3 digits)", () => {
    fc.assert(
      fc.property(fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("2200-12-31T23:59:59Z"), noInvalidDate: true }), (date) => {
        const iso = date.toISOString();
        expect(parseTimestampMs(iso)).toBe(date.getTime());
        expect(parseTimestampMs(iso.replace(/\.\d{3}Z$/, "Z"))).toBe(Math.floor(date.getTime() / 1000) * 1000);
      }),
      { numRuns: 500 },
    );
  });

  it("accepts real calendar dates, leap days included", () => {
    expect(parseTimestampMs("2024-02-29T00:00:00Z")).toBe(Date.UTC(2024, 1, 29));
    expect(parseTimestampMs("2000-02-29T00:00:00Z")).toBe(Date.UTC(2000, 1, 29));
    expect(parseTimestampMs("2026-12-31T23:59:59Z")).toBe(Date.UTC(2026, 11, 31, 23, 59, 59));
    expect(parseTimestampMs("2026-04-30T00:00:00Z")).toBe(Date.UTC(2026, 3, 30));
  });

  it.each([
    ["not a leap year", "2026-02-29T00:00:00Z"],
    ["century not a leap year", "1900-02-29T00:00:00Z"],
    ["April 31", "2026-04-31T00:00:00Z"],
    ["month 13", "2026-13-01T00:00:00Z"],
    ["month 0", "2026-00-10T00:00:00Z"],
    ["day 0", "2026-01-00T00:00:00Z"],
    ["day 32", "2026-01-32T00:00:00Z"],
    ["hour 24", "2026-11-29T24:00:00Z"],
    ["minute 60", "2026-11-29T12:60:00Z"],
    ["leap second", "2026-12-31T23:59:60Z"],
    ["offset hour 24", "2026-11-29T12:00:00+24:00"],
    ["offset minute 60", "2026-11-29T12:00:00+01:60"],
    ["offset without colon", "2026-11-29T12:00:00+0100"],
    ["offset hours only", "2026-11-29T12:00:00+01"],
    ["no offset", "2026-11-29T12:00:00"],
    ["no seconds", "2026-11-29T12:00Z"],
    ["10 fraction digits", "2026-11-29T12:00:00.1234567891Z"],
    ["dot without digits", "2026-11-29T12:00:00.Z"],
    ["comma fraction", "2026-11-29T12:00:00,5Z"],
    ["space separator", "2026-11-29 12:00:00Z"],
    ["lowercase t", "2026-11-29t12:00:00Z"],
    ["lowercase z", "2026-11-29T12:00:00z"],
    ["date only", "2026-11-29"],
    ["epoch number as text", "1795953600000"],
    ["surrounding space", " 2026-11-29T12:00:00Z"],
    ["trailing newline", "2026-11-29T12:00:00Z\n"],
    ["non-ASCII digits", "２０２６-11-29T12:00:00Z"],
    ["empty", ""],
  ])("rejects %s", (_name, text) => {
    expect(parseTimestampMs(text)).toBeNull();
  });
});

describe("timeWindowProblem (SPEC §1.2: more than 7 days old or 5 minutes ahead drops)", () => {
  it("keeps exactly 7 days old and exactly 5 minutes ahead", () => {
    expect(MAX_PAST_MS).toBe(604_800_000);
    expect(MAX_FUTURE_MS).toBe(300_000);
    expect(timeWindowProblem(NOON - MAX_PAST_MS, NOON)).toBeNull();
    expect(timeWindowProblem(NOON - MAX_PAST_MS + 1, NOON)).toBeNull();
    expect(timeWindowProblem(NOON + MAX_FUTURE_MS, NOON)).toBeNull();
    expect(timeWindowProblem(NOON + MAX_FUTURE_MS - 1, NOON)).toBeNull();
    expect(timeWindowProblem(NOON, NOON)).toBeNull();
  });

  it("drops one microsecond beyond either edge", () => {
    expect(timeWindowProblem(NOON - MAX_PAST_MS - 0.001, NOON)).toBe("more than 7 days old");
    expect(timeWindowProblem(NOON - MAX_PAST_MS - 1, NOON)).toBe("more than 7 days old");
    expect(timeWindowProblem(NOON + MAX_FUTURE_MS + 0.001, NOON)).toBe("more than 5 minutes in the future");
    expect(timeWindowProblem(NOON + MAX_FUTURE_MS + 1, NOON)).toBe("more than 5 minutes in the future");
  });
});
