// The Explore page (SPEC §8): a GET form (so the address is the question, shareable), the answer's
// table with every estimate marked ≈, and one measure charted — over time with a grain, per group
// without. The answer is analytics/explore.ts's, the same as GET /v1/explore's and the MCP tool's.
import type { FC } from "hono/jsx";
import { OTHER_GROUP } from "../analytics/calls-dataset.ts";
import type { ExploreAnswer } from "../analytics/explore.ts";
import { DIMENSION_NAMES, GRAINS, MEASURES, type Dimension, type ExploreGrain, type Measure } from "../analytics/explore-query.ts";
import { MeasureChart, type MeasureBar } from "./charts.tsx";
import { formatChars, formatInt, formatMs, formatRate } from "./format.ts";
import { Document, TopBar } from "./layout.tsx";
import { Name } from "./name.tsx";

/** What the form shows: the request's own parameters (as given, so a refused one can be corrected). */
export type ExploreForm = {
  measures: string[];
  by: string[];
  filters: Partial<Record<Dimension, string[]>>;
  from: string;
  to: string;
  grain: string;
  limit: string;
};

export type ExploreOutcome =
  | { kind: "answer"; answer: ExploreAnswer; grain: ExploreGrain; by: Dimension[]; measures: Measure[] }
  | { kind: "refused"; message: string }
  | { kind: "unavailable"; message: string };

/** `(other)` is both the groups past `limit` and the calls of a large batch ingest merged into one point (docs/explore.md). */
const OTHER_HINT = "(other): the groups past the limit, summed, and the calls a large batch wrote as one merged point";

/** Groups the chart draws without a grain; the table shows them all. */
const CHART_GROUPS = 20;

const MEASURE_LABELS: Record<Measure, string> = {
  calls: "Calls",
  errors: "Errors",
  error_rate: "Error rate",
  bad_args: "Bad args",
  tool_errors: "Tool errors",
  crashes: "Crashes",
  empty_rate: "Empty rate",
  p50: "p50",
  p95: "p95",
  p99: "p99",
  mean_ms: "Mean",
  response_bytes: "Response chars",
  distinct_args: "Distinct args",
  distinct_sessions: "Distinct sessions",
};

/** A measure's value as text. */
export function formatMeasure(measure: Measure, value: number): string {
  if (measure === "error_rate" || measure === "empty_rate") return formatRate(value);
  if (measure === "p50" || measure === "p95" || measure === "p99" || measure === "mean_ms") return formatMs(value);
  if (measure === "response_bytes") return formatChars(value);
  return formatInt(value);
}

/** Whether a figure is an estimate: every figure of a sampled answer, and the measures the answer calls approximate. */
function estimated(answer: ExploreAnswer, measure: Measure): boolean {
  return answer.sampled || answer.approximate.includes(measure);
}

function timeLabel(iso: string, grain: ExploreGrain): string {
  return grain === "hour" ? iso.slice(5, 16).replace("T", " ") : iso.slice(0, 10);
}

/**
 * An Explore address pre-filtered: the filters given, broken down by `by`, the range carried along
 * when the linking page has one (dates, inclusive, as the pages use them).
 */
export function exploreHref(filters: Partial<Record<Dimension, string | undefined>>, by: Dimension, measures: readonly Measure[], range?: { from: string; to: string }): string {
  const params = new URLSearchParams();
  for (const [dimension, value] of Object.entries(filters)) if (value !== undefined) params.append(`filter[${dimension}]`, value);
  params.append("by", by);
  for (const m of measures) params.append("measure", m);
  if (range) {
    params.set("from", range.from);
    params.set("to", range.to);
  }
  return `/explore?${params}`;
}

/** How many filter inputs a dimension gets: one per value given, plus an empty one to add another. */
const filterInputs = (values: string[] | undefined): string[] => [...(values ?? []), ""];

