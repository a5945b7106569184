// What each dashboard page shows, from the same pure functions the read API answers with
// (reports.ts), so page and API can never disagree. A page is a few statements in parallel: every
// counter sum it needs is one statement (counter-sums.ts), `as_of` is read once (scope.ts). Every
// list of a page is bounded (SPEC §3): the main list by pages of PAGE_ROWS, the others cut to their
// top rows, all of them narrowed by the search box; totals and cards still count every row.
import {
  listAgreementDeclarations,
  listRegisteredTools,
  listToolVersions,
  sumAgreement,
  type PairRow,
  type RegisteredToolRow,
  type ToolVersionRow,
} from "../db/metrics.ts";
import { compareByCodePoint } from "../../shared/index.ts";
import { findProject } from "../db/projects.ts";
import type { DurationHistogram } from "../histogram.ts";
import { sumCounters, type CounterRequest } from "./counter-sums.ts";
import { counterFigures, emptyGroup, mergeGroups, type CounterFigures, type CounterGroup } from "./counters.ts";
import { buildInsights, type Insight } from "./insights.ts";
import { hoursKept, previousRange, rangeFromDays, type DateRange, type Grain, type PageParams } from "./query.ts";
import { DAY_MS } from "../time.ts";
import {
  agreementFrom,
  bucketsFrom,
  clientRowsFrom,
  clientsRequest,
  descriptionsFrom,
  loadPairs,
  loadSessions,
  timeseriesRequest,
  toolsFrom,
  toolsRequest,
  type AgreementReport,
  type ClientRow,
  type DescriptionsReport,
  type SessionsReport,
  type TimeseriesBucket,
  type ToolRow,
} from "./reports.ts";
import { loadSchemaRegressions, type SchemaRegression } from "./schema-regressions.ts";
import { asOfIso, type ReadScope } from "./scope.ts";

/** Rows of a page's main list (the overview's tools, a tool page's clients) per page. */
export const PAGE_ROWS = 100;
/** Rows of every other list of a page: the top ones, by the list's own order. */
const SIDE_ROWS = 20;
/** Names shown inside one row (a converged description's tools, a silent field's tools). */
const NAMES_PER_ROW = 10;
/** Clients the picker offers: the busiest; any other is one click away in the clients table. */
const PICKER_CLIENTS = 50;

/** One bounded list: the rows shown and how many rows there are in all (after the search). */
export type Listed<T> = { rows: T[]; total: number };
/** The main list of a page: one page of it. */
export type Paged<T> = Listed<T> & { page: number; pages: number };

function cut<T>(rows: T[], max: number): Listed<T> {
  return { rows: rows.slice(0, max), total: rows.length };
}

function pageOf<T>(rows: T[], page: number): Paged<T> {
  const pages = Math.max(1, Math.ceil(rows.length / PAGE_ROWS));
  return { rows: rows.slice((page - 1) * PAGE_ROWS, page * PAGE_ROWS), total: rows.length, page, pages };
}

/** The search box's match: part of the name, ignoring case. */
export function nameMatches(name: string, search: string | undefined): boolean {
  return search === undefined || name.toLowerCase().includes(search.toLowerCase());
}

/** Names of one row, cut to NAMES_PER_ROW (the rest counted). */
export type NameList = Listed<string>;

function names(list: string[]): NameList {
  return cut(list, NAMES_PER_ROW);
}

/** The project's name for the page header ("" if it is gone). */
export async function loadProjectName(scope: ReadScope): Promise<string> {
  return (await findProject(scope.db, scope.projectId))?.name ?? "";
}

/** Ranges (and spans of data) up to this many days are charted per hour, longer ones per day. */
export const HOUR_CHART_DAYS = 2;

/**
 * Charts of ranges up to 2 days use hours, longer ranges days; so do ranges reaching before the
 * hour rows' horizon (SPEC §7: their hours are folded into days), seen from the request's clock.
 */
export function chartGrain(range: DateRange, nowMs: number): Grain {
  return range.days <= HOUR_CHART_DAYS && hoursKept(range, nowMs) ? "hour" : "day";
}

/** What a page's time charts show: the buckets, their grain, and the days they cover. */
export type ChartSeries = { series: TimeseriesBucket[]; grain: Grain; range: DateRange };

/**
 * The days of a day series that had calls, when they span at most HOUR_CHART_DAYS days; else null.
 * A week with one day of data is one bar and one dot at the chart's edge: such a range is charted
 * per hour over the days that had calls instead.
 */
export function callsSpan(series: readonly TimeseriesBucket[]): DateRange | null {
  const busy = series.filter((b) => b.calls > 0);
  const first = busy[0];
  const last = busy[busy.length - 1];
  if (!first || !last) return null;
  const fromMs = Date.parse(first.start);
  const toMs = Date.parse(last.start);
  return toMs - fromMs < HOUR_CHART_DAYS * DAY_MS ? rangeFromDays(fromMs, toMs) : null;
}

/**
 * The chart series of a page from its day or hour sums; when day sums have calls on at most
 * HOUR_CHART_DAYS days, one more statement reads those days' hours (a few rows: the data is small
 * exactly then).
 */
