// Number formatting on the dashboard: rates, durations, sizes, money and the period deltas.
import { describe, expect, it } from "vitest";
import { formatChars, formatCompact, formatDelta, formatMs, formatRate, formatUsd } from "../../src/worker/dashboard/format.ts";

describe("dashboard formatting", () => {
  it("writes rates as percentages and undefined values as a dash", () => {
    expect(formatRate(0.7928)).toBe("79.3%");
    expect(formatRate(0)).toBe("0.0%");
    expect(formatRate(1)).toBe("100.0%");
    expect(formatRate(null)).toBe("—");
  });

  it("writes durations, sizes, counts and money readably", () => {
    expect(formatMs(0)).toBe("< 1 ms");
    expect(formatMs(0.4)).toBe("< 1 ms");
    expect(formatMs(1)).toBe("1 ms");
    expect(formatMs(41)).toBe("41 ms");
    expect(formatMs(999)).toBe("999 ms");
    expect(formatMs(1000)).toBe("1.00 s");
    expect(formatMs(12_345)).toBe("12.3 s");
    expect(formatMs(90_000)).toBe("1.5 min");
    expect(formatMs(null)).toBe("—");
    expect(formatChars(480)).toBe("480");
    expect(formatChars(1420)).toBe("1.4k");
    expect(formatChars(null)).toBe("—");
    expect(formatCompact(9_999)).toBe("9,999");
    expect(formatCompact(12_345)).toBe("12.3k");
    expect(formatCompact(1_234_567)).toBe("1.23M");
    expect(formatUsd(0.001126)).toBe("$0.00113");
    expect(formatUsd(0.0135)).toBe("$0.0135");
    expect(formatUsd(12.5)).toBe("$12.50");
    expect(formatUsd(null)).toBe("—");
  });

  it("gives counts a relative delta and rates a delta in points, coloured by direction", () => {
    expect(formatDelta(120, 100, { relative: true, higherIsBetter: true })).toEqual({ text: "+20.0%", tone: "good" });
    expect(formatDelta(80, 100, { relative: true, higherIsBetter: true })).toEqual({ text: "−20.0%", tone: "bad" });
    expect(formatDelta(0.12, 0.1, { relative: false, higherIsBetter: false })).toEqual({ text: "+2.0 pts", tone: "bad" });
    expect(formatDelta(0.5, 0.5, { relative: false, higherIsBetter: true })).toEqual({ text: "no change", tone: "flat" });
    expect(formatDelta(5, 0, { relative: true, higherIsBetter: true })).toEqual({ text: "new", tone: "flat" });
    expect(formatDelta(0, 0, { relative: true, higherIsBetter: true })).toEqual({ text: "no change", tone: "flat" });
    expect(formatDelta(null, 0.5, { relative: false, higherIsBetter: true })).toBeNull();
  });
});
