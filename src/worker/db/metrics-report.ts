// The read API's answers (SPEC §2–3), built from the sums in metrics.ts: rates divided at read time,
// rounding and null rules, dead tools, insights and schema regressions. The JSON routes and the
// dashboard both render these, so a figure on the page is the figure the API answers.
import { bucketLowerMs, histogramPercentile, type DurationHistogram, addHistogram } from "../histogram.ts";
import {
  DAY_MS,
  HOUR_MS,
  addCounters,
  listAgreementDeclarations,
  listRegisteredTools,
  listToolVersions,
  readAsOfMs,
  sumAgreement,
  sumCounterGroups,
  sumPairs,
  sumSessions,
  zeroCounters,
  type CounterGroup,
  type Counters,
  type Grain,
  type PairRow,
  type RegisteredToolRow,
  type ToolVersionRow,
} from "./metrics.ts";

// ---------------------------------------------------------------------------------------------
// Ranges and filters
// ---------------------------------------------------------------------------------------------

/** Inclusive UTC dates `from`..`to` (SPEC §3), with their epoch bounds (`endMs` exclusive). */
export type DateRange = { from: string; to: string; startMs: number; endMs: number; days: number };

export type ReadFilters = { client?: string | undefined; tool?: string | undefined };

export function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function rangeFromDays(fromDayMs: number, toDayMs: number): DateRange {
  return {
    from: isoDate(fromDayMs),
    to: isoDate(toDayMs),
    startMs: fromDayMs,
    endMs: toDayMs + DAY_MS,
    days: Math.round((toDayMs - fromDayMs) / DAY_MS) + 1,
  };
}

/** The equal-length period just before `range` (the dashboard's deltas). */
export function previousRange(range: DateRange): DateRange {
  return rangeFromDays(range.startMs - range.days * DAY_MS, range.startMs - DAY_MS);
}

export function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

// ---------------------------------------------------------------------------------------------
// Rounding and rates (SPEC §3)
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

export type Percentiles = { p50: number | null; p95: number | null; p99: number | null };

export function percentiles(histogram: DurationHistogram): Percentiles {
  return {
    p50: histogramPercentile(histogram, 50),
    p95: histogramPercentile(histogram, 95),
    p99: histogramPercentile(histogram, 99),
  };
}

/** The §2.1–2.3 counters with their rates, percentiles and response size, in SPEC §3's key order. */
export type CounterFigures = Omit<Counters, "response_bytes_sum" | "duration_ms_sum"> & {
  first_call_rate: number | null;
  empty_rate: number | null;
  error_rate: number | null;
  duration_ms: Percentiles;
  response_bytes: { sum: number; avg: number | null };
};

