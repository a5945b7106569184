// GET /v1/metrics/insights: what to fix first, ranked, from the tool rows of reports.ts.
import { bucketLowerMs, type DurationHistogram } from "../histogram.ts";
import type { RegisteredToolRow } from "../db/metrics.ts";
import { INSIGHT_KINDS, SEVERITIES, type Insight, type InsightKind, type InsightsReport } from "./answers.ts";
import { roundTo } from "./counters.ts";
import type { DateRange, ReadFilters } from "./query.ts";
import { EMPTY_DESCRIPTION_NORM, UTF16_UNITS_PER_TOKEN, findConvergence, loadTools, type ToolRow } from "./reports.ts";
import { asOfIso, type ReadScope } from "./scope.ts";

/** Rate-based insights need at least this many calls in the range (none on fewer than 20). */
export const INSIGHT_MIN_CALLS = 20;
/**
 * The small-sample exception: error and crash insights also apply to a tool with fewer calls once
 * this many of its calls failed (resp. crashed). Five failures are a pattern whatever the number of
 * calls; a tool failing 12 of its 17 calls must not hide under the 20-call floor.
 */
export const INSIGHT_MIN_FAILURES = 5;
/** The small-sample rule in words, as the overview states it beside "Fix first". */
export const SMALL_SAMPLE_RULE =
  `Rates are judged from ${INSIGHT_MIN_CALLS} calls in the range on; error and crash rates also from ${INSIGHT_MIN_FAILURES} failed (crashed) calls on, whatever the number of calls.`;
export const INSIGHT_THRESHOLDS = {
  /** Errors (bad_args + tool_error + crashed) over 10 % of calls; over 25 % is high. */
  errorRateAbove: 0.1,
  /** Crashes over 1 % of calls; over 5 % is high. */
  crashRateAbove: 0.01,
  /** First-call success under 70 %. */
  firstCallRateBelow: 0.7,
  /** Empty results over 5 % of calls. */
  emptyRateAbove: 0.05,
  /** Average response over 10,000 UTF-16 units (≈ 2,500 tokens every call). */
  avgResponseBytesAbove: 10_000,
  /** More than 10 % of calls slower than 2 s. */
  slowShareAbove: 0.1,
  slowMs: 2_000,
} as const;

export { INSIGHT_KINDS, SEVERITIES, type Insight, type InsightKind, type Severity } from "./answers.ts";

/**
 * Share of calls slower than `slowMs`, from the histogram: counts the buckets whose every value is
 * above `slowMs` (lower edge > slowMs). The one bucket straddling 2,000 ms (1,971–2,049 ms with
 * 4 % buckets) is left out, so the share can be slightly under the exact one — never over it.
 */
export function slowCallCount(histogram: DurationHistogram, slowMs: number): number {
  let slow = 0;
  for (const [bucket, count] of Object.entries(histogram)) {
    if (bucketLowerMs(Number(bucket)) > slowMs) slow += count;
  }
  return slow;
}

function percent(value: number): string {
  return `${roundTo(value * 100, 1)} %`;
}

/** Kinds about calls that failed: within one severity they come before every other kind. */
const FAILURE_KINDS: ReadonlySet<InsightKind> = new Set(["crashes", "high_error_rate"]);

/**
 * What to fix first (thresholds: docs/read-api.md). Worst first: severity, then failed calls before
 * other kinds (a failed call did nothing for its user), then affected calls, kind order, value, name.
 */
