// The counters of SPEC §2.1–2.3, defined once: column, how rows add, what one call adds, how answers
// show them. Everything else derives from this; what cannot import it is checked against it by
// test/worker/counters.test.ts. Adding a counter starts here (docs/architecture.md).
import { z } from "zod";
import { addHistogram, histogramPercentile, type DurationHistogram } from "../histogram.ts";
import { DEFINITIONS } from "./definitions.ts";

export type CallFacts = {
  /** Empty when no session is known (SPEC §2.2). */
  session_id: string;
  outcome: "ok" | "bad_args" | "tool_error" | "crashed";
  is_empty: boolean;
  duration_ms: number;
  response_bytes: number;
  /** Empty when the arguments are not known (an OTLP span without them, SPEC §10). */
  args_hash: string;
};

type CounterDefinition = {
  /** How rows add up. Every counter is additive (SPEC §2): a sum over hours, days, tools and clients. */
  readonly sums: "SUM";
  /**
   * `sum_and_average`: `{sum, avg}` under `as` (avg per call, 1 decimal); `hidden`: read for
   * nothing shown yet.
   */
  readonly shown: "count" | "hidden" | { readonly sumAndAverageAs: string };
  /**
   * null for the SPEC §2.2 sequence counters, which need the call's neighbours (only the rollup has
   * them).
   */
  readonly perCall: ((call: CallFacts) => number) | null;
  /** The MCP tools' output schema carries it. */
  readonly description: string;
};

/**
 * Key = column in tool_hour_metrics and tool_day_metrics; the order is the answers' field order
 * (SPEC §3).
 */
export const COUNTERS = {
  calls: { sums: "SUM", shown: "count", perCall: () => 1, description: DEFINITIONS.calls },
  /** Every ok call, empty ones included (SPEC §2.1: empty ⊆ ok). */
  ok: { sums: "SUM", shown: "count", perCall: (c) => (c.outcome === "ok" ? 1 : 0), description: DEFINITIONS.ok },
  empty: {
    sums: "SUM",
    shown: "count",
    perCall: (c) => (c.outcome === "ok" && c.is_empty ? 1 : 0),
    description: DEFINITIONS.empty,
  },
  bad_args: {
    sums: "SUM",
    shown: "count",
    perCall: (c) => (c.outcome === "bad_args" ? 1 : 0),
    description: DEFINITIONS.bad_args,
  },
  tool_error: { sums: "SUM", shown: "count", perCall: (c) => (c.outcome === "tool_error" ? 1 : 0), description: DEFINITIONS.tool_error },
  crashed: { sums: "SUM", shown: "count", perCall: (c) => (c.outcome === "crashed" ? 1 : 0), description: DEFINITIONS.crashed },
  /** SPEC §2.2. */
  retries: {
    sums: "SUM",
    shown: "count",
    perCall: null,
    description: `calls that are retries: ${DEFINITIONS.retry}`,
  },
  first_call_attempts: { sums: "SUM", shown: "count", perCall: null, description: DEFINITIONS.first_call_attempts },
  first_call_ok: { sums: "SUM", shown: "count", perCall: null, description: DEFINITIONS.first_call_ok },
  /**
   * SPEC §2.2, §4: each is a chain of its own, so the share with a session says where retries could
   * be measured.
   */
  calls_without_session: {
    sums: "SUM",
    shown: "count",
    perCall: (c) => (c.session_id === "" ? 1 : 0),
    description: DEFINITIONS.without_session,
  },
  /**
   * SPEC §10: retries need the arguments (SPEC §2.2), so a row with any such call reports them as
   * not measurable.
   */
  calls_without_args_hash: {
    sums: "SUM",
    shown: "count",
    perCall: (c) => (c.args_hash === "" ? 1 : 0),
    description: DEFINITIONS.without_args_hash,
  },
  /** UTF-16 length of the responses (SPEC §1.3). */
  response_bytes_sum: {
    sums: "SUM",
    shown: { sumAndAverageAs: "response_bytes" },
    perCall: (c) => c.response_bytes,
    description: "UTF-16 length of the results' JSON: sum, and average per call (about 4 per token)",
  },
  duration_ms_sum: { sums: "SUM", shown: "hidden", perCall: (c) => c.duration_ms, description: "durations in ms, summed" },
} as const satisfies Record<string, CounterDefinition>;

export type CounterName = keyof typeof COUNTERS;
export const COUNTER_NAMES = Object.keys(COUNTERS) as CounterName[];

/** What an Analytics Engine point can carry. */
export type PerCallCounterName = { [K in CounterName]: (typeof COUNTERS)[K]["perCall"] extends null ? never : K }[CounterName];
export const PER_CALL_COUNTER_NAMES = COUNTER_NAMES.filter((name): name is PerCallCounterName => COUNTERS[name].perCall !== null);