const Figure: FC<{ answer: ExploreAnswer; measure: Measure; value: string | number | null | undefined }> = ({ answer, measure, value }) => {
  if (typeof value !== "number") return <td class="n" data-value="">—</td>;
  const approx = estimated(answer, measure);
  return (
    <td class="n" data-value={String(value)} data-approx={approx ? "1" : undefined} title={approx ? "an estimate (see the note above the table)" : undefined}>
      {approx ? "≈ " : ""}
      {formatMeasure(measure, value)}
    </td>
  );
};

const ExploreResult: FC<{ outcome: Extract<ExploreOutcome, { kind: "answer" }> }> = ({ outcome }) => {
  const { answer, grain, by, measures } = outcome;
  const first = measures[0]!;
  const columns = [...(grain === "none" ? [] : ["time"]), ...by];
  const isOther = (row: ExploreAnswer["rows"][number]) => by.length > 0 && by.every((d) => row[d] === OTHER_GROUP);
  const groupOf = (row: ExploreAnswer["rows"][number]) => by.map((d) => String(row[d] ?? "")).join(" · ");
  // Over time: the first measure of the group with the most calls (the only group without a breakdown).
  const callsOf = new Map<string, number>();
  for (const r of answer.rows) callsOf.set(groupOf(r), (callsOf.get(groupOf(r)) ?? 0) + (typeof r.calls === "number" ? r.calls : typeof r[first] === "number" ? r[first] : 0));
  const chartGroup = by.length > 0 && answer.rows.length > 0 ? [...callsOf].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]![0] : null;
  const bars: MeasureBar[] =
    grain === "none"
      ? answer.rows.filter((r) => !isOther(r)).slice(0, CHART_GROUPS).map((r) => ({ label: by.length > 0 ? groupOf(r) : "all calls", title: by.length > 0 ? groupOf(r) : "all calls", value: typeof r[first] === "number" ? r[first] : null }))
      : answer.rows
          .filter((r) => chartGroup === null || groupOf(r) === chartGroup)
          .map((r) => ({ label: timeLabel(String(r.time), grain), title: String(r.time), value: typeof r[first] === "number" ? r[first] : null }));
  const notes: string[] = [];
  if (answer.sampled) notes.push(`Analytics Engine sampled these calls (up to 1 in ${formatInt(answer.sample_interval_max)}): every figure marked ≈ is an estimate from the weighted points.`);
  const approximate = measures.filter((m) => answer.approximate.includes(m));
  if (approximate.length > 0) notes.push(`${approximate.map((m) => MEASURE_LABELS[m]).join(", ")} ${approximate.length === 1 ? "is" : "are"} approximate (≈)${answer.source === "rollups" ? ": percentiles from the day rows' latency histograms, within 5 %" : ": distinct counts of stored hashes, never exact"}.`);
  if (answer.source === "rollups") notes.push("This range reaches past Analytics Engine's 90 days: answered from the day rows (exact counts).");
  if (answer.truncated) notes.push("The engine had more groups than it returns: the smallest are missing from (other).");
  return (
    <>
      <section class="panel" id="explore-chart">
        <h2>
          {MEASURE_LABELS[first]} {grain === "none" ? (by.length > 0 ? `by ${by.join(" and ")}` : "") : `per ${grain}`}
          {chartGroup !== null && grain !== "none" ? <small> for <Name text={chartGroup} /></small> : null}
          {by.length > 0 && grain === "none" && answer.rows.length > CHART_GROUPS ? <small> the largest {CHART_GROUPS}</small> : null}
        </h2>
        {answer.rows.length === 0 ? <p class="empty-state">No calls match in this range.</p> : <MeasureChart bars={bars} format={(v) => formatMeasure(first, v)} label={`${MEASURE_LABELS[first]} chart`} />}
      </section>
      <section class="panel" id="explore-table">
        <h2>
          Answer <small data-source={answer.source}>{answer.source === "rollups" ? "from D1's day rows" : "from Analytics Engine"} · as of {answer.as_of.replace("T", " ").slice(0, 16)} UTC</small>
        </h2>
        {notes.map((n) => <p class="hint" data-explore-note>{n}</p>)}
        {answer.rows.length === 0 ? (
          <p class="empty-state">No calls match in this range.</p>
        ) : (
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  {columns.map((c) => <th>{c}</th>)}
                  {measures.map((m) => <th class="n">{estimated(answer, m) ? "≈ " : ""}{MEASURE_LABELS[m]}</th>)}
                </tr>
              </thead>
              <tbody>
                {answer.rows.map((r) => (
                  <tr data-other={isOther(r) ? "1" : undefined}>
                    {columns.map((c) =>
                      c === "time" ? <td class="mono">{timeLabel(String(r.time), grain)}</td> : <td class="tool" title={r[c] === OTHER_GROUP ? OTHER_HINT : undefined}><Name text={String(r[c] ?? "")} /></td>,
                    )}
                    {measures.map((m) => <Figure answer={answer} measure={m} value={r[m]} />)}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
};

export const ExplorePage: FC<{ projectName: string; form: ExploreForm; outcome: ExploreOutcome }> = ({ projectName, form, outcome }) => (
  <Document title={`Explore · ${projectName}`}>
    <TopBar projectName={projectName} />
    <main>
      <div class="toolbar">
        <h1>
          Explore <small>any breakdown of the last 90 days, from Analytics Engine (docs/explore.md)</small>
        </h1>
      </div>
      <form class="panel explore-form" method="get" action="/explore" id="explore-form">
        <fieldset>
          <legend>Measures</legend>
          {MEASURES.map((m) => (
            <label class="check">
              <input type="checkbox" name="measure" value={m} checked={form.measures.includes(m)} /> {MEASURE_LABELS[m]}
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Break down by</legend>
          {[0, 1].map((i) => (
            <label>
              {i === 0 ? "First" : "Then"}
              <select name="by">
                <option value="" selected={form.by[i] === undefined}>—</option>
                {DIMENSION_NAMES.map((d) => <option value={d} selected={form.by[i] === d}>{d}</option>)}
              </select>
            </label>
          ))}
          <label>
            Grain
            <select name="grain">
              {GRAINS.map((g) => <option value={g} selected={form.grain === g}>{g}</option>)}
            </select>
          </label>
          <label>
            From
            <input type="text" name="from" value={form.from} placeholder="YYYY-MM-DD (default: 7 days ago)" />
          </label>
          <label>
            To
            <input type="text" name="to" value={form.to} placeholder="YYYY-MM-DD (default: now)" />
          </label>
          <label>
            Groups
            <input type="number" name="limit" min="1" max="200" value={form.limit} placeholder="50" />
          </label>
        </fieldset>
        <fieldset>
          <legend>Filters <small>any of a dimension's values matches; dimensions are combined with AND</small></legend>
          {DIMENSION_NAMES.map((d) =>
            filterInputs(form.filters[d]).map((value) => (
              <label>
                {d}
                <input type="text" name={`filter[${d}]`} value={value} />
              </label>
            )),
          )}
        </fieldset>
        <button type="submit">Explore</button>
      </form>
      {outcome.kind === "refused" ? (
        <div class="error" role="alert" data-error="bad-request">
          That question cannot be asked: {outcome.message}
        </div>
      ) : outcome.kind === "unavailable" ? (
        <div class="error" role="alert" data-error="unavailable">
          Analytics Engine cannot be read right now: {outcome.message}. In production Explore reads it through the Analytics SQL binding
          ([analytics] in wrangler.toml) or the account SQL API (the CF_ACCOUNT_ID variable and the CF_ANALYTICS_TOKEN secret); locally, npm run dev
          starts an embedded engine. See <code>docs/explore.md</code> ("Where it runs") in the repository.
        </div>
      ) : (
        <ExploreResult outcome={outcome} />
      )}
      <footer class="foot">MCPulse Edge · names, sizes, hashes and outcomes only — never arguments or results</footer>
    </main>
  </Document>
);