export function counterFigures(group: CounterGroup): CounterFigures {
  const c = group.counters;
  return {
    calls: c.calls,
    ok: c.ok,
    empty: c.empty,
    bad_args: c.bad_args,
    tool_error: c.tool_error,
    crashed: c.crashed,
    retries: c.retries,
    first_call_attempts: c.first_call_attempts,
    first_call_ok: c.first_call_ok,
    first_call_rate: rate(c.first_call_ok, c.first_call_attempts),
    empty_rate: rate(c.empty, c.calls),
    // SPEC §2.1: empties are not errors.
    error_rate: rate(c.bad_args + c.tool_error + c.crashed, c.calls),
    duration_ms: percentiles(group.histogram),
    response_bytes: { sum: c.response_bytes_sum, avg: average(c.response_bytes_sum, c.calls) },
  };
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
// GET /v1/metrics/tools
// ---------------------------------------------------------------------------------------------

export type ToolPolicy = { requires_authorization: boolean; requires_verified_identity: boolean } | null;

export type ToolRow = { tool_name: string } & CounterFigures & {
    schema_bytes: number | null;
    registered: boolean;
    dead: boolean;
    policy: ToolPolicy;
  };

/** A policy with both flags false is no policy (SPEC §2.4). */
export function policyOf(tool: RegisteredToolRow): ToolPolicy {
  const requiresAuthorization = tool.requires_authorization === 1;
  const requiresVerifiedIdentity = tool.requires_verified_identity === 1;
  if (!requiresAuthorization && !requiresVerifiedIdentity) return null;
  return { requires_authorization: requiresAuthorization, requires_verified_identity: requiresVerifiedIdentity };
}

export function toolRow(name: string, group: CounterGroup, registered: RegisteredToolRow | undefined): ToolRow {
  const figures = counterFigures(group);
  const policy = registered ? policyOf(registered) : null;
  return {
    tool_name: name,
    ...figures,
    schema_bytes: registered ? registered.schema_bytes : null,
    registered: registered !== undefined,
    // SPEC §2.4: registered, no calls in the range and filters, and no policy exempting it.
    dead: registered !== undefined && figures.calls === 0 && policy === null,
    policy,
  };
}

export type ToolsReport = {
  from: string;
  to: string;
  as_of: string | null;
  tools: ToolRow[];
};

/** Order of tool rows: most calls first, then by name (stable and predictable for clients). */
function byCallsThenName(a: ToolRow, b: ToolRow): number {
  return b.calls - a.calls || (a.tool_name < b.tool_name ? -1 : a.tool_name > b.tool_name ? 1 : 0);
}

export type ToolsData = { rows: ToolRow[]; histograms: Map<string, DurationHistogram>; registered: RegisteredToolRow[] };

/**
 * One row per tool that was called in the range and filters or is registered (and matches the `tool`
 * filter), SPEC §3.
 */
export async function loadTools(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: ReadFilters,
): Promise<ToolsData> {
  const [groups, registered] = await Promise.all([
    sumCounterGroups(db, { projectId, startMs: range.startMs, endMs: range.endMs, ...filters }, "day", "tool"),
    listRegisteredTools(db, projectId),
  ]);
  const registeredByName = new Map(registered.map((t) => [t.tool_name, t]));
  const names = new Set(groups.keys());
  for (const t of registered) if (filters.tool === undefined || t.tool_name === filters.tool) names.add(t.tool_name);
  const rows: ToolRow[] = [];
  const histograms = new Map<string, DurationHistogram>();
  for (const name of names) {
    const group = groups.get(name) ?? emptyGroup();
    histograms.set(name, group.histogram);
    rows.push(toolRow(name, group, registeredByName.get(name)));
  }
  rows.sort(byCallsThenName);
  return { rows, histograms, registered };
}

export async function toolsReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: ReadFilters,
): Promise<ToolsReport> {
  const [data, asOf] = await Promise.all([loadTools(db, projectId, range, filters), readAsOfMs(db)]);
  return { from: range.from, to: range.to, as_of: isoTimeOrNull(asOf), tools: data.rows };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/clients
// ---------------------------------------------------------------------------------------------

export type ClientRow = { client_name: string } & CounterFigures;

export async function clientsReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: ReadFilters,
  /** `latency: false` skips the histograms (percentiles null): for views that show no latency. */
  options: { latency?: boolean } = {},
): Promise<{ from: string; to: string; as_of: string | null; clients: ClientRow[] }> {
  const [groups, asOf] = await Promise.all([
    sumCounterGroups(db, { projectId, startMs: range.startMs, endMs: range.endMs, ...filters }, "day", "client", {
      histograms: options.latency ?? true,
    }),
    readAsOfMs(db),
  ]);
  const clients = [...groups.entries()]
    .map(([name, group]) => ({ client_name: name, ...counterFigures(group) }))
    .sort((a, b) => b.calls - a.calls || (a.client_name < b.client_name ? -1 : 1));
  return { from: range.from, to: range.to, as_of: isoTimeOrNull(asOf), clients };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/pairs
// ---------------------------------------------------------------------------------------------

export async function pairsReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: ReadFilters,
): Promise<{ as_of: string | null; pairs: PairRow[] }> {
  const [pairs, asOf] = await Promise.all([
    sumPairs(db, { projectId, startMs: range.startMs, endMs: range.endMs, ...filters }),
    readAsOfMs(db),
  ]);
  return { as_of: isoTimeOrNull(asOf), pairs };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/sessions
// ---------------------------------------------------------------------------------------------

export const DEFAULT_PRICE_PER_MILLION_TOKENS_USD = 3;

/** `PRICE_PER_MILLION_TOKENS_USD` (SPEC §2.4, default $3); a blank, negative or non-numeric value means the default. */
export function pricePerMillionTokens(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === "") return DEFAULT_PRICE_PER_MILLION_TOKENS_USD;
  const price = Number(raw);
  return Number.isFinite(price) && price >= 0 ? price : DEFAULT_PRICE_PER_MILLION_TOKENS_USD;
}

