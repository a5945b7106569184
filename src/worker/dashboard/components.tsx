// Small building blocks shared by the dashboard pages: metric cards, status pills, the tools table.
import type { Child, FC } from "hono/jsx";
import type { Dimension } from "../analytics/explore-query.ts";
import { exploreHref } from "./explore-page.tsx";
import { ruleForInsight } from "../alerts/suggest.ts";
import { DEFINITIONS } from "../metrics/definitions.ts";
import type { Insight } from "../metrics/insights.ts";
import type { Listed, NameList, Paged } from "../metrics/page-data.ts";
import type { ToolRow } from "../metrics/reports.ts";
import { formatChars, formatInt, formatMs, formatRate, measured, type Delta } from "./format.ts";
import { pageHref, toolHref, type PageQuery } from "./layout.tsx";
import { firstCallHint } from "./explain.tsx";
import { Name, WithNames } from "./name.tsx";

export const Card: FC<{ label: string; value: string; raw: number | null; delta?: Delta | null; sub?: Child; id: string }> = (p) => (
  <div class="card" data-card={p.id} data-value={p.raw === null ? "" : String(p.raw)}>
    <div class="label">{p.label}</div>
    <div class="value">
      {p.value}
      {p.delta ? (
        <span class={`delta ${p.delta.tone}`} title="against the previous period of the same length">{p.delta.text}</span>
      ) : null}
    </div>
    {p.sub ? <div class="sub">{p.sub}</div> : null}
  </div>
);

/** Colours a first-call success rate by the insight thresholds (< 70 % warn, < 50 % bad). */
export function firstCallClass(rate: number | null): string {
  if (rate === null) return "";
  return rate < 0.5 ? "rate-bad" : rate < 0.7 ? "rate-warn" : "";
}

export function badRateClass(rate: number | null, warnAbove: number): string {
  if (rate === null) return "";
  return rate > warnAbove * 4 ? "rate-bad" : rate > warnAbove ? "rate-warn" : "";
}

export const ToolStatus: FC<{ row: ToolRow }> = ({ row }) => (
  <>
    {row.dead ? <span class="pill dead">dead</span> : null}
    {!row.registered ? <span class="pill unreg" title="called, but not in the latest startup's tool list">unregistered</span> : null}
    {row.policy ? (
      <span class="pill policy" title="exempt from dead-tool detection by its policy">
        {row.policy.requires_authorization ? "needs auth" : "needs identity"}
      </span>
    ) : null}
  </>
);

/** A numeric cell: the formatted text, the exact API value in data-value (sorting and tests). */
const N: FC<{ value: number | null; text: string; cls?: string; col: string; why?: string | undefined }> = ({ value, text, cls, col, why }) => (
  <td class={`n ${cls ?? ""}`} data-col={col} data-value={value === null ? "" : String(value)} title={why} data-why={why === undefined ? undefined : ""}>
    {text}{why === undefined ? null : <sup class="why-mark" aria-hidden="true">?</sup>}
  </td>
);

