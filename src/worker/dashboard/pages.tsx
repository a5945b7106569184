// The two dashboard pages: the project overview and one tool's page.
import type { FC } from "hono/jsx";
import { PAGE_ROWS, type ChartSeries, type OverviewData, type ToolPageData } from "../metrics/page-data.ts";
import type { DateRange, Grain } from "../metrics/query.ts";
import { UTF16_UNITS_PER_TOKEN, type TimeseriesBucket } from "../metrics/reports.ts";
import { CallsChart, LatencyHistogram, OutcomeBar, RateChart, type TimePoint } from "./charts.tsx";
import { Card, CutTable, ExploreLink, InsightList, More, Names, Pager, SearchBox, ToolStatus, ToolsTable, badRateClass, firstCallClass } from "./components.tsx";
import { countOf, formatChars, formatDelta, formatInt, formatMs, formatRate, formatTokens, formatUsd, measured, NOT_MEASURABLE_WITHOUT_ARGS_WHY } from "./format.ts";
import { Frame, pageHref, toolHref, type PageQuery } from "./layout.tsx";
import { Name, visibleName } from "./name.tsx";
import { FirstCallWhy, RetriesWhy, firstCallFacts, firstCallHint, knownSessionShare } from "./explain.tsx";

/** Why the clients tables show the share of calls with a known session (SPEC §2.4). */
const KNOWN_SESSION_HINT =
  "Share of this client's calls that came with a known session. Retries and first-call success are measured within a session; " +
  "a call without one counts as its own first call, so a low share means first-call success is not a measurement of retries.";
import { SMALL_SAMPLE_RULE } from "../metrics/insights.ts";