export function buildInsights(rows: ToolRow[], histograms: Map<string, DurationHistogram>, registered: RegisteredToolRow[]): Insight[] {
  const t = INSIGHT_THRESHOLDS;
  const insights: Insight[] = [];
  for (const row of rows) {
    if (row.dead) {
      const tokens = (row.schema_bytes ?? 0) / UTF16_UNITS_PER_TOKEN;
      insights.push({
        kind: "dead_tool",
        severity: tokens >= 1_000 ? "high" : tokens >= 250 ? "medium" : "low",
        tool_name: row.tool_name,
        tools: [row.tool_name],
        value: roundTo(tokens, 1),
        threshold: 0,
        affected_calls: 0,
        calls: 0,
        // Whole tokens in the words, as every page shows a token estimate (the value keeps one decimal).
        message: `${row.tool_name} was never called but costs ${Math.round(tokens).toLocaleString("en-US")} tokens of schema in every session`,
      });
      continue;
    }
    const base = { tool_name: row.tool_name, tools: [row.tool_name], calls: row.calls };
    const errors = row.bad_args + row.tool_error + row.crashed;
    const crashRate = row.calls === 0 ? 0 : row.crashed / row.calls;
    if ((row.calls >= INSIGHT_MIN_CALLS || row.crashed >= INSIGHT_MIN_FAILURES) && crashRate > t.crashRateAbove) {
      insights.push({
        ...base,
        kind: "crashes",
        severity: crashRate > 0.05 ? "high" : "medium",
        value: roundTo(crashRate, 4),
        threshold: t.crashRateAbove,
        affected_calls: row.crashed,
        message: `${row.tool_name} crashed in ${row.crashed.toLocaleString("en-US")} of ${row.calls.toLocaleString("en-US")} calls (${percent(crashRate)}): the tool threw`,
      });
    }
    if ((row.calls >= INSIGHT_MIN_CALLS || errors >= INSIGHT_MIN_FAILURES) && row.error_rate !== null && row.error_rate > t.errorRateAbove) {
      insights.push({
        ...base,
        kind: "high_error_rate",
        severity: row.error_rate > 0.25 ? "high" : "medium",
        value: row.error_rate,
        threshold: t.errorRateAbove,
        affected_calls: errors,
        message:
          `${percent(row.error_rate)} of calls to ${row.tool_name} fail (${row.bad_args.toLocaleString("en-US")} bad arguments, ` +
          `${row.tool_error.toLocaleString("en-US")} tool errors, ${row.crashed.toLocaleString("en-US")} crashes of ${row.calls.toLocaleString("en-US")} calls)`,
      });
    }
    if (row.calls < INSIGHT_MIN_CALLS) continue;
    if (row.first_call_rate !== null && row.first_call_rate < t.firstCallRateBelow) {
      insights.push({
        ...base,
        kind: "low_first_call_success",
        severity: row.first_call_rate < 0.5 ? "high" : "medium",
        value: row.first_call_rate,
        threshold: t.firstCallRateBelow,
        affected_calls: row.first_call_attempts - row.first_call_ok,
        message: `Only ${percent(row.first_call_rate)} of first calls to ${row.tool_name} succeed (target ≥ 70 %)`,
      });
    }
    const slow = slowCallCount(histograms.get(row.tool_name) ?? {}, t.slowMs);
    const slowShare = slow / row.calls;
    if (slowShare > t.slowShareAbove) {
      insights.push({
        ...base,
        kind: "slow_calls",
        severity: slowShare > 0.25 ? "high" : "medium",
        value: roundTo(slowShare, 4),
        threshold: t.slowShareAbove,
        affected_calls: slow,
        message: `${percent(slowShare)} of calls to ${row.tool_name} take longer than 2 s`,
      });
    }
    if (row.empty_rate !== null && row.empty_rate > t.emptyRateAbove) {
      insights.push({
        ...base,
        kind: "empty_results",
        severity: row.empty_rate > 0.2 ? "high" : "medium",
        value: row.empty_rate,
        threshold: t.emptyRateAbove,
        affected_calls: row.empty,
        message: `${percent(row.empty_rate)} of calls to ${row.tool_name} return an empty result`,
      });
    }
    const avg = row.response_bytes.avg;
    if (avg !== null && avg > t.avgResponseBytesAbove) {
      insights.push({
        ...base,
        kind: "large_responses",
        severity: avg > 50_000 ? "high" : "medium",
        value: avg,
        threshold: t.avgResponseBytesAbove,
        affected_calls: row.calls,
        message: `${row.tool_name} answers ${Math.round(avg).toLocaleString("en-US")} characters on average (≈ ${Math.round(avg / UTF16_UNITS_PER_TOKEN).toLocaleString("en-US")} tokens per call)`,
      });
    }
  }
  const visible = new Set(rows.map((r) => r.tool_name));
  for (const c of findConvergence(registered)) {
    if (!c.tools.some((name) => visible.has(name))) continue;
    insights.push({
      kind: "converged_descriptions",
      severity: "low",
      tool_name: null,
      tools: c.tools,
      value: c.tools.length,
      threshold: 2,
      affected_calls: 0,
      calls: 0,
      message:
        c.description_norm === EMPTY_DESCRIPTION_NORM
          ? `${c.tools.join(", ")} have no description (or only stopwords): a model cannot tell them apart`
          : `${c.tools.join(", ")} have the same normalised description: a model cannot tell them apart`,
    });
  }
  return insights.sort(
    (a, b) =>
      SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity) ||
      Number(FAILURE_KINDS.has(b.kind)) - Number(FAILURE_KINDS.has(a.kind)) ||
      b.affected_calls - a.affected_calls ||
      INSIGHT_KINDS.indexOf(a.kind) - INSIGHT_KINDS.indexOf(b.kind) ||
      b.value - a.value ||
      ((a.tool_name ?? "") < (b.tool_name ?? "") ? -1 : (a.tool_name ?? "") > (b.tool_name ?? "") ? 1 : 0),
  );
}

export async function insightsReport(
  scope: ReadScope,
  range: DateRange,
  filters: ReadFilters,
): Promise<InsightsReport> {
  const [data, asOf] = await Promise.all([loadTools(scope, range, filters), asOfIso(scope)]);
  return {
    from: range.from,
    to: range.to,
    as_of: asOf,
    insights: buildInsights(data.rows, data.histograms, data.registered),
  };
}
