// An in-isolate cache of counter sums over days that can no longer change, so long-range reads
// (90 days of latency histograms is ~12 MB of JSON) only read the recent, still-changing days.
//
// When is a day final? A payload is accepted up to 7 days after its started_at (SPEC §1.2), and a
// call's retry — which decides whether its chain's first call succeeded (SPEC §2.2) — starts at
// most one retry reach (duration_ms ≤ 1 day, + 30 s; retry-rule.ts) after it. So once the rollup is
// complete (`as_of`) past a day's end + 7 days + that reach, nothing can reach that day's rows any
// more; an hour of margin is added (for clocks).

import { DAY_MS, HOUR_MS } from "../time.ts";
import { MAX_RETRY_REACH_MS } from "../retry-rule.ts";
import { MAX_PAST_MS } from "../../shared/timestamp.ts";

export const FINAL_AFTER_MS = MAX_PAST_MS + MAX_RETRY_REACH_MS + HOUR_MS;

/** Start of the first day that may still change, given `as_of`; days before it are final. */
export function finalBoundaryMs(asOfMs: number | null): number | null {
  if (asOfMs === null) return null;
  return Math.floor((asOfMs - FINAL_AFTER_MS) / DAY_MS) * DAY_MS;
}

/**
 * A small LRU map: every entry is one request shape's sums (e.g. 50 tools' counters and merged
 * histograms, a few hundred KB at most), so 64 entries stay far below an isolate's 128 MB.
 */
export class LruCache<V> {
  readonly #entries = new Map<string, V>();
  readonly maxEntries: number;
  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    while (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  clear(): void {
    this.#entries.clear();
  }
}
