// What each dashboard page shows, loaded in parallel from the same report functions the read API
// answers with (src/worker/db/metrics-report.ts), so page and API can never disagree.
import { listClients, readAsOfMs, sumCounterGroups, type Grain } from "../db/metrics.ts";
import {
  agreementReport,
  buildInsights,
  clientsReport,
  counterFigures,
  descriptionsReport,
  emptyGroup,
  isoTimeOrNull,
  loadTools,
  mergeGroups,
  pairsReport,
  previousRange,
  schemaRegressionsReport,
  sessionsReport,
  timeseriesReport,
  type AgreementReport,
  type ClientRow,
  type CounterFigures,
  type DateRange,
  type DescriptionsReport,
  type Insight,
  type SchemaRegression,
  type SessionsReport,
  type TimeseriesBucket,
  type ToolRow,
} from "../db/metrics-report.ts";
import type { DurationHistogram } from "../histogram.ts";
import type { PairRow } from "../db/metrics.ts";

/** Charts of ranges up to 2 days use hours, longer ranges days. */
export function chartGrain(range: DateRange): Grain {
  return range.days <= 2 ? "hour" : "day";
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
  db: D1Database,
  projectId: string,
  range: DateRange,
  client: string | undefined,
  price: number,
): Promise<OverviewData> {
  const previous = previousRange(range);
  const grain = chartGrain(range);
  const [tools, previousGroups, sessions, previousSessions, series, clients, pairs, descriptions, agreement, clientRows, asOfMs] =
    await Promise.all([
      loadTools(db, projectId, range, { client }),
      // The previous period feeds the cards' deltas, p95 included. Its days are mostly final, so after
      // the first read they come from the isolate's cache (db/metrics-cache.ts).
      sumCounterGroups(db, { projectId, startMs: previous.startMs, endMs: previous.endMs, client }, "day", "all"),
      sessionsReport(db, projectId, range, { client }, price),
      sessionsReport(db, projectId, previous, { client }, price),
      timeseriesReport(db, projectId, range, grain, { client }, { latency: false }),
      listClients(db, { projectId, startMs: range.startMs, endMs: range.endMs }),
      pairsReport(db, projectId, range, { client }),
      descriptionsReport(db, projectId, {}),
      agreementReport(db, projectId, range, {}),
      // Client rows without latency: their histograms would be a second full read of the range.
      clientsReport(db, projectId, range, { client }, { latency: false }),
      readAsOfMs(db),
    ]);
  const totals = mergeGroups(
    tools.rows.map((row) => ({ counters: countersOf(row), histogram: tools.histograms.get(row.tool_name) ?? {} })),
  );
  return {
    asOf: isoTimeOrNull(asOfMs),
    clients,
    tools: tools.rows,
    totals: counterFigures(totals),
    previousTotals: counterFigures(previousGroups.get("") ?? emptyGroup()),
    sessions,
    previousSessions,
    series: series.buckets,
    grain,
    insights: buildInsights(tools.rows, tools.histograms, tools.registered),
    pairs: pairs.pairs,
    descriptions,
    agreement,
    clientRows: clientRows.clients,
  };
}

/** The additive counters back out of a tool row (duration_ms_sum is not shown anywhere). */
function countersOf(row: ToolRow) {
  return {
    calls: row.calls,
    ok: row.ok,
    empty: row.empty,
    bad_args: row.bad_args,
    tool_error: row.tool_error,
    crashed: row.crashed,
    retries: row.retries,
    first_call_attempts: row.first_call_attempts,
    first_call_ok: row.first_call_ok,
    response_bytes_sum: row.response_bytes.sum,
    duration_ms_sum: 0,
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
  db: D1Database,
  projectId: string,
  tool: string,
  range: DateRange,
  client: string | undefined,
  price: number,
): Promise<ToolPageData> {
  const previous = previousRange(range);
  const grain = chartGrain(range);
  const [tools, previousGroups, series, clients, clientRows, pairs, regressions, descriptions, agreement, sessions, asOfMs] =
    await Promise.all([
      loadTools(db, projectId, range, { client, tool }),
      sumCounterGroups(db, { projectId, startMs: previous.startMs, endMs: previous.endMs, client, tool }, "day", "all"),
      timeseriesReport(db, projectId, range, grain, { client, tool }, { latency: false }),
      listClients(db, { projectId, startMs: range.startMs, endMs: range.endMs }),
      clientsReport(db, projectId, range, { tool }),
      pairsReport(db, projectId, range, { tool, client }),
      schemaRegressionsReport(db, projectId, { tool, client }),
      descriptionsReport(db, projectId, { tool }),
      agreementReport(db, projectId, range, { tool }),
      sessionsReport(db, projectId, range, { client }, price),
      readAsOfMs(db),
    ]);
  return {
    asOf: isoTimeOrNull(asOfMs),
    clients,
    row: tools.rows[0],
    histogram: tools.histograms.get(tool) ?? {},
    previous: counterFigures(previousGroups.get("") ?? emptyGroup()),
    series: series.buckets,
    grain,
    clientRows: clientRows.clients,
    pairs: pairs.pairs,
    regression: regressions.regressions[0],
    descriptions,
    agreement,
    sessions,
  };
}