async function chartSeries(
  scope: ReadScope,
  range: DateRange,
  grain: Grain,
  sums: Map<string, CounterGroup>,
  filters: { client?: string | undefined; tool?: string | undefined },
): Promise<ChartSeries> {
  const series = bucketsFrom(sums, range, grain);
  const span = grain === "day" ? callsSpan(series) : null;
  if (span === null || !hoursKept(span, scope.nowMs)) return { series, grain, range };
  const [hours] = await sumCounters(scope, [timeseriesRequest(span, "hour", filters, { latency: false })]);
  return { series: bucketsFrom(hours ?? new Map(), span, "hour"), grain: "hour", range: span };
}

/** The totals of the period before, for the cards' deltas (p95 included). */
function previousTotalsRequest(range: DateRange, filters: { client?: string | undefined; tool?: string | undefined }): CounterRequest {
  const previous = previousRange(range);
  return { filter: { startMs: previous.startMs, endMs: previous.endMs, ...filters }, grain: "day", groupBy: "all" };
}

/**
 * The picker's clients: the PICKER_CLIENTS with most calls in the range (from a per-client sum
 * without filters), in code-point order, and the chosen one even when it is not among them.
 */
function pickerClients(sums: Map<string, CounterGroup>, chosen: string | undefined): string[] {
  const busiest = [...sums.entries()]
    .sort(([a, x], [b, y]) => y.counters.calls - x.counters.calls || compareByCodePoint(a, b))
    .slice(0, PICKER_CLIENTS)
    .map(([name]) => name);
  if (chosen !== undefined && !busiest.includes(chosen)) busiest.push(chosen);
  // Code-point order, as SQLite's BINARY collation sorts UTF-8.
  return busiest.sort(compareByCodePoint);
}

/** A page's descriptions, bounded: the top churn and convergence rows, each group's tools cut. */
export type PageDescriptions = {
  churn: Listed<DescriptionsReport["churn"][number]>;
  convergence: Listed<{ description_norm: string; tools: NameList }>;
};

function pageDescriptions(report: DescriptionsReport, search: string | undefined): PageDescriptions {
  return {
    churn: cut(report.churn.filter((c) => nameMatches(c.tool_name, search)), SIDE_ROWS),
    convergence: cut(
      report.convergence
        .filter((c) => c.tools.some((t) => nameMatches(t, search)))
        .map((c) => ({ description_norm: c.description_norm, tools: names(c.tools) })),
      SIDE_ROWS,
    ),
  };
}

/** A page's agreement, bounded: the rows with most disagreements first, then the silent fields. */
export type PageAgreement = {
  agreement: Listed<AgreementReport["agreement"][number]>;
  silent: Listed<{ field: string; tools: NameList }>;
};

function pageAgreement(report: AgreementReport, search: string | undefined): PageAgreement {
  const hit = (...n: string[]) => n.some((x) => nameMatches(x, search));
  return {
    agreement: cut(
      report.agreement.filter((a) => hit(a.field, a.tool_a, a.tool_b)).sort((a, b) => b.disagreements - a.disagreements || b.checks - a.checks),
      SIDE_ROWS,
    ),
    silent: cut(
      report.silent.filter((x) => hit(x.field, ...x.tools)).map((x) => ({ field: x.field, tools: names(x.tools) })),
      SIDE_ROWS,
    ),
  };
}

export type OverviewData = {
  asOf: string | null;
  clients: string[];
  /** One page of the tools that match the search, in the API's order (calls, then name). */
  tools: Paged<ToolRow>;
  /** Tools of the range, whatever the search. */
  toolCount: number;
  /** Dead tools matching the search, largest schema first; the card counts every dead tool. */
  dead: Listed<ToolRow>;
  deadCount: number;
  deadSchemaBytes: number;
  totals: CounterFigures;
  previousTotals: CounterFigures;
  sessions: SessionsReport;
  previousSessions: SessionsReport;
  chart: ChartSeries;
  insights: Insight[];
  pairs: Listed<PairRow>;
  descriptions: PageDescriptions;
  agreement: PageAgreement;
  clientRows: Listed<ClientRow>;
};

