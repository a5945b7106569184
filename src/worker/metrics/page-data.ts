// What each dashboard page shows, from the same pure functions the read API answers with
// (reports.ts), so page and API can never disagree. A page is a few statements in parallel: every
// counter sum it needs is one statement (counter-sums.ts), `as_of` is read once (scope.ts).
import {
  listAgreementDeclarations,
  listRegisteredTools,
  listToolVersions,
  sumAgreement,
  type PairRow,
  type RegisteredToolRow,
  type ToolVersionRow,
} from "../db/metrics.ts";
import { findProject } from "../db/projects.ts";
import type { DurationHistogram } from "../histogram.ts";
import { sumCounters, type CounterRequest } from "./counter-sums.ts";
import { counterFigures, emptyGroup, mergeGroups, type CounterFigures, type CounterGroup } from "./counters.ts";
import { buildInsights, type Insight } from "./insights.ts";
import { previousRange, type DateRange, type Grain } from "./query.ts";
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

/** The project's name for the page header ("" if it is gone). */
export async function loadProjectName(scope: ReadScope): Promise<string> {
  return (await findProject(scope.db, scope.projectId))?.name ?? "";
}

/** Charts of ranges up to 2 days use hours, longer ranges days. */
export function chartGrain(range: DateRange): Grain {
  return range.days <= 2 ? "hour" : "day";
}

/** The totals of the period before, for the cards' deltas (p95 included). */
function previousTotalsRequest(range: DateRange, filters: { client?: string | undefined; tool?: string | undefined }): CounterRequest {
  const previous = previousRange(range);
  return { filter: { startMs: previous.startMs, endMs: previous.endMs, ...filters }, grain: "day", groupBy: "all" };
}

/** Code-point order, as SQLite's BINARY collation sorts UTF-8 (the client picker's order). */
function byCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i] as string).codePointAt(0)! - (y[i] as string).codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** Every client with rows in the range (the picker), from a per-client sum without filters. */
function clientNames(sums: Map<string, CounterGroup>): string[] {
  return [...sums.keys()].sort(byCodePoints);
}

export type OverviewData = {
  asOf: string | null;
  clients: string[];
  tools: ToolRow[];
  totals: CounterFigures;
  previousTotals: CounterFigures;
  sessions: SessionsReport;
  previousSessions: SessionsReport;
  series: TimeseriesBucket[];
  grain: Grain;
  insights: Insight[];
  pairs: PairRow[];
  descriptions: DescriptionsReport;
  agreement: AgreementReport;
  clientRows: ClientRow[];
};

export async function loadOverview(
  scope: ReadScope,
  range: DateRange,
  client: string | undefined,
  price: number,
): Promise<OverviewData> {
  const grain = chartGrain(range);
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
  return {
    asOf,
    clients: clientNames(allClients),
    tools: tools.rows,
    totals: counterFigures(mergeGroups(tools.groups.values())),
    previousTotals: counterFigures(previousSums?.get("") ?? emptyGroup()),
    sessions: sessions as SessionsReport,
    previousSessions: previousSessions as SessionsReport,
    series: bucketsFrom(seriesSums ?? new Map(), range, grain),
    grain,
    insights: buildInsights(tools.rows, tools.histograms, tools.registered),
    pairs,
    descriptions: descriptionsFrom(versions, registered, {}, asOf),
    agreement: agreementFrom(agreementRows, declarations, range, {}, asOf),
    clientRows: clientRowsFrom(filteredClients),
  };
}

export type ToolPageData = {
  asOf: string | null;
  clients: string[];
  row: ToolRow | undefined;
  histogram: DurationHistogram;
  previous: CounterFigures;
  series: TimeseriesBucket[];
  grain: Grain;
  clientRows: ClientRow[];
  pairs: PairRow[];
  regression: SchemaRegression | undefined;
  descriptions: DescriptionsReport;
  agreement: AgreementReport;
  sessions: SessionsReport;
};

export async function loadToolPage(
  scope: ReadScope,
  tool: string,
  range: DateRange,
  client: string | undefined,
  price: number,
): Promise<ToolPageData> {
  const grain = chartGrain(range);
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
  return {
    asOf,
    clients: clientNames(allClientSums ?? new Map()),
    row: tools.rows[0],
    histogram: tools.histograms.get(tool) ?? {},
    previous: counterFigures(previousSums?.get("") ?? emptyGroup()),
    series: bucketsFrom(seriesSums ?? new Map(), range, grain),
    grain,
    clientRows: clientRowsFrom(clientSums ?? new Map()),
    pairs,
    regression: regressions[0],
    descriptions: descriptionsFrom(versions, registered, { tool }, asOf),
    agreement: agreementFrom(agreementRows, declarations, range, { tool }, asOf),
    sessions: sessions as SessionsReport,
  };
}