const PAGE_NOTE = `${PAGE_ROWS} per page`;

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** An x label: the day, or the hour (a day's first hour names the day, so two days tell apart). */
function bucketLabel(start: string, grain: Grain): string {
  const d = new Date(start);
  if (grain === "hour" && d.getUTCHours() !== 0) return `${String(d.getUTCHours()).padStart(2, "0")}:00`;
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
}

function dayLabel(iso: string): string {
  return bucketLabel(`${iso}T00:00:00Z`, "day");
}

/** Under a time chart's title: its grain, and which days it shows when not the whole range. */
const ChartNote: FC<{ chart: ChartSeries; range: DateRange; extra?: string }> = ({ chart, range, extra }) => (
  <small data-chart-grain={chart.grain} data-chart-from={chart.range.from} data-chart-to={chart.range.to}>
    {chart.grain === "hour" ? "per hour" : "per day"}
    {chart.range.from !== range.from || chart.range.to !== range.to
      ? ` · only ${chart.range.from === chart.range.to ? dayLabel(chart.range.from) : `${dayLabel(chart.range.from)}–${dayLabel(chart.range.to)}`} had calls in this range`
      : ""}
    {extra ? ` · ${extra}` : ""}
  </small>
);

function timePoints(series: TimeseriesBucket[], grain: Grain): TimePoint[] {
  return series.map((b) => ({
    label: bucketLabel(b.start, grain),
    title: grain === "hour" ? b.start.slice(0, 13).replace("T", " ") + ":00 UTC" : b.start.slice(0, 10),
    calls: b.calls,
    errors: b.bad_args + b.tool_error + b.crashed,
  }));
}

type Common = {
  projectName: string;
  range: DateRange;
  client: string | undefined;
  search: string | undefined;
  todayMs: number;
  pricePerMillion: number;
};

/** What the frame shows the same on both pages: the project, the range and client asked for, today, the data's as_of and the picker's clients. */
function frameFacts(common: Common, data: { asOf: string | null; clients: string[] }) {
  return { projectName: common.projectName, range: common.range, client: common.client, todayMs: common.todayMs, asOf: data.asOf, clients: data.clients };
}

export const OverviewPage: FC<Common & { data: OverviewData }> = (props) => {
  const { data, projectName, range, client, search } = props;
  const q: PageQuery = { from: range.from, to: range.to, client };
  const searched: PageQuery = { ...q, q: search };
  const t = data.totals;
  const pt = data.previousTotals;
  const deadTokens = data.deadSchemaBytes / UTF16_UNITS_PER_TOKEN;
  const periodNote = `previous ${range.days} day${range.days === 1 ? "" : "s"}`;
  return (
    <Frame {...frameFacts(props, data)} title={`${visibleName(projectName)} · MCPulse`} heading="Overview" path="/">
      <div class="cards">
        <Card id="calls" label="Tool calls" value={formatInt(t.calls)} raw={t.calls}
          delta={formatDelta(t.calls, pt.calls, { relative: true, higherIsBetter: true })} sub={`vs ${formatInt(pt.calls)} in the ${periodNote}`} />
        <Card id="first_call_rate" label="First-call success" value={measured(t, "first_call_rate", formatRate(t.first_call_rate))} raw={t.first_call_rate}
          delta={formatDelta(t.first_call_rate, pt.first_call_rate, { relative: false, higherIsBetter: true })}
          sub={t.not_measurable ? NOT_MEASURABLE_WITHOUT_ARGS_WHY : <FirstCallWhy facts={firstCallFacts(t)} />} />
        <Card id="error_rate" label="Error rate" value={formatRate(t.error_rate)} raw={t.error_rate}
          delta={formatDelta(t.error_rate, pt.error_rate, { relative: false, higherIsBetter: false })}
          sub={`${formatInt(t.bad_args)} bad args · ${formatInt(t.tool_error)} tool · ${formatInt(t.crashed)} crashed`} />
        <Card id="empty_rate" label="Empty results" value={formatRate(t.empty_rate)} raw={t.empty_rate}
          delta={formatDelta(t.empty_rate, pt.empty_rate, { relative: false, higherIsBetter: false })} sub={countOf(t.empty, "empty answer")} />
        <Card id="p95" label="p95 latency" value={formatMs(t.duration_ms.p95)} raw={t.duration_ms.p95}
          delta={formatDelta(t.duration_ms.p95, pt.duration_ms.p95, { relative: true, higherIsBetter: false })}
          sub={`p50 ${formatMs(t.duration_ms.p50)} · p99 ${formatMs(t.duration_ms.p99)}`} />
        <Card id="sessions" label="Sessions" value={formatInt(data.sessions.sessions)} raw={data.sessions.sessions}
          delta={formatDelta(data.sessions.sessions, data.previousSessions.sessions, { relative: true, higherIsBetter: true })}
          sub={data.sessions.calls_per_session === null ? "— calls per session" : `${data.sessions.calls_per_session} ${data.sessions.calls_per_session === 1 ? "call" : "calls"} per session`} />
        <Card id="cost_per_session_usd" label="Cost per session" value={measured(data.sessions, "cost_per_session_usd", formatUsd(data.sessions.cost_per_session_usd))} raw={data.sessions.cost_per_session_usd}
          delta={formatDelta(data.sessions.cost_per_session_usd, data.previousSessions.cost_per_session_usd, { relative: true, higherIsBetter: false })}
          sub={`${formatTokens(data.sessions.response_tokens_per_session)} response + ${formatTokens(data.sessions.schema_tokens_per_session)} schema tokens`} />
        <Card id="dead_tools" label="Dead tools" value={formatInt(data.deadCount)} raw={data.deadCount}
          sub={data.deadCount ? `${formatTokens(deadTokens)} wasted tokens per session` : "every registered tool was used"} />
      </div>

      <div class="grid2">
        <section class="panel">
          <h2>
            Calls <ChartNote chart={data.chart} range={range} extra="errors in red" />
          </h2>
          <CallsChart points={timePoints(data.chart.series, data.chart.grain)} />
        </section>
        <section class="panel">
          <h2>
            Fix first <small>worst first: severity, failed calls, then calls affected</small>
          </h2>
          <InsightList insights={data.insights} query={q} />
          <p class="muted more" data-small-sample-rule>{SMALL_SAMPLE_RULE}</p>
        </section>
      </div>

      <section class="panel" id="tools">
        <h2>
          Tools{" "}
          <small data-tool-count={String(data.toolCount)}>
            {formatInt(data.toolCount)}
            {search !== undefined ? ` · ${formatInt(data.tools.total)} match the search` : ""} · most calls first, {PAGE_NOTE} · click a
            header to sort this page, a name for details
          </small>
        </h2>
        <SearchBox path="/" query={searched} what="tools and clients" />
        <ToolsTable rows={data.tools.rows} query={q} />
        <Pager list={data.tools} path="/" query={searched} />
      </section>

      <div class="grid2 even">
        <section class="panel" id="dead-tools">
          <h2>
            Dead tools <small>registered, never called in this range — their schema is paid every session</small>
          </h2>
          <CutTable
            list={data.dead}
            empty="None."
            api="GET /v1/metrics/tools"
            head={<tr><th>Tool</th><th class="n">Schema chars</th><th class="n">Tokens / session</th></tr>}
            row={(r) => (
              <tr data-tool={r.tool_name}>
                <td class="tool"><a href={toolHref(r.tool_name, q)}><Name text={r.tool_name} /></a></td>
                <td class="n">{formatInt(r.schema_bytes ?? 0)}</td>
                <td class="n">{formatTokens((r.schema_bytes ?? 0) / UTF16_UNITS_PER_TOKEN)}</td>
              </tr>
            )}
          />
        </section>
        <section class="panel" id="pairs">
          <h2>
            Tool pairs <small>which tool the model calls next</small>
          </h2>
          <CutTable
            list={data.pairs}
            empty="No pairs in this range."
            api="GET /v1/metrics/pairs"
            head={<tr><th>From</th><th>Then</th><th class="n">Times</th></tr>}
            row={(p) => (
              <tr>
                <td class="tool"><a href={toolHref(p.from_tool, q)}><Name text={p.from_tool} /></a></td>
                <td class="tool"><a href={toolHref(p.to_tool, q)}><Name text={p.to_tool} /></a></td>
                <td class="n">{formatInt(p.count)}</td>
              </tr>
            )}
          />
        </section>
      </div>

      <div class="grid2 even">
        <section class="panel" id="clients">
          <h2>Clients</h2>
          <CutTable
            list={data.clientRows}
            sortable
            empty="No calls in this range, or no client matches the search."
            api="GET /v1/metrics/clients"
            head={
              <tr>
                <th data-sort="text">Client</th><th class="n" data-sort="num">Calls</th><th class="n" data-sort="num">First-call ok</th>
                <th class="n" data-sort="num">Errors</th><th class="n" data-sort="num">Empty</th><th class="n" data-sort="num">Retries</th>
                <th class="n" data-sort="num" title={KNOWN_SESSION_HINT}>Known session</th>
              </tr>
            }
            row={(c) => (
              <tr data-client={c.client_name}>
                <td data-value={c.client_name}><a href={pageHref("/", { from: range.from, to: range.to, client: c.client_name })}><Name text={c.client_name} /></a> <ExploreLink filters={{ client: c.client_name }} by="client_version" query={q} /></td>
                <td class="n" data-value={String(c.calls)}>{formatInt(c.calls)}</td>
                <td class={`n ${firstCallClass(c.first_call_rate)}`} data-value={String(c.first_call_rate ?? "")} title={firstCallHint(c)}>{measured(c, "first_call_rate", formatRate(c.first_call_rate))}</td>
                <td class="n" data-value={String(c.error_rate ?? "")}>{formatRate(c.error_rate)}</td>
                <td class="n" data-value={String(c.empty_rate ?? "")}>{formatRate(c.empty_rate)}</td>
                <td class="n" data-value={String(c.retries)}>{measured(c, "retries", formatInt(c.retries))}</td>
                <td class="n" data-known-session data-value={String(knownSessionShare(c) ?? "")} title={KNOWN_SESSION_HINT}>{formatRate(knownSessionShare(c))}</td>
              </tr>
            )}
          />
        </section>
        <section class="panel" id="descriptions">
          <h2>
            Descriptions <small>churn and convergence</small>
          </h2>
          <Descriptions data={data.descriptions} query={q} />
        </section>
      </div>

      <section class="panel" id="agreement">
        <h2>
          Cross-tool agreement <small>opt-in checks that two tools report the same field</small>
        </h2>
        <Agreement data={data.agreement} query={q} />
      </section>
    </Frame>
  );
};

const Descriptions: FC<{ data: OverviewData["descriptions"]; query: PageQuery }> = ({ data, query }) => (
  <>
    {data.churn.total === 0 && data.convergence.total === 0 ? (
      <p class="empty-state">No description churn and no two tools with the same normalised description.</p>
    ) : null}
    {data.churn.rows.map((c) => (
      <p data-churn={c.tool_name}>
        <a class="mono" href={toolHref(c.tool_name, query)}><Name text={c.tool_name} /></a> — description changed{" "}
        <b>{c.description_versions - 1}</b> time{c.description_versions === 2 ? "" : "s"} while its schema{" "}
        <span class="mono">{c.schema_hash}</span> stayed the same
        <span class="muted"> (last change {c.descriptions[c.descriptions.length - 1]?.first_seen.slice(0, 10)})</span>
      </p>
    ))}
    <More shown={data.churn.rows.length} total={data.churn.total} api="GET /v1/metrics/descriptions" />
    {data.convergence.rows.map((c) => (
      <p data-convergence={c.description_norm}>
        <span class="pill medium">converged</span> <Names list={c.tools} query={query} /> read the same to a model (
        <span class="mono"><Name text={c.description_norm} wide /></span>)
      </p>
    ))}
    <More shown={data.convergence.rows.length} total={data.convergence.total} api="GET /v1/metrics/descriptions" />
  </>
);

const Agreement: FC<{ data: OverviewData["agreement"]; query: PageQuery }> = ({ data, query }) => (
  <>
    {data.agreement.total === 0 && data.silent.total === 0 ? <p class="empty-state">No agreement checks declared or run.</p> : null}
    {data.agreement.rows.length > 0 ? (
      <div class="scroll">
      <table>
        <thead>
          <tr><th>Field</th><th>Tool A</th><th>Tool B</th><th class="n">Checks</th><th class="n">Disagreements</th><th class="n">Rate</th></tr>
        </thead>
        <tbody>
          {data.agreement.rows.map((a) => (
            <tr>
              <td class="mono"><Name text={a.field} /></td>
              <td class="tool"><a href={toolHref(a.tool_a, query)}><Name text={a.tool_a} /></a></td>
              <td class="tool"><a href={toolHref(a.tool_b, query)}><Name text={a.tool_b} /></a></td>
              <td class="n">{formatInt(a.checks)}</td>
              <td class="n">{formatInt(a.disagreements)}</td>
              <td class={`n ${badRateClass(a.disagreement_rate, 0.05)}`}>{formatRate(a.disagreement_rate)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      </div>
    ) : null}
    <More shown={data.agreement.rows.length} total={data.agreement.total} api="GET /v1/metrics/agreement" />
    {data.silent.rows.map((s) => (
      <p class="muted" data-silent={s.field}>
        <span class="pill low">silent</span> <span class="mono"><Name text={s.field} /></span> is declared on <Names list={s.tools} query={query} /> but had
        no verdict in this range
      </p>
    ))}
    <More shown={data.silent.rows.length} total={data.silent.total} api="GET /v1/metrics/agreement" />
  </>
);

export const ToolPage: FC<Common & { tool: string; data: ToolPageData }> = (props) => {
  const { tool, data, projectName, range, client, search, pricePerMillion } = props;
  const q: PageQuery = { from: range.from, to: range.to, client };
  const searched: PageQuery = { ...q, q: search };
  const hidden = { name: tool };
  const r = data.row;
  const p = data.previous;
  const labels = data.chart.series.map((b) => bucketLabel(b.start, data.chart.grain));
  const schemaTokens = r?.schema_bytes == null ? null : r.schema_bytes / UTF16_UNITS_PER_TOKEN;
  const before = data.pairs.filter((x) => x.to_tool === tool);
  const after = data.pairs.filter((x) => x.from_tool === tool);
  const reg = data.regression;
  return (
    <Frame
      {...frameFacts(props, data)}
      title={`${visibleName(tool)} · ${visibleName(projectName)} · MCPulse`}
      heading={
        <>
          <div class="crumbs"><a href={pageHref("/", q)}>Overview</a> / tool</div>
          <span class="mono" style="font-size:20px" data-tool-name><Name text={tool} wide /></span> {r ? <ToolStatus row={r} /> : null}
        </>
      }
      path="/tool"
      hidden={hidden}
    >
      {!r ? <div class="error">This tool has no calls in this range and is not registered.</div> : null}
      <div class="cards">
        <Card id="calls" label="Calls" value={formatInt(r?.calls ?? 0)} raw={r?.calls ?? 0}
          delta={formatDelta(r?.calls ?? 0, p.calls, { relative: true, higherIsBetter: true })} sub={r?.not_measurable ? `retries not measurable: ${NOT_MEASURABLE_WITHOUT_ARGS_WHY}` : r ? <RetriesWhy facts={firstCallFacts(r)} /> : countOf(0, "retry", "retries")} />
        <Card id="first_call_rate" label="First-call success" value={measured(r, "first_call_rate", formatRate(r?.first_call_rate ?? null))} raw={r?.first_call_rate ?? null}
          delta={formatDelta(r?.first_call_rate ?? null, p.first_call_rate, { relative: false, higherIsBetter: true })}
          sub={r?.not_measurable ? NOT_MEASURABLE_WITHOUT_ARGS_WHY : r ? <FirstCallWhy facts={firstCallFacts(r)} /> : "0 of 0 first calls"} />
        <Card id="error_rate" label="Error rate" value={formatRate(r?.error_rate ?? null)} raw={r?.error_rate ?? null}
          delta={formatDelta(r?.error_rate ?? null, p.error_rate, { relative: false, higherIsBetter: false })} />
        <Card id="empty_rate" label="Empty results" value={formatRate(r?.empty_rate ?? null)} raw={r?.empty_rate ?? null}
          delta={formatDelta(r?.empty_rate ?? null, p.empty_rate, { relative: false, higherIsBetter: false })} />
        <Card id="p50" label="p50" value={formatMs(r?.duration_ms.p50 ?? null)} raw={r?.duration_ms.p50 ?? null} />
        <Card id="p95" label="p95" value={formatMs(r?.duration_ms.p95 ?? null)} raw={r?.duration_ms.p95 ?? null}
          delta={formatDelta(r?.duration_ms.p95 ?? null, p.duration_ms.p95, { relative: true, higherIsBetter: false })} />
        <Card id="p99" label="p99" value={formatMs(r?.duration_ms.p99 ?? null)} raw={r?.duration_ms.p99 ?? null} />
        <Card id="response_avg" label="Avg response" value={formatChars(r?.response_bytes.avg ?? null)} raw={r?.response_bytes.avg ?? null}
          sub={r?.response_bytes.avg != null ? `≈ ${formatTokens(r.response_bytes.avg / UTF16_UNITS_PER_TOKEN)} tokens per call` : "characters of JSON"} />
      </div>

      <div class="grid2">
        <section class="panel">
          <h2>Latency <small>histogram, logarithmic time axis</small></h2>
          <LatencyHistogram histogram={data.histogram} percentiles={r?.duration_ms ?? { p50: null, p95: null, p99: null }} />
        </section>
        <section class="panel">
          <h2>Outcomes</h2>
          <OutcomeBar counts={{ ok: r?.ok ?? 0, empty: r?.empty ?? 0, bad_args: r?.bad_args ?? 0, tool_error: r?.tool_error ?? 0, crashed: r?.crashed ?? 0, calls: r?.calls ?? 0 }} />
          <h2 style="margin-top:18px">Schema cost</h2>
          <dl class="facts" id="schema-cost">
            <dt>Schema size</dt><dd>{r?.schema_bytes == null ? "not registered" : `${formatInt(r.schema_bytes)} chars`}</dd>
            <dt>Tokens every session</dt><dd>{formatTokens(schemaTokens)}</dd>
            <dt>Cost per 1,000 sessions</dt><dd>{schemaTokens === null ? "—" : formatUsd((schemaTokens * pricePerMillion * 1000) / 1_000_000)}</dd>
            <dt>Share of session schema</dt>
            <dd>{schemaTokens !== null && data.sessions.schema_tokens_per_session ? formatRate(schemaTokens / data.sessions.schema_tokens_per_session) : "—"}</dd>
          </dl>
        </section>
      </div>

      <section class="panel">
        <h2>First-call success and empties over time <ChartNote chart={data.chart} range={range} /></h2>
        <RateChart
          width={1200}
          labels={labels}
          series={[
            { name: "first-call success", color: "#4f46e5", values: data.chart.series.map((b) => b.first_call_rate) },
            { name: "empty rate", color: "#f79009", values: data.chart.series.map((b) => b.empty_rate) },
          ]}
        />
        <div class="legend">
          <span><i style="background:#4f46e5" />first-call success</span>
          <span><i style="background:#f79009" />empty rate</span>
        </div>
        <CallsChart points={timePoints(data.chart.series, data.chart.grain)} height={150} width={1200} />
      </section>

      <div class="grid2 even">
        <section class="panel" id="tool-clients">
          <h2>Clients <small>all clients, this tool · most calls first, {PAGE_NOTE}</small></h2>
          <SearchBox path="/tool" query={searched} hidden={hidden} what="clients" />
          {data.clientRows.rows.length === 0 ? <p class="empty-state">No calls in this range, or no client matches the search.</p> : (
            <div class="scroll">
            <table>
              <thead><tr><th>Client</th><th class="n">Calls</th><th class="n">First-call ok</th><th class="n">Errors</th><th class="n">Empty</th><th class="n">p95</th><th class="n" title={KNOWN_SESSION_HINT}>Known session</th></tr></thead>
              <tbody>
                {data.clientRows.rows.map((c) => (
                  <tr data-client={c.client_name}>
                    <td><a href={toolHref(tool, { ...q, client: c.client_name })}><Name text={c.client_name} /></a> <ExploreLink filters={{ tool, client: c.client_name }} by="client_version" query={q} /></td>
                    <td class="n" data-value={String(c.calls)}>{formatInt(c.calls)}</td>
                    <td class={`n ${firstCallClass(c.first_call_rate)}`} title={firstCallHint(c)}>{measured(c, "first_call_rate", formatRate(c.first_call_rate))}</td>
                    <td class="n">{formatRate(c.error_rate)}</td>
                    <td class="n">{formatRate(c.empty_rate)}</td>
                    <td class="n">{formatMs(c.duration_ms.p95)}</td>
                    <td class="n" data-known-session title={KNOWN_SESSION_HINT}>{formatRate(knownSessionShare(c))}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            </div>
          )}
          <Pager list={data.clientRows} path="/tool" query={searched} hidden={hidden} />
        </section>
        <section class="panel" id="tool-pairs">
          <h2>Pairs</h2>
          {before.length === 0 && after.length === 0 ? <p class="empty-state">No pairs with this tool in this range.</p> : (
            <div class="scroll">
            <table>
              <thead><tr><th>Called before</th><th class="n">Times</th><th>Called after</th><th class="n">Times</th></tr></thead>
              <tbody>
                {Array.from({ length: Math.min(8, Math.max(before.length, after.length)) }, (_, i) => (
                  <tr>
                    <td class="tool">{before[i] ? <a href={toolHref(before[i].from_tool, q)}><Name text={before[i].from_tool} /></a> : ""}</td>
                    <td class="n">{before[i] ? formatInt(before[i].count) : ""}</td>
                    <td class="tool">{after[i] ? <a href={toolHref(after[i].to_tool, q)}><Name text={after[i].to_tool} /></a> : ""}</td>
                    <td class="n">{after[i] ? formatInt(after[i].count) : ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            </div>
          )}
        </section>
      </div>

      <div class="grid2 even">
        <section class="panel" id="schema-regression">
          <h2>Schema change <small>7 days before vs after the latest schema_hash change</small></h2>
          {!reg ? <p class="empty-state">This tool's schema has not changed.</p> : (
            <>
              <p>
                {reg.regressed ? <span class="pill high">regressed</span> : <span class="pill low">no regression</span>}{" "}
                <span class="mono">{reg.previous_schema_hash}</span> → <span class="mono">{reg.schema_hash}</span> on {reg.changed_at.slice(0, 16).replace("T", " ")} UTC
              </p>
              <div class="scroll">
              <table>
                <thead><tr><th></th><th class="n">Calls</th><th class="n">Bad-args rate</th><th class="n">First-call success</th></tr></thead>
                <tbody>
                  <tr><td>Before</td><td class="n">{formatInt(reg.before.calls)}</td><td class="n">{formatRate(reg.before.bad_args_rate)}</td><td class="n">{formatRate(reg.before.first_call_rate)}</td></tr>
                  <tr><td>After</td><td class="n">{formatInt(reg.after.calls)}</td><td class={`n ${badRateClass(reg.after.bad_args_rate, 0.05)}`}>{formatRate(reg.after.bad_args_rate)}</td><td class={`n ${firstCallClass(reg.after.first_call_rate)}`}>{formatRate(reg.after.first_call_rate)}</td></tr>
                </tbody>
              </table>
              </div>
            </>
          )}
        </section>
        <section class="panel" id="tool-descriptions">
          <h2>Description and agreement</h2>
          <Descriptions data={data.descriptions} query={q} />
          <Agreement data={data.agreement} query={q} />
        </section>
      </div>
    </Frame>
  );
};
