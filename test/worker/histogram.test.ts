// SPEC §2.3: percentiles read back from buckets are within 5 % (or 1 ms under 20 ms) of exact.
import { describe, expect, it } from "vitest";
import { durationBucket, bucketValueMs, histogramPercentile, addHistogram } from "../../src/worker/histogram.ts";

describe("duration histogram", () => {
  it("keeps every duration within 2.5 % of its bucket's value (exact under 100 ms)", () => {
    for (let d = 0; d <= 2_000_000; d += d < 5000 ? 1 : 97) {
      const v = bucketValueMs(durationBucket(d));
      if (d < 100) expect(v).toBe(d);
      else expect(Math.abs(v - d) / d).toBeLessThanOrEqual(0.025);
    }
    const max = 86_400_000;
    expect(Math.abs(bucketValueMs(durationBucket(max)) - max) / max).toBeLessThanOrEqual(0.025);
  });

  it("reads nearest-rank percentiles from summed histograms", () => {
    const durations = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 30_000);
    const a: Record<string, number> = {};
    const b: Record<string, number> = {};
    durations.forEach((d, i) => {
      const h = i % 2 ? a : b;
      const k = String(durationBucket(d));
      h[k] = (h[k] ?? 0) + 1;
    });
    const sum = addHistogram(addHistogram({}, a), b);
    const sorted = [...durations].sort((x, y) => x - y);
    for (const p of [50, 95, 99]) {
      const exact = sorted[Math.ceil((p * sorted.length) / 100) - 1]!;
      const got = histogramPercentile(sum, p)!;
      if (exact < 20) expect(Math.abs(got - exact)).toBeLessThanOrEqual(1);
      else expect(Math.abs(got - exact) / exact).toBeLessThanOrEqual(0.05);
    }
    expect(histogramPercentile({}, 50)).toBeNull();
  });
});