/** Tokens = UTF-16 length ÷ 4, never rounded before summing (SPEC §2.4). */
export const UTF16_UNITS_PER_TOKEN = 4;
/** Cost per session is rounded to 6 decimals (a millionth of a dollar), not 1: it is usually under a cent. */
export const COST_DECIMALS = 6;

export type SessionsReport = {
  as_of: string | null;
  sessions: number;
  calls_per_session: number | null;
  response_tokens_per_session: number | null;
  schema_tokens_per_session: number | null;
  cost_per_session_usd: number | null;
};

export async function sessionsReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: Pick<ReadFilters, "client">,
  pricePerMillion: number,
): Promise<SessionsReport> {
  const [sums, asOf] = await Promise.all([
    sumSessions(db, { projectId, startMs: range.startMs, endMs: range.endMs, client: filters.client }),
    readAsOfMs(db),
  ]);
  const responseTokens = sums.response_bytes_sum / UTF16_UNITS_PER_TOKEN;
  const schemaTokens = sums.schema_bytes_sum / UTF16_UNITS_PER_TOKEN;
  const n = sums.sessions;
  return {
    as_of: isoTimeOrNull(asOf),
    sessions: n,
    calls_per_session: average(sums.calls, n),
    response_tokens_per_session: average(responseTokens, n),
    schema_tokens_per_session: average(schemaTokens, n),
    cost_per_session_usd:
      n === 0 ? null : roundTo((((responseTokens + schemaTokens) / n) * pricePerMillion) / 1_000_000, COST_DECIMALS),
  };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/timeseries
// ---------------------------------------------------------------------------------------------

export type TimeseriesBucket = { start: string } & CounterFigures;

/** Every bucket of the range, empty ones included (counters 0, rates and percentiles null). */
export async function timeseriesReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  grain: Grain,
  filters: ReadFilters,
  /** `latency: false` skips the histograms (percentiles null): for charts that show no latency. */
  options: { latency?: boolean } = {},
): Promise<{ from: string; to: string; grain: Grain; as_of: string | null; buckets: TimeseriesBucket[] }> {
  const [groups, asOf] = await Promise.all([
    sumCounterGroups(db, { projectId, startMs: range.startMs, endMs: range.endMs, ...filters }, grain, "time", {
      histograms: options.latency ?? true,
    }),
    readAsOfMs(db),
  ]);
  const step = grain === "hour" ? HOUR_MS : DAY_MS;
  const buckets: TimeseriesBucket[] = [];
  for (let t = range.startMs; t < range.endMs; t += step) {
    buckets.push({ start: new Date(t).toISOString(), ...counterFigures(groups.get(String(t)) ?? emptyGroup()) });
  }
  return { from: range.from, to: range.to, grain, as_of: isoTimeOrNull(asOf), buckets };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/descriptions (SPEC §2.5)
// ---------------------------------------------------------------------------------------------

/**
 * description_norm of an empty description (SHA-256 of ""). Tools that share it converge like any
 * others (SPEC §2.5: the same latest description_norm): a model cannot tell undescribed tools apart
 * either. Only the message says why.
 */
export const EMPTY_DESCRIPTION_NORM = "e3b0c44298fc";

export type ChurnEntry = {
  tool_name: string;
  schema_hash: string;
  registered: boolean;
  description_versions: number;
  descriptions: { description_hash: string; first_seen: string; last_seen: string; startups: number }[];
};

export type ConvergenceEntry = { description_norm: string; tools: string[] };

export type DescriptionsReport = { as_of: string | null; churn: ChurnEntry[]; convergence: ConvergenceEntry[] };

/** Churn: per (tool, schema_hash), more than one description_hash. */
export function findChurn(versions: ToolVersionRow[], registered: Set<string>): ChurnEntry[] {
  const groups = new Map<string, ToolVersionRow[]>();
  for (const v of versions) {
    const key = JSON.stringify([v.tool_name, v.schema_hash]);
    const list = groups.get(key) ?? [];
    list.push(v);
    groups.set(key, list);
  }
  const churn: ChurnEntry[] = [];
  for (const list of groups.values()) {
    const hashes = new Set(list.map((v) => v.description_hash));
    if (hashes.size < 2) continue;
    const first = list[0] as ToolVersionRow;
    churn.push({
      tool_name: first.tool_name,
      schema_hash: first.schema_hash,
      registered: registered.has(first.tool_name),
      description_versions: hashes.size,
      descriptions: list
        .sort((a, b) => a.first_seen_ms - b.first_seen_ms)
        .map((v) => ({
          description_hash: v.description_hash,
          first_seen: new Date(v.first_seen_ms).toISOString(),
          last_seen: new Date(v.last_seen_ms).toISOString(),
          startups: v.startups,
        })),
    });
  }
  return churn.sort((a, b) => b.description_versions - a.description_versions || (a.tool_name < b.tool_name ? -1 : 1));
}

/** Convergence: two or more registered tools whose latest description_norm is the same. */
export function findConvergence(registered: RegisteredToolRow[]): ConvergenceEntry[] {
  const byNorm = new Map<string, string[]>();
  for (const t of registered) {
    // No norm sent (an older producer): nothing is known of the description.
    if (t.description_norm === null) continue;
    const list = byNorm.get(t.description_norm) ?? [];
    list.push(t.tool_name);
    byNorm.set(t.description_norm, list);
  }
  return [...byNorm.entries()]
    .filter(([, tools]) => tools.length >= 2)
    .map(([norm, tools]) => ({ description_norm: norm, tools: tools.sort() }))
    .sort((a, b) => b.tools.length - a.tools.length || (a.description_norm < b.description_norm ? -1 : 1));
}

export async function descriptionsReport(
  db: D1Database,
  projectId: string,
  filters: Pick<ReadFilters, "tool">,
): Promise<DescriptionsReport> {
  const [versions, registered, asOf] = await Promise.all([
    listToolVersions(db, projectId, filters.tool),
    listRegisteredTools(db, projectId),
    readAsOfMs(db),
  ]);
  const convergence = findConvergence(registered).filter(
    (c) => filters.tool === undefined || c.tools.includes(filters.tool),
  );
  return {
    as_of: isoTimeOrNull(asOf),
    churn: findChurn(versions, new Set(registered.map((t) => t.tool_name))),
    convergence,
  };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/agreement (SPEC §2.5)
// ---------------------------------------------------------------------------------------------

export type AgreementReport = {
  from: string;
  to: string;
  as_of: string | null;
  agreement: {
    field: string;
    tool_a: string;
    tool_b: string;
    checks: number;
    disagreements: number;
    disagreement_rate: number | null;
  }[];
  silent: { field: string; tools: string[] }[];
};

export async function agreementReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: Pick<ReadFilters, "tool">,
): Promise<AgreementReport> {
  const [rows, declarations, asOf] = await Promise.all([
    sumAgreement(db, { projectId, startMs: range.startMs, endMs: range.endMs, tool: filters.tool }),
    listAgreementDeclarations(db, projectId),
    readAsOfMs(db),
  ]);
  const fieldsWithVerdicts = new Set(rows.map((r) => r.field));
  const declared = new Map<string, string[]>();
  for (const d of declarations) {
    const list = declared.get(d.field) ?? [];
    list.push(d.tool_name);
    declared.set(d.field, list);
  }
  const silent = [...declared.entries()]
    .filter(([field, tools]) => !fieldsWithVerdicts.has(field) && (filters.tool === undefined || tools.includes(filters.tool)))
    .map(([field, tools]) => ({ field, tools: tools.sort() }));
  return {
    from: range.from,
    to: range.to,
    as_of: isoTimeOrNull(asOf),
    agreement: rows.map((r) => ({ ...r, disagreement_rate: rate(r.disagreements, r.checks) })),
    silent,
  };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/insights
// ---------------------------------------------------------------------------------------------

/** Rate-based insights need at least this many calls in the range (issue 5: none on fewer than 20). */
export const INSIGHT_MIN_CALLS = 20;
export const INSIGHT_THRESHOLDS = {
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

/** Severity levels, most urgent first; see docs/read-api.md "Insights" for when each applies. */
export const SEVERITIES = ["high", "medium", "low"] as const;
export type Severity = (typeof SEVERITIES)[number];

export const INSIGHT_KINDS = [
  "low_first_call_success",
  "slow_calls",
  "empty_results",
  "large_responses",
  "dead_tool",
  "converged_descriptions",
] as const;
export type InsightKind = (typeof INSIGHT_KINDS)[number];

export type Insight = {
  kind: InsightKind;
  severity: Severity;
  tool_name: string | null;
  tools: string[];
  /** The measured figure the threshold applies to (a rate, bytes, or tokens per session). */
  value: number;
  threshold: number;
  /** Calls the problem touched in the range (failed first calls, empties, slow or large calls); 0 for dead and converged. */
  affected_calls: number;
  calls: number;
  message: string;
};

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

/**
 * What to fix first, SPEC-independent (issue 5). Severity:
 * - high: first-call success < 50 %, empties > 20 %, > 25 % of calls slower than 2 s,
 *   average response > 50,000; a dead tool costing ≥ 1,000 tokens per session
 * - medium: the other threshold crossings of calls-based insights; dead tools costing ≥ 250 tokens
 * - low: cheaper dead tools, converged descriptions
 * Ranking: severity, then affected calls (descending), then the kind order of INSIGHT_KINDS,
 * then tool name.
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
        message: `${row.tool_name} was never called but costs ${roundTo(tokens, 1)} tokens of schema in every session`,
      });
      continue;
    }
    if (row.calls < INSIGHT_MIN_CALLS) continue;
    const base = { tool_name: row.tool_name, tools: [row.tool_name], calls: row.calls };
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
      b.affected_calls - a.affected_calls ||
      INSIGHT_KINDS.indexOf(a.kind) - INSIGHT_KINDS.indexOf(b.kind) ||
      b.value - a.value ||
      ((a.tool_name ?? "") < (b.tool_name ?? "") ? -1 : (a.tool_name ?? "") > (b.tool_name ?? "") ? 1 : 0),
  );
}

export async function insightsReport(
  db: D1Database,
  projectId: string,
  range: DateRange,
  filters: ReadFilters,
): Promise<{ from: string; to: string; as_of: string | null; insights: Insight[] }> {
  const [data, asOf] = await Promise.all([loadTools(db, projectId, range, filters), readAsOfMs(db)]);
  return {
    from: range.from,
    to: range.to,
    as_of: isoTimeOrNull(asOf),
    insights: buildInsights(data.rows, data.histograms, data.registered),
  };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/schema-regressions
// ---------------------------------------------------------------------------------------------

/** Hours compared on each side of a schema change. */
export const REGRESSION_WINDOW_DAYS = 7;
/** Both sides need this many calls before `regressed` can be true. */
export const REGRESSION_MIN_CALLS = INSIGHT_MIN_CALLS;
/** A rise in bad_args rate or a fall in first-call success of at least this much is a regression. */
export const REGRESSION_RATE_DELTA = 0.05;

export type RegressionSide = {
  from: string;
  to: string;
  calls: number;
  bad_args: number;
  bad_args_rate: number | null;
  first_call_attempts: number;
  first_call_ok: number;
  first_call_rate: number | null;
};

export type SchemaRegression = {
  tool_name: string;
  schema_hash: string;
  previous_schema_hash: string;
  changed_at: string;
  before: RegressionSide;
  after: RegressionSide;
  bad_args_rate_change: number | null;
  first_call_rate_change: number | null;
  regressed: boolean;
};

/**
 * When the tool's current schema took over: the later of the current hash's first sighting and the
 * last sighting of any other hash (so A → B → A counts from when B was last seen). Null when the
 * tool has only ever had one schema.
 */
export function latestSchemaChange(
  current: string,
  versions: ToolVersionRow[],
): { changedAtMs: number; previous: string } | null {
  let currentFirstSeen = Infinity;
  let previous: ToolVersionRow | undefined;
  for (const v of versions) {
    if (v.schema_hash === current) currentFirstSeen = Math.min(currentFirstSeen, v.first_seen_ms);
    else if (!previous || v.last_seen_ms > previous.last_seen_ms) previous = v;
  }
  if (!previous || currentFirstSeen === Infinity) return null;
  return { changedAtMs: Math.max(currentFirstSeen, previous.last_seen_ms), previous: previous.schema_hash };
}

function regressionSide(counters: Counters, startMs: number, endMs: number): RegressionSide {
  return {
    from: new Date(startMs).toISOString(),
    to: new Date(endMs).toISOString(),
    calls: counters.calls,
    bad_args: counters.bad_args,
    bad_args_rate: rate(counters.bad_args, counters.calls),
    first_call_attempts: counters.first_call_attempts,
    first_call_ok: counters.first_call_ok,
    first_call_rate: rate(counters.first_call_ok, counters.first_call_attempts),
  };
}

function change(after: number | null, before: number | null): number | null {
  return after === null || before === null ? null : roundTo(after - before, 4);
}

/**
 * Per registered tool whose schema_hash changed: bad_args rate and first-call success over the
 * REGRESSION_WINDOW_DAYS before the hour of the change and the same span after it, from hour rows.
 * The hour holding the change mixes both schemas and is left out of both sides.
 */
export async function schemaRegressionsReport(
  db: D1Database,
  projectId: string,
  filters: ReadFilters,
): Promise<{ as_of: string | null; window_days: number; regressions: SchemaRegression[] }> {
  const [registered, versions, asOf] = await Promise.all([
    listRegisteredTools(db, projectId),
    listToolVersions(db, projectId, filters.tool),
    readAsOfMs(db),
  ]);
  const versionsByTool = new Map<string, ToolVersionRow[]>();
  for (const v of versions) {
    const list = versionsByTool.get(v.tool_name) ?? [];
    list.push(v);
    versionsByTool.set(v.tool_name, list);
  }
  const windowMs = REGRESSION_WINDOW_DAYS * DAY_MS;
  const candidates = registered.flatMap((tool) => {
    if (tool.schema_hash === null) return [];
    if (filters.tool !== undefined && tool.tool_name !== filters.tool) return [];
    const found = latestSchemaChange(tool.schema_hash, versionsByTool.get(tool.tool_name) ?? []);
    return found ? [{ tool, ...found }] : [];
  });
  const regressions = await Promise.all(
    candidates.map(async ({ tool, changedAtMs, previous }) => {
      const changeHourMs = Math.floor(changedAtMs / HOUR_MS) * HOUR_MS;
      const before = { startMs: changeHourMs - windowMs, endMs: changeHourMs };
      const after = { startMs: changeHourMs + HOUR_MS, endMs: changeHourMs + HOUR_MS + windowMs };
      const base = { projectId, tool: tool.tool_name, client: filters.client };
      const [b, a] = await Promise.all([
        sumCounterGroups(db, { ...base, ...before }, "hour", "all", { histograms: false }),
        sumCounterGroups(db, { ...base, ...after }, "hour", "all", { histograms: false }),
      ]);
      const beforeSide = regressionSide(b.get("")?.counters ?? zeroCounters(), before.startMs, before.endMs);
      const afterSide = regressionSide(a.get("")?.counters ?? zeroCounters(), after.startMs, after.endMs);
      const badArgsChange = change(afterSide.bad_args_rate, beforeSide.bad_args_rate);
      const firstCallChange = change(afterSide.first_call_rate, beforeSide.first_call_rate);
      const enough = beforeSide.calls >= REGRESSION_MIN_CALLS && afterSide.calls >= REGRESSION_MIN_CALLS;
      return {
        tool_name: tool.tool_name,
        schema_hash: tool.schema_hash as string,
        previous_schema_hash: previous,
        changed_at: new Date(changedAtMs).toISOString(),
        before: beforeSide,
        after: afterSide,
        bad_args_rate_change: badArgsChange,
        first_call_rate_change: firstCallChange,
        regressed:
          enough &&
          ((badArgsChange !== null && badArgsChange >= REGRESSION_RATE_DELTA) ||
            (firstCallChange !== null && firstCallChange <= -REGRESSION_RATE_DELTA)),
      } satisfies SchemaRegression;
    }),
  );
  regressions.sort((a, b) => Number(b.regressed) - Number(a.regressed) || (a.tool_name < b.tool_name ? -1 : 1));
  return { as_of: isoTimeOrNull(asOf), window_days: REGRESSION_WINDOW_DAYS, regressions };
}
