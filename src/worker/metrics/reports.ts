// The read API's answers (SPEC §2–3) as pure functions of their rows (`…From`) plus loaders; the
// dashboard calls the same functions, so a page shows what the API answers.
import type { DurationHistogram } from "../histogram.ts";
import {
  listAgreementDeclarations,
  listRegisteredTools,
  listToolVersions,
  sumAgreement,
  sumPairs,
  sumSessions,
  type AgreementRow,
  type DeclarationRow,
  type PairRow,
  type RegisteredToolRow,
  type SessionSums,
  type ToolVersionRow,
} from "../db/metrics.ts";
import { DAY_MS, HOUR_MS } from "../time.ts";
import { sumCounters, type CounterRequest } from "./counter-sums.ts";
import {
  SCHEMA_COST_FIGURES,
  type AgreementReport,
  type ChurnEntry,
  type ClientRow,
  type ClientsReport,
  type ConvergenceEntry,
  type DescriptionsReport,
  type PairsReport,
  type SessionsReport,
  type TimeseriesBucket,
  type TimeseriesReport,
  type ToolPolicy,
  type ToolRow,
  type ToolsReport,
} from "./answers.ts";
import { average, counterFigures, emptyGroup, rate, roundTo, type CounterGroup } from "./counters.ts";
import type { DateRange, Grain, ReadFilters } from "./query.ts";
import { asOfIso, type ReadScope } from "./scope.ts";

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/tools
// ---------------------------------------------------------------------------------------------

export type { AgreementReport, ChurnEntry, ClientRow, ConvergenceEntry, DescriptionsReport, SessionsReport, TimeseriesBucket, ToolPolicy, ToolRow, ToolsReport } from "./answers.ts";

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

/** Order of tool rows: most calls first, then by name (stable and predictable for clients). */
function byCallsThenName(a: ToolRow, b: ToolRow): number {
  return b.calls - a.calls || (a.tool_name < b.tool_name ? -1 : a.tool_name > b.tool_name ? 1 : 0);
}

export type ToolsData = {
  rows: ToolRow[];
  /** Each row's counters and histogram, by tool name (registered tools without calls: empty). */
  groups: Map<string, CounterGroup>;
  histograms: Map<string, DurationHistogram>;
  registered: RegisteredToolRow[];
};

/** The sums a tools answer needs: per tool, with histograms. */
export function toolsRequest(range: DateRange, filters: ReadFilters): CounterRequest {
  return { filter: { startMs: range.startMs, endMs: range.endMs, ...filters }, grain: "day", groupBy: "tool" };
}

/**
 * One row per tool that was called in the range and filters or is registered (and matches the `tool`
 * filter), SPEC §3.
 */
export function toolsFrom(sums: Map<string, CounterGroup>, registered: RegisteredToolRow[], filters: ReadFilters): ToolsData {
  const registeredByName = new Map(registered.map((t) => [t.tool_name, t]));
  const names = new Set(sums.keys());
  for (const t of registered) if (filters.tool === undefined || t.tool_name === filters.tool) names.add(t.tool_name);
  const rows: ToolRow[] = [];
  const groups = new Map<string, CounterGroup>();
  const histograms = new Map<string, DurationHistogram>();
  for (const name of names) {
    const group = sums.get(name) ?? emptyGroup();
    groups.set(name, group);
    histograms.set(name, group.histogram);
    rows.push(toolRow(name, group, registeredByName.get(name)));
  }
  rows.sort(byCallsThenName);
  return { rows, groups, histograms, registered };
}

export async function loadTools(scope: ReadScope, range: DateRange, filters: ReadFilters): Promise<ToolsData> {
  const [[sums], registered] = await Promise.all([
    sumCounters(scope, [toolsRequest(range, filters)]),
    listRegisteredTools(scope.db, scope.projectId),
  ]);
  return toolsFrom(sums ?? new Map(), registered, filters);
}

