// Logarithmic latency buckets (SPEC §2.3): exact to 99 ms, then ×1.04 per bucket, each representative
// within 2.5 % of every duration in it after rounding — inside the SPEC's 5 %.

const EXACT_BELOW_MS = 100;
const GROWTH = 1.04;
const LN_GROWTH = Math.log(GROWTH);

/** Bucket index of a duration in milliseconds (negative or fractional input is clamped/floored). */
export function durationBucket(durationMs: number): number {
  const d = Math.max(0, Math.floor(durationMs));
  if (d < EXACT_BELOW_MS) return d;
  return EXACT_BELOW_MS + Math.floor(Math.log(d / EXACT_BELOW_MS) / LN_GROWTH + 1e-12);
}

/** Smallest whole duration that falls in bucket `index`. */
export function bucketLowerMs(index: number): number {
  if (index < EXACT_BELOW_MS) return index;
  let d = Math.ceil(EXACT_BELOW_MS * GROWTH ** (index - EXACT_BELOW_MS));
  // Floating point can put the computed edge one off; settle it against durationBucket itself.
  while (d > 0 && durationBucket(d - 1) >= index) d--;
  while (durationBucket(d) < index) d++;
  return d;
}

/** The value reported for a bucket: minimises the worst relative error over its durations. */
export function bucketValueMs(index: number): number {
  if (index < EXACT_BELOW_MS) return index;
  const lo = bucketLowerMs(index);
  const hi = bucketLowerMs(index + 1) - 1;
  return Math.round((2 * lo * hi) / (lo + hi));
}

export type DurationHistogram = Record<string, number>;

/** Adds `from` into `into` (bucket-wise) and returns `into`. */
export function addHistogram(into: DurationHistogram, from: DurationHistogram): DurationHistogram {
  for (const key in from) into[key] = (into[key] ?? 0) + (from[key] ?? 0);
  return into;
}

/**
 * Nearest-rank percentile (the smallest d with at least p % of calls ≤ d), read from summed buckets.
 * `null` when the histogram holds no calls.
 */
export function histogramPercentile(histogram: DurationHistogram, p: number): number | null {
  const buckets = Object.keys(histogram)
    .map(Number)
    .filter((b) => (histogram[b] ?? 0) > 0)
    .sort((a, b) => a - b);
  let total = 0;
  for (const b of buckets) total += histogram[b] ?? 0;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil((p * total) / 100));
  let seen = 0;
  for (const b of buckets) {
    seen += histogram[b] ?? 0;
    if (seen >= rank) return bucketValueMs(b);
  }
  return bucketValueMs(buckets[buckets.length - 1] ?? 0);
}
