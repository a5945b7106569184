// The counters of SPEC §2.1–2.3, defined once: their rollup column, how rows add up, and how an
// answer shows them (counts, rates divided at read time, averages, percentiles). The SQL that sums
// them (counter-sums.ts), every report and the dashboard derive from this module; adding a counter
// starts here (docs/architecture.md, "Adding a counter").
import { addHistogram, histogramPercentile, type DurationHistogram } from "../histogram.ts";

type CounterDefinition = {
  /** How rows add up. Every counter is additive (SPEC §2): a sum over hours, days, tools and clients. */
  readonly sums: "SUM";
  /**
   * How an answer shows it: `count` → an integer field of the counter's name; `sum_and_average` →
   * `{sum, avg}` under `as` (avg per call, 1 decimal); `hidden` → read for nothing shown yet.
   */
  readonly shown: "count" | "hidden" | { readonly sumAndAverageAs: string };
};

/**
 * Each key is the counter's name and its column in `tool_hour_metrics` and `tool_day_metrics`
 * (one row per project, hour or day, tool and client; filled by rollup/calls.ts). The order is the
 * order of the answers' fields (SPEC §3).
 */
export const COUNTERS = {
  calls: { sums: "SUM", shown: "count" },
  /** Every ok call, empty ones included (SPEC §2.1: empty ⊆ ok). */
  ok: { sums: "SUM", shown: "count" },
  empty: { sums: "SUM", shown: "count" },
  bad_args: { sums: "SUM", shown: "count" },
  tool_error: { sums: "SUM", shown: "count" },
  crashed: { sums: "SUM", shown: "count" },
  /** SPEC §2.2. */
  retries: { sums: "SUM", shown: "count" },
  first_call_attempts: { sums: "SUM", shown: "count" },
  first_call_ok: { sums: "SUM", shown: "count" },
  /**
   * Calls sent without a session (SPEC §2.2, §4: nothing told their conversations apart): each is a
   * chain of its own, so the share of calls with a known session says where retries could be measured.
   */
  calls_without_session: { sums: "SUM", shown: "count" },
  /** UTF-16 length of the responses (SPEC §1.3). */
  response_bytes_sum: { sums: "SUM", shown: { sumAndAverageAs: "response_bytes" } },
  duration_ms_sum: { sums: "SUM", shown: "hidden" },
} as const satisfies Record<string, CounterDefinition>;

export type CounterName = keyof typeof COUNTERS;
export const COUNTER_NAMES = Object.keys(COUNTERS) as CounterName[];

/** The additive counters, as summed over any set of rollup rows. */
export type Counters = Record<CounterName, number>;

/**
 * Rates (SPEC §2.1–2.2): the numerators' sum ÷ the denominator, divided at read time; null when the
 * denominator is 0, else rounded to 4 decimals. Shown after the counts, in this order.
 */
export const RATES = {
  first_call_rate: { numerator: ["first_call_ok"], denominator: "first_call_attempts" },
  empty_rate: { numerator: ["empty"], denominator: "calls" },
  /** SPEC §2.1: empties are not errors. */
  error_rate: { numerator: ["bad_args", "tool_error", "crashed"], denominator: "calls" },
} as const satisfies Record<string, { numerator: readonly CounterName[]; denominator: CounterName }>;

type CountName = { [K in CounterName]: (typeof COUNTERS)[K]["shown"] extends "count" ? K : never }[CounterName];
type SumAndAverageName = {
  [K in CounterName]: (typeof COUNTERS)[K]["shown"] extends { sumAndAverageAs: string } ? K : never;
}[CounterName];
type SumAndAverageField<K extends SumAndAverageName> = (typeof COUNTERS)[K]["shown"] extends { sumAndAverageAs: infer A extends string } ? A : never;

export type Percentiles = { p50: number | null; p95: number | null; p99: number | null };

/** The counters as an answer shows them, in SPEC §3's key order: counts, rates, latency, sizes. */
export type CounterFigures = { [K in CountName]: number } & { [K in keyof typeof RATES]: number | null } & {
  duration_ms: Percentiles;
} & { [K in SumAndAverageName as SumAndAverageField<K>]: { sum: number; avg: number | null } };

/** Counters and the summed latency histogram of one group (a tool, a client, a time bucket…). */
export type CounterGroup = { counters: Counters; histogram: DurationHistogram };

export function zeroCounters(): Counters {
  const counters = {} as Counters;
  for (const name of COUNTER_NAMES) counters[name] = 0;
  return counters;
}

export function addCounters(into: Counters, from: Counters): Counters {
  for (const name of COUNTER_NAMES) into[name] += from[name];
  return into;
}

export function emptyGroup(): CounterGroup {
  return { counters: zeroCounters(), histogram: {} };
}

export function mergeGroups(groups: Iterable<CounterGroup>): CounterGroup {
  const total = emptyGroup();
  for (const g of groups) {
    addCounters(total.counters, g.counters);
    addHistogram(total.histogram, g.histogram);
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Rounding (SPEC §3)
// ---------------------------------------------------------------------------------------------

export function roundTo(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  // Number.EPSILON nudges halves that binary floating point stores just below .5 (1.005 → 1.01).
  const rounded = Math.round((value + Math.sign(value) * Number.EPSILON * Math.abs(value)) * factor) / factor;
  return Object.is(rounded, -0) ? 0 : rounded;
}

/** A rate: null when its denominator is 0, else rounded to 4 decimals. */
export function rate(numerator: number, denominator: number): number | null {
  return denominator === 0 ? null : roundTo(numerator / denominator, 4);
}

/** An average: null over nothing, else rounded to 1 decimal. */
export function average(sum: number, count: number): number | null {
  return count === 0 ? null : roundTo(sum / count, 1);
}

/** p50/p95/p99 from the summed buckets (SPEC §2.3); null with no calls. */
export function percentiles(histogram: DurationHistogram): Percentiles {
  return {
    p50: histogramPercentile(histogram, 50),
    p95: histogramPercentile(histogram, 95),
    p99: histogramPercentile(histogram, 99),
  };
}

const RATE_ENTRIES = Object.entries(RATES) as [keyof typeof RATES, (typeof RATES)[keyof typeof RATES]][];

/** One group's figures, everything derived from COUNTERS and RATES. */
export function counterFigures(group: CounterGroup): CounterFigures {
  const c = group.counters;
  const figures: Record<string, unknown> = {};
  for (const name of COUNTER_NAMES) if (COUNTERS[name].shown === "count") figures[name] = c[name];
  for (const [name, r] of RATE_ENTRIES) {
    let numerator = 0;
    for (const n of r.numerator) numerator += c[n];
    figures[name] = rate(numerator, c[r.denominator]);
  }
  figures.duration_ms = percentiles(group.histogram);
  for (const name of COUNTER_NAMES) {
    const shown: CounterDefinition["shown"] = COUNTERS[name].shown;
    if (typeof shown === "object") figures[shown.sumAndAverageAs] = { sum: c[name], avg: average(c[name], c.calls) };
  }
  return figures as CounterFigures;
}
