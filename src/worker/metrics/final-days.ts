// An in-isolate cache of counter sums over days that can no longer change. A day is final once the
// rollup's as_of passes its end + 7 days (SPEC §1.2 acceptance) + one retry reach (SPEC §2.2,
// retry-rule.ts) + an hour of margin for clocks.

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