export function addCall(into: Record<PerCallCounterName, number>, call: CallFacts): void {
  for (const name of PER_CALL_COUNTER_NAMES) into[name] += COUNTERS[name].perCall(call);
}

export type Counters = Record<CounterName, number>;

/** SPEC §2.1–2.2: divided at read time; null when the denominator is 0, else 4 decimals. */
export const RATES = {
  first_call_rate: {
    numerator: ["first_call_ok"],
    denominator: "first_call_attempts",
    description: DEFINITIONS.first_call_rate,
  },
  empty_rate: { numerator: ["empty"], denominator: "calls", description: DEFINITIONS.empty_rate },
  /** SPEC §2.1: empties are not errors. */
  error_rate: { numerator: ["bad_args", "tool_error", "crashed"], denominator: "calls", description: DEFINITIONS.error_rate },
} as const satisfies Record<string, { numerator: readonly CounterName[]; denominator: CounterName; description: string }>;

type CountName = { [K in CounterName]: (typeof COUNTERS)[K]["shown"] extends "count" ? K : never }[CounterName];
type SumAndAverageName = {
  [K in CounterName]: (typeof COUNTERS)[K]["shown"] extends { sumAndAverageAs: string } ? K : never;
}[CounterName];
type SumAndAverageField<K extends SumAndAverageName> = (typeof COUNTERS)[K]["shown"] extends { sumAndAverageAs: infer A extends string } ? A : never;


/**
 * SPEC §10: never reported as 0 retries or 100 % first-call success. One such call is enough, since
 * its neighbours' figures depend on it.
 */
export const NOT_MEASURABLE_WITHOUT_ARGS = ["retries", "first_call_attempts", "first_call_ok", "first_call_rate"] as const;
export type NotMeasurableFigure = (typeof NOT_MEASURABLE_WITHOUT_ARGS)[number];

export function notMeasurable(counters: Pick<Counters, "calls_without_args_hash">): NotMeasurableFigure[] | undefined {
  return counters.calls_without_args_hash > 0 ? [...NOT_MEASURABLE_WITHOUT_ARGS] : undefined;
}

/** Latency percentiles of a group (SPEC §2.3), in ms; null with no calls. */
export const Percentiles = z.object({
  p50: z.number().nullable().describe("median duration in ms (null without calls)"),
  p95: z.number().nullable().describe("95th percentile duration in ms (null without calls)"),
  p99: z.number().nullable().describe("99th percentile duration in ms (null without calls)"),
});
export type Percentiles = z.infer<typeof Percentiles>;

const SumAndAverage = z.object({ sum: z.number().int(), avg: z.number().nullable() });
const NotMeasurable = z
  .array(z.enum(NOT_MEASURABLE_WITHOUT_ARGS))
  .optional()
  .describe(`present when these figures cannot be measured: ${DEFINITIONS.without_args_hash}`);

type CounterFiguresShape = { [K in CountName]: z.ZodNumber } & { [K in keyof typeof RATES]: z.ZodNullable<z.ZodNumber> } & {
  duration_ms: typeof Percentiles;
} & { [K in SumAndAverageName as SumAndAverageField<K>]: typeof SumAndAverage } & { not_measurable: typeof NotMeasurable };

/**
 * SPEC §3 key order; derived from COUNTERS and RATES so an added counter reaches every answer
 * schema, the OpenAPI document and the MCP output schemas.
 */
function counterFiguresShape(): CounterFiguresShape {
  const shape: Record<string, z.ZodType> = {};
  for (const name of COUNTER_NAMES) {
    if (COUNTERS[name].shown === "count") shape[name] = z.number().int().describe(COUNTERS[name].description);
  }
  for (const [name, r] of Object.entries(RATES)) shape[name] = z.number().nullable().describe(r.description);
  shape.duration_ms = Percentiles.describe(DEFINITIONS.percentiles);
  for (const name of COUNTER_NAMES) {
    const shown: CounterDefinition["shown"] = COUNTERS[name].shown;
    if (typeof shown === "object") shape[shown.sumAndAverageAs] = SumAndAverage.describe(COUNTERS[name].description);
  }
  shape.not_measurable = NotMeasurable;
  return shape as CounterFiguresShape;
}
export const CounterFigures = z.object(counterFiguresShape());
export type CounterFigures = z.infer<typeof CounterFigures>;

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

export function rate(numerator: number, denominator: number): number | null {
  return denominator === 0 ? null : roundTo(numerator / denominator, 4);
}

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
  const unmeasured = notMeasurable(c);
  if (unmeasured !== undefined) figures.not_measurable = unmeasured;
  return figures as CounterFigures;
}