export async function loadOverview(scope: ReadScope, params: PageParams, price: number): Promise<OverviewData> {
  const { range, client, search, page } = params;
  const grain = chartGrain(range, scope.nowMs);
  const [[toolSums, previousSums, seriesSums, clientSums], registered, [sessions, previousSessions], pairs, versions, agreementRows, declarations, asOf] =
    await Promise.all([
      sumCounters(scope, [
        toolsRequest(range, { client }),
        // The previous period's days are mostly final, so after the first read they come from the
        // isolate's cache (final-days.ts).
        previousTotalsRequest(range, { client }),
        timeseriesRequest(range, grain, { client }, { latency: false }),
        // Every client (the picker); the table's rows are the filter's. No latency: the histograms
        // would be a second full read of the range.
        clientsRequest(range, {}, { latency: false }),
      ]),
      listRegisteredTools(scope.db, scope.projectId),
      loadSessions(scope, [range, previousRange(range)], { client }, price),
      loadPairs(scope, range, { client }),
      listToolVersions(scope.db, scope.projectId),
      sumAgreement(scope.db, { projectId: scope.projectId, startMs: range.startMs, endMs: range.endMs }),
      listAgreementDeclarations(scope.db, scope.projectId),
      asOfIso(scope),
    ]);
  const tools = toolsFrom(toolSums ?? new Map(), registered, { client });
  const allClients = clientSums ?? new Map<string, CounterGroup>();
  const filteredClients = client === undefined ? allClients : new Map([...allClients].filter(([name]) => name === client));
  const dead = tools.rows.filter((r) => r.dead);
  const chart = await chartSeries(scope, range, grain, seriesSums ?? new Map(), { client });
  return {
    asOf,
    clients: pickerClients(allClients, client),
    tools: pageOf(tools.rows.filter((r) => nameMatches(r.tool_name, search)), page),
    toolCount: tools.rows.length,
    dead: cut(
      dead.filter((r) => nameMatches(r.tool_name, search)).sort((a, b) => (b.schema_bytes ?? 0) - (a.schema_bytes ?? 0)),
      SIDE_ROWS,
    ),
    deadCount: dead.length,
    deadSchemaBytes: dead.reduce((n, r) => n + (r.schema_bytes ?? 0), 0),
    totals: counterFigures(mergeGroups(tools.groups.values())),
    previousTotals: counterFigures(previousSums?.get("") ?? emptyGroup()),
    sessions: sessions as SessionsReport,
    previousSessions: previousSessions as SessionsReport,
    chart,
    insights: buildInsights(tools.rows, tools.histograms, tools.registered),
    pairs: cut(pairs.filter((p) => nameMatches(p.from_tool, search) || nameMatches(p.to_tool, search)), SIDE_ROWS),
    descriptions: pageDescriptions(descriptionsFrom(versions, registered, {}, asOf), search),
    agreement: pageAgreement(agreementFrom(agreementRows, declarations, range, {}, asOf), search),
    clientRows: cut(clientRowsFrom(filteredClients).filter((c) => nameMatches(c.client_name, search)), SIDE_ROWS),
  };
}

export type ToolPageData = {
  asOf: string | null;
  clients: string[];
  row: ToolRow | undefined;
  histogram: DurationHistogram;
  previous: CounterFigures;
  chart: ChartSeries;
  /** One page of this tool's clients that match the search, most calls first. */
  clientRows: Paged<ClientRow>;
  pairs: PairRow[];
  regression: SchemaRegression | undefined;
  descriptions: PageDescriptions;
  agreement: PageAgreement;
  sessions: SessionsReport;
};

export async function loadToolPage(scope: ReadScope, tool: string, params: PageParams, price: number): Promise<ToolPageData> {
  const { range, client, search, page } = params;
  const grain = chartGrain(range, scope.nowMs);
  const registeredRows = listRegisteredTools(scope.db, scope.projectId);
  const versionRows = listToolVersions(scope.db, scope.projectId, tool);
  const rows = Promise.all([registeredRows, versionRows]);
  const [[toolSums, previousSums, seriesSums, clientSums, allClientSums], [registered, versions], regressions, pairs, agreementRows, declarations, [sessions], asOf] =
    await Promise.all([
      sumCounters(scope, [
        toolsRequest(range, { client, tool }),
        previousTotalsRequest(range, { client, tool }),
        timeseriesRequest(range, grain, { client, tool }, { latency: false }),
        clientsRequest(range, { tool }),
        clientsRequest(range, {}, { latency: false }),
      ]),
      rows,
      rows.then(([registered, versions]: [RegisteredToolRow[], ToolVersionRow[]]) =>
        loadSchemaRegressions(scope, { tool, client }, { registered, versions }),
      ),
      loadPairs(scope, range, { tool, client }),
      sumAgreement(scope.db, { projectId: scope.projectId, startMs: range.startMs, endMs: range.endMs, tool }),
      listAgreementDeclarations(scope.db, scope.projectId),
      loadSessions(scope, [range], { client }, price),
      asOfIso(scope),
    ]);
  const tools = toolsFrom(toolSums ?? new Map(), registered, { client, tool });
  const chart = await chartSeries(scope, range, grain, seriesSums ?? new Map(), { client, tool });
  return {
    asOf,
    clients: pickerClients(allClientSums ?? new Map(), client),
    row: tools.rows[0],
    histogram: tools.histograms.get(tool) ?? {},
    previous: counterFigures(previousSums?.get("") ?? emptyGroup()),
    chart,
    clientRows: pageOf(clientRowsFrom(clientSums ?? new Map()).filter((c) => nameMatches(c.client_name, search)), page),
    pairs,
    regression: regressions[0],
    descriptions: pageDescriptions(descriptionsFrom(versions, registered, { tool }, asOf), undefined),
    agreement: pageAgreement(agreementFrom(agreementRows, declarations, range, { tool }, asOf), undefined),
    sessions: sessions as SessionsReport,
  };
}