export async function toolsReport(scope: ReadScope, range: DateRange, filters: ReadFilters): Promise<ToolsReport> {
  const [data, asOf] = await Promise.all([loadTools(scope, range, filters), asOfIso(scope)]);
  return { from: range.from, to: range.to, as_of: asOf, tools: data.rows };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/clients
// ---------------------------------------------------------------------------------------------

/** `latency: false` skips the histograms (percentiles null): for views that show no latency. */
export function clientsRequest(range: DateRange, filters: ReadFilters, options: { latency?: boolean } = {}): CounterRequest {
  return {
    filter: { startMs: range.startMs, endMs: range.endMs, ...filters },
    grain: "day",
    groupBy: "client",
    histograms: options.latency ?? true,
  };
}

/** Client rows, most calls first. */
export function clientRowsFrom(sums: Map<string, CounterGroup>): ClientRow[] {
  return [...sums.entries()]
    .map(([name, group]) => ({ client_name: name, ...counterFigures(group) }))
    .sort((a, b) => b.calls - a.calls || (a.client_name < b.client_name ? -1 : 1));
}

export async function clientsReport(
  scope: ReadScope,
  range: DateRange,
  filters: ReadFilters,
): Promise<ClientsReport> {
  const [[sums], asOf] = await Promise.all([sumCounters(scope, [clientsRequest(range, filters)]), asOfIso(scope)]);
  return { from: range.from, to: range.to, as_of: asOf, clients: clientRowsFrom(sums ?? new Map()) };
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/pairs
// ---------------------------------------------------------------------------------------------

export function loadPairs(scope: ReadScope, range: DateRange, filters: ReadFilters): Promise<PairRow[]> {
  return sumPairs(scope.db, { projectId: scope.projectId, startMs: range.startMs, endMs: range.endMs, ...filters });
}

export async function pairsReport(
  scope: ReadScope,
  range: DateRange,
  filters: ReadFilters,
): Promise<PairsReport> {
  const [pairs, asOf] = await Promise.all([loadPairs(scope, range, filters), asOfIso(scope)]);
  return { as_of: asOf, pairs };
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

/** The per-session figures of one period's sums (SPEC §2.4). */
export function sessionsFrom(sums: SessionSums, asOf: string | null, pricePerMillion: number): SessionsReport {
  const responseTokens = sums.response_bytes_sum / UTF16_UNITS_PER_TOKEN;
  const schemaTokens = sums.schema_bytes_sum / UTF16_UNITS_PER_TOKEN;
  const n = sums.sessions;
  return {
    as_of: asOf,
    sessions: n,
    calls_per_session: average(sums.calls, n),
    response_tokens_per_session: average(responseTokens, n),
    schema_tokens_per_session: average(schemaTokens, n),
    cost_per_session_usd:
      n === 0 ? null : roundTo((((responseTokens + schemaTokens) / n) * pricePerMillion) / 1_000_000, COST_DECIMALS),
    calls_without_session: sums.calls_without_session,
    // Every session without a tool list: schema cost is unknown, not 0 (SPEC §10).
    ...(n > 0 && sums.sessions_without_schema === n ? { not_measurable: [...SCHEMA_COST_FIGURES] } : {}),
  };
}

/** Sessions of each range, from one statement. */
export async function loadSessions(
  scope: ReadScope,
  ranges: readonly DateRange[],
  filters: Pick<ReadFilters, "client">,
  pricePerMillion: number,
): Promise<SessionsReport[]> {
  const [sums, asOf] = await Promise.all([sumSessions(scope.db, scope.projectId, ranges, filters.client), asOfIso(scope)]);
  return sums.map((s) => sessionsFrom(s, asOf, pricePerMillion));
}

export async function sessionsReport(
  scope: ReadScope,
  range: DateRange,
  filters: Pick<ReadFilters, "client">,
  pricePerMillion: number,
): Promise<SessionsReport> {
  const [report] = await loadSessions(scope, [range], filters, pricePerMillion);
  return report as SessionsReport;
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/timeseries
// ---------------------------------------------------------------------------------------------

/** `latency: false` skips the histograms (percentiles null): for charts that show no latency. */
export function timeseriesRequest(range: DateRange, grain: Grain, filters: ReadFilters, options: { latency?: boolean } = {}): CounterRequest {
  return {
    filter: { startMs: range.startMs, endMs: range.endMs, ...filters },
    grain,
    groupBy: "time",
    histograms: options.latency ?? true,
  };
}

/** Every bucket of the range, empty ones included (counters 0, rates and percentiles null). */
export function bucketsFrom(sums: Map<string, CounterGroup>, range: DateRange, grain: Grain): TimeseriesBucket[] {
  const step = grain === "hour" ? HOUR_MS : DAY_MS;
  const buckets: TimeseriesBucket[] = [];
  for (let t = range.startMs; t < range.endMs; t += step) {
    buckets.push({ start: new Date(t).toISOString(), ...counterFigures(sums.get(String(t)) ?? emptyGroup()) });
  }
  return buckets;
}

export async function timeseriesReport(
  scope: ReadScope,
  range: DateRange,
  grain: Grain,
  filters: ReadFilters,
): Promise<TimeseriesReport> {
  const [[sums], asOf] = await Promise.all([sumCounters(scope, [timeseriesRequest(range, grain, filters)]), asOfIso(scope)]);
  return { from: range.from, to: range.to, grain, as_of: asOf, buckets: bucketsFrom(sums ?? new Map(), range, grain) };
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

export function descriptionsFrom(
  versions: ToolVersionRow[],
  registered: RegisteredToolRow[],
  filters: Pick<ReadFilters, "tool">,
  asOf: string | null,
): DescriptionsReport {
  const convergence = findConvergence(registered).filter(
    (c) => filters.tool === undefined || c.tools.includes(filters.tool),
  );
  return {
    as_of: asOf,
    churn: findChurn(versions, new Set(registered.map((t) => t.tool_name))),
    convergence,
  };
}

export async function descriptionsReport(scope: ReadScope, filters: Pick<ReadFilters, "tool">): Promise<DescriptionsReport> {
  const [versions, registered, asOf] = await Promise.all([
    listToolVersions(scope.db, scope.projectId, filters.tool),
    listRegisteredTools(scope.db, scope.projectId),
    asOfIso(scope),
  ]);
  return descriptionsFrom(versions, registered, filters, asOf);
}

// ---------------------------------------------------------------------------------------------
// GET /v1/metrics/agreement (SPEC §2.5)
// ---------------------------------------------------------------------------------------------

export function agreementFrom(
  rows: AgreementRow[],
  declarations: DeclarationRow[],
  range: DateRange,
  filters: Pick<ReadFilters, "tool">,
  asOf: string | null,
): AgreementReport {
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
    as_of: asOf,
    agreement: rows.map((r) => ({ ...r, disagreement_rate: rate(r.disagreements, r.checks) })),
    silent,
  };
}

export async function agreementReport(scope: ReadScope, range: DateRange, filters: Pick<ReadFilters, "tool">): Promise<AgreementReport> {
  const [rows, declarations, asOf] = await Promise.all([
    sumAgreement(scope.db, { projectId: scope.projectId, startMs: range.startMs, endMs: range.endMs, tool: filters.tool }),
    listAgreementDeclarations(scope.db, scope.projectId),
    asOfIso(scope),
  ]);
  return agreementFrom(rows, declarations, range, filters, asOf);
}