export const ToolsTable: FC<{ rows: ToolRow[]; query: PageQuery }> = ({ rows, query }) => {
  if (rows.length === 0) return <p class="empty-state">No tool was called or registered in this range, or none matches the search.</p>;
  return (
    <div class="scroll">
      <table class="sortable" id="tools-table">
        <thead>
          <tr>
            <th data-sort="text">Tool</th>
            <th class="n" data-sort="num">Calls</th>
            <th class="n" data-sort="num" title={`first_call_ok ÷ chains — ${DEFINITIONS.first_call_ok}`}>First-call ok</th>
            <th class="n" data-sort="num">Errors</th>
            <th class="n" data-sort="num">Bad args</th>
            <th class="n" data-sort="num">Tool error</th>
            <th class="n" data-sort="num">Crashed</th>
            <th class="n" data-sort="num">Empty</th>
            <th class="n" data-sort="num" title={`calls that are retries: ${DEFINITIONS.retry}`}>Retries</th>
            <th class="n" data-sort="num">p50</th>
            <th class="n" data-sort="num">p95</th>
            <th class="n" data-sort="num">p99</th>
            <th class="n" data-sort="num" title="average response size, UTF-16 characters of JSON">Avg resp.</th>
            <th class="n" data-sort="num" title="schema size in UTF-16 characters; ÷ 4 ≈ tokens every session">Schema</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr data-tool={r.tool_name}>
              <td class="tool" data-value={r.tool_name}>
                <a href={toolHref(r.tool_name, query)}><Name text={r.tool_name} /></a>
                <ToolStatus row={r} />
                <ExploreLink filters={{ tool: r.tool_name, client: query.client }} by="client_version" query={query} />
              </td>
              <N col="calls" value={r.calls} text={formatInt(r.calls)} />
              <N col="first_call_rate" value={r.first_call_rate} text={measured(r, "first_call_rate", formatRate(r.first_call_rate))} cls={firstCallClass(r.first_call_rate)} why={firstCallHint(r)} />
              <N col="error_rate" value={r.error_rate} text={formatRate(r.error_rate)} cls={badRateClass(r.error_rate, 0.05)} />
              <N col="bad_args" value={r.bad_args} text={formatInt(r.bad_args)} />
              <N col="tool_error" value={r.tool_error} text={formatInt(r.tool_error)} />
              <N col="crashed" value={r.crashed} text={formatInt(r.crashed)} />
              <N col="empty_rate" value={r.empty_rate} text={formatRate(r.empty_rate)} cls={badRateClass(r.empty_rate, 0.05)} />
              <N col="retries" value={r.retries} text={measured(r, "retries", formatInt(r.retries))} />
              <N col="p50" value={r.duration_ms.p50} text={formatMs(r.duration_ms.p50)} />
              <N col="p95" value={r.duration_ms.p95} text={formatMs(r.duration_ms.p95)} />
              <N col="p99" value={r.duration_ms.p99} text={formatMs(r.duration_ms.p99)} />
              <N col="response_avg" value={r.response_bytes.avg} text={formatChars(r.response_bytes.avg)} />
              <N col="schema_bytes" value={r.schema_bytes} text={formatChars(r.schema_bytes)} />
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};

/** An insight names its tools in its message; more than this many are listed, not quoted. */
const NAMES_IN_MESSAGE = 10;

/** Tool names, each linked to its page, and how many more there are. */
export const Names: FC<{ list: NameList; query: PageQuery }> = ({ list, query }) => (
  <>
    {list.rows.map((t, i) => (
      <>
        {i > 0 ? ", " : ""}
        <a class="mono" href={toolHref(t, query)}><Name text={t} /></a>
      </>
    ))}
    {list.total > list.rows.length ? ` and ${(list.total - list.rows.length).toLocaleString("en-US")} more` : ""}
  </>
);

/** Under a cut list: how many rows it left out, and where to see them all. */
export const More: FC<{ shown: number; total: number; api: string }> = ({ shown, total, api }) =>
  total > shown ? (
    <p class="muted more" data-more={String(total - shown)}>
      …and {(total - shown).toLocaleString("en-US")} more — search by name above, or {api} for all of them
    </p>
  ) : null;

/**
 * A cut list as a table: the `empty` sentence when it has no rows, else its rows under `head` in a
 * scrolling table; then how many it left out and which API route lists them all.
 */
export function CutTable<T>({ list, empty, api, head, row, sortable }: { list: Listed<T>; empty: string; api: string; head: Child; row: (item: T) => Child; sortable?: boolean }) {
  return (
    <>
      {list.rows.length === 0 ? (
        <p class="empty-state">{empty}</p>
      ) : (
        <div class="scroll">
          <table class={sortable ? "sortable" : undefined}>
            <thead>{head}</thead>
            <tbody>{list.rows.map((item) => row(item))}</tbody>
          </table>
        </div>
      )}
      <More shown={list.rows.length} total={list.total} api={api} />
    </>
  );
}

/** The search box over a page's names: the range and client go along, the page starts at 1. */
export const SearchBox: FC<{ path: string; query: PageQuery; hidden?: Record<string, string>; what: string }> = ({ path, query, hidden, what }) => (
  <form class="search" method="get" action={path} id="search">
    {Object.entries({ ...hidden, from: query.from, to: query.to, client: query.client }).map(([name, value]) =>
      value === undefined ? null : <input type="hidden" name={name} value={value} />,
    )}
    <input type="search" name="q" value={query.q ?? ""} placeholder={`Search ${what}`} aria-label={`Search ${what}`} maxlength={200} />
    <button type="submit">Search</button>
  </form>
);

/** Previous and next page of a paged list, and where this page is. */
export const Pager: FC<{ list: Paged<unknown>; path: string; query: PageQuery; hidden?: Record<string, string> }> = ({ list, path, query, hidden }) =>
  list.pages > 1 ? (
    <nav class="pager" aria-label="Pages" data-page={String(list.page)} data-pages={String(list.pages)}>
      {list.page > 1 ? <a rel="prev" href={pageHref(path, { ...query, page: list.page - 1 }, hidden)}>‹ Previous</a> : <span />}
      <span class="muted">
        page {list.page.toLocaleString("en-US")} of {list.pages.toLocaleString("en-US")} · {list.total.toLocaleString("en-US")} rows
      </span>
      {list.page < list.pages ? <a rel="next" href={pageHref(path, { ...query, page: list.page + 1 }, hidden)}>Next ›</a> : <span />}
    </nav>
  ) : null;

/** The alerts page with the rule this insight suggests (alerts/suggest.ts). */
export function alertMeHref(kind: string, tool: string | null): string {
  const q = new URLSearchParams({ suggest: kind });
  if (tool !== null) q.set("tool", tool);
  return `/alerts?${q.toString()}`;
}

/** One entry of Fix first: a tool's worst insight, and its others. */
export type InsightGroup = { insight: Insight; also: Insight[] };

/**
 * Fix first lists a tool once: its worst insight (the list comes worst first, metrics/insights.ts)
 * with the tool's other insights inside it, in their order. Insights about no one tool (converged
 * descriptions) stay entries of their own.
 */
export function groupInsightsByTool(insights: Insight[]): InsightGroup[] {
  const groups: InsightGroup[] = [];
  const byTool = new Map<string, InsightGroup>();
  for (const insight of insights) {
    const group = insight.tool_name === null ? undefined : byTool.get(insight.tool_name);
    if (group) {
      group.also.push(insight);
      continue;
    }
    const fresh = { insight, also: [] };
    groups.push(fresh);
    if (insight.tool_name !== null) byTool.set(insight.tool_name, fresh);
  }
  return groups;
}

const InsightText: FC<{ insight: Insight; query: PageQuery }> = ({ insight: i, query }) =>
  i.tools.length > NAMES_IN_MESSAGE ? (
    // A converged description may name thousands of tools: the first few, linked, and a count.
    <>
      <Names list={{ rows: i.tools.slice(0, NAMES_IN_MESSAGE), total: i.tools.length }} query={query} /> read the same to a model
    </>
  ) : (
    <WithNames text={i.message} names={i.tools} />
  );

const AlertMe: FC<{ insight: Insight }> = ({ insight: i }) =>
  ruleForInsight(i.kind, i.tool_name) ? (
    <a class="alert-me" data-alert-me href={alertMeHref(i.kind, i.tool_name)}>alert me on this</a>
  ) : null;

export const InsightList: FC<{ insights: Insight[]; query: PageQuery; limit?: number }> = ({ insights, query, limit = 8 }) => {
  if (insights.length === 0) return <p class="empty-state">Nothing to fix: no tool crosses a threshold.</p>;
  const groups = groupInsightsByTool(insights);
  return (
    <ul class="insights" id="insights">
      {groups.slice(0, limit).map(({ insight: i, also }) => (
        <li data-kind={i.kind} data-tool={i.tool_name ?? undefined}>
          <span class={`pill ${i.severity}`}>{i.severity}</span>
          <span class="insight-text">
            {i.tool_name ? (
              <>
                <a class="mono" href={toolHref(i.tool_name, query)}><Name text={i.tool_name} /></a>
                {" — "}
              </>
            ) : null}
            <InsightText insight={i} query={query} />
            {also.length > 0 ? (
              <ul class="also" data-also={String(also.length)}>
                {also.map((a) => (
                  <li data-kind={a.kind}>
                    <span class={`pill ${a.severity}`}>{a.severity}</span>
                    <span><InsightText insight={a} query={query} /></span>
                    <AlertMe insight={a} />
                  </li>
                ))}
              </ul>
            ) : null}
          </span>
          <AlertMe insight={i} />
        </li>
      ))}
      {groups.length > limit ? <li class="muted">…and {(groups.length - limit).toLocaleString("en-US")} more (GET /v1/metrics/insights)</li> : null}
    </ul>
  );
};

/**
 * "explore" beside a tool or client row: the Explore page filtered to that row (and the page's
 * client), broken down by `by`, over the page's range.
 */
export const ExploreLink: FC<{ filters: Partial<Record<Dimension, string | undefined>>; by: Dimension; query: PageQuery }> = ({ filters, by, query }) => (
  <a class="explore-link" data-explore-link href={exploreHref(filters, by, ["calls", "error_rate", "p95"], query.from !== undefined && query.to !== undefined ? { from: query.from, to: query.to } : undefined)} title="break these calls down further in Explore">
    explore
  </a>
);
