// Inline SVG charts (no chart library, no network): calls over time, rates over time, the latency
// histogram and the outcome split. A chart scales with its container through its viewBox, so its
// labels shrink with it: each chart is drawn twice — once for a desktop column, once for a phone's
// (about 340 px) — and the stylesheet shows the one that fits, keeping labels ≥ 10 px on a 390 px
// screen without a script.
import type { Child, FC } from "hono/jsx";
import { bucketValueMs, type DurationHistogram } from "../histogram.ts";
import type { Percentiles } from "../metrics/counters.ts";
import { formatCompact, formatInt, formatMs, formatRate } from "./format.ts";

/** One drawing of a chart: its viewBox width, its label size in viewBox units, how many x labels fit. */
export type ChartFrame = { width: number; font: number; xLabels: number };

/** The desktop drawing (a 720-unit viewBox in a column of 700–800 px: labels of 10–12 px). */
export const WIDE: ChartFrame = { width: 720, font: 11, xLabels: 8 };
/**
 * The phone drawing: a 340-unit viewBox in a card about 340 px wide at 390 px (labels ≈ 12 px); the
 * stylesheet switches to it under 640 px.
 */
export const NARROW: ChartFrame = { width: 340, font: 12, xLabels: 4 };

function padOf(f: ChartFrame) {
  return { left: Math.round(f.font * 4), right: 10, top: Math.round(f.font), bottom: Math.round(f.font * 2.3) };
}

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= value) return m * exp;
  return 10 * exp;
}

/** Which of `count` x labels to print so they do not collide (about `across` of them). */
function labelEvery(count: number, across: number): number {
  return Math.max(1, Math.ceil(count / across));
}

/** A width of `text` in viewBox units at `font` (system-ui digits and letters average ≈ 0.6 em). */
function textWidth(text: string, font: number): number {
  return [...text].length * font * 0.6;
}

/** Both drawings of one chart; the stylesheet shows one (`.chart-wide` / `.chart-narrow`). */
const Responsive: FC<{ draw: (frame: ChartFrame) => Child; wide?: ChartFrame }> = ({ draw, wide = WIDE }) => (
  <div class="chart">
    <div class="chart-wide">{draw(wide)}</div>
    <div class="chart-narrow">{draw(NARROW)}</div>
  </div>
);

/** A chart's <svg>: the frame's viewBox and label size, its accessible name, which chart and which drawing it is. */
const ChartSvg: FC<{ frame: ChartFrame; height: number; label: string; chart: string; children?: Child }> = ({ frame, height, label, chart, children }) => (
  <svg viewBox={`0 0 ${frame.width} ${height}`} width="100%" font-size={frame.font} role="img" aria-label={label} data-chart={chart} data-variant={frame === NARROW ? "narrow" : "wide"}>
    {children}
  </svg>
);

/** Horizontal grid lines across the plot at the values `at`, each labelled left of the axis (unless `label` gives null). */
const Gridlines: FC<{ frame: ChartFrame; at: number[]; y: (v: number) => number; label: (v: number) => string | null }> = ({ frame, at, y, label }) => {
  const PAD = padOf(frame);
  return (
    <>
      {at.map((v) => {
        const text = label(v);
        return (
          <g>
            <line x1={PAD.left} x2={frame.width - PAD.right} y1={y(v)} y2={y(v)} stroke="#eaecf0" />
            {text === null ? null : <text x={PAD.left - 6} y={y(v) + frame.font / 3} text-anchor="end">{text}</text>}
          </g>
        );
      })}
    </>
  );
};

/** Grid lines at 0, half and all of a count axis's `max`; a half that is not a whole count goes unlabelled. */
const CountGridlines: FC<{ frame: ChartFrame; max: number; y: (v: number) => number }> = ({ frame, max, y }) => (
  <Gridlines frame={frame} at={[0, 0.5, 1].map((f) => max * f)} y={y} label={(v) => (Number.isInteger(v) ? formatCompact(v) : null)} />
);

export type TimePoint = { label: string; title: string; calls: number; errors: number };

/** Calls per bucket, errors stacked in red at the bottom of each bar. */
export const CallsChart: FC<{ points: TimePoint[]; height?: number; width?: number }> = ({ points, height = 190, width = WIDE.width }) => (
  <Responsive wide={{ ...WIDE, width }} draw={(f) => <CallsSvg points={points} frame={f} height={f === NARROW ? Math.min(height, 170) : height} />} />
);

const CallsSvg: FC<{ points: TimePoint[]; frame: ChartFrame; height: number }> = ({ points, frame, height: h }) => {
  const W = frame.width;
  const PAD = padOf(frame);
  const plotW = W - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  const max = niceMax(Math.max(0, ...points.map((p) => p.calls)));
  const step = plotW / Math.max(1, points.length);
  const barW = Math.max(1, step * 0.72);
  const every = labelEvery(points.length, frame.xLabels);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  return (
    <ChartSvg frame={frame} height={h} label="Calls over time" chart="calls">
      <CountGridlines frame={frame} max={max} y={y} />
      {points.map((p, i) => {
        const x = PAD.left + i * step + (step - barW) / 2;
        return (
          <g>
            <rect x={x} y={y(p.calls)} width={barW} height={Math.max(0, y(0) - y(p.calls))} rx="2" fill="#818cf8">
              <title>{`${p.title}: ${formatInt(p.calls)} calls, ${formatInt(p.errors)} errors`}</title>
            </rect>
            {p.errors > 0 ? <rect x={x} y={y(p.errors)} width={barW} height={Math.max(1, y(0) - y(p.errors))} fill="#f04438" /> : null}
            {i % every === 0 ? (
              <text x={x + barW / 2} y={h - frame.font * 0.7} text-anchor={i === 0 ? "start" : "middle"}>{p.label}</text>
            ) : null}
          </g>
        );
      })}
    </ChartSvg>
  );
};

export type RateSeries = { name: string; color: string; values: (number | null)[] };

/** 0–100 % lines; a null (no calls in the bucket) breaks the line. */
export const RateChart: FC<{ labels: string[]; series: RateSeries[]; height?: number; width?: number }> = ({ labels, series, height = 190, width = WIDE.width }) => (
  <Responsive wide={{ ...WIDE, width }} draw={(f) => <RateSvg labels={labels} series={series} frame={f} height={f === NARROW ? Math.min(height, 170) : height} />} />
);

const RateSvg: FC<{ labels: string[]; series: RateSeries[]; frame: ChartFrame; height: number }> = ({ labels, series, frame, height: h }) => {
  const W = frame.width;
  const PAD = padOf(frame);
  const plotW = W - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  const n = labels.length;
  const x = (i: number) => PAD.left + (n <= 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v: number) => PAD.top + plotH - v * plotH;
  const every = labelEvery(n, frame.xLabels);
  return (
    <ChartSvg frame={frame} height={h} label="Rates over time" chart="rates">
      <Gridlines frame={frame} at={frame === NARROW ? [0, 0.5, 1] : [0, 0.25, 0.5, 0.75, 1]} y={y} label={(f) => `${f * 100}%`} />
      {labels.map((label, i) =>
        i % every === 0 ? (
          <text x={x(i)} y={h - frame.font * 0.7} text-anchor={i === 0 && n > 1 ? "start" : i === n - 1 && n > 1 ? "end" : "middle"}>{label}</text>
        ) : null,
      )}
      {series.map((s) => {
        const segments: string[] = [];
        let current = "";
        s.values.forEach((v, i) => {
          if (v === null) {
            if (current) segments.push(current);
            current = "";
            return;
          }
          current += `${current ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
        });
        if (current) segments.push(current);
        return (
          <g>
            {segments.map((d) => (
              <path d={d} fill="none" stroke={s.color} stroke-width="2" stroke-linejoin="round" />
            ))}
            {s.values.map((v, i) =>
              v === null ? null : (
                <circle cx={x(i)} cy={y(v)} r="2.6" fill={s.color}>
                  <title>{`${labels[i]}: ${s.name} ${formatRate(v)}`}</title>
                </circle>
              ),
            )}
          </g>
        );
      })}
    </ChartSvg>
  );
};

export type PercentileLabel = { name: string; ms: number; x: number; color: string };
export type PlacedLabel = PercentileLabel & { text: string; anchor: "start" | "end"; left: number; right: number; row: number };

/**
 * Places the percentile labels so that none overprints another: each sits right of its line (left
 * of it near the right edge), on the first row where it overlaps no label already there.
 */
export function placeLabels(labels: readonly PercentileLabel[], font: number, rightEdge: number): PlacedLabel[] {
  const gap = font * 0.5;
  const placed: PlacedLabel[] = [];
  for (const l of [...labels].sort((a, b) => a.x - b.x)) {
    const text = `${l.name} ${formatMs(l.ms)}`;
    const w = textWidth(text, font);
    const end = l.x + 4 + w > rightEdge;
    const left = end ? l.x - 4 - w : l.x + 4;
    const right = left + w;
    let row = 0;
    while (placed.some((p) => p.row === row && left < p.right + gap && p.left < right + gap)) row++;
    placed.push({ ...l, text, anchor: end ? "end" : "start", left, right, row });
  }
  return placed;
}

/**
 * The latency histogram on a logarithmic time axis: one bar per non-empty bucket at its reported
 * value, with the p50/p95/p99 markers. Calls under 1 ms (the 0 ms bucket: SDKs send whole
 * milliseconds) get a slot of their own left of the axis, labelled "< 1 ms" — never drawn at 1 ms.
 */
export const LatencyHistogram: FC<{ histogram: DurationHistogram; percentiles: Percentiles }> = ({ histogram, percentiles }) => {
  const buckets = Object.entries(histogram)
    .map(([b, n]) => ({ ms: bucketValueMs(Number(b)), n }))
    .filter((b) => b.n > 0)
    .sort((a, b) => a.ms - b.ms);
  if (buckets.length === 0) return <p class="empty-state">No calls in this range.</p>;
  return <Responsive draw={(f) => <LatencySvg buckets={buckets} percentiles={percentiles} frame={f} />} />;
};

const LatencySvg: FC<{ buckets: { ms: number; n: number }[]; percentiles: Percentiles; frame: ChartFrame }> = ({ buckets, percentiles, frame }) => {
  const W = frame.width;
  const PAD = padOf(frame);
  const rowH = Math.round(frame.font * 1.35);
  const markers: PercentileLabel[] = [];
  const hasSubMs = buckets.some((b) => b.ms < 1);
  const timed = buckets.filter((b) => b.ms >= 1);
  // The sub-millisecond slot: left of the log axis, as wide as its label.
  const slotW = hasSubMs ? textWidth("< 1 ms", frame.font) + 12 : 0;
  const axisLeft = PAD.left + slotW;
  const plotW = W - axisLeft - PAD.right;
  const lo = timed.length === 0 ? 1 : Math.min(...timed.map((b) => b.ms));
  const hi = Math.max(lo * 10, ...timed.map((b) => b.ms));
  const decadeLo = 10 ** Math.floor(Math.log10(lo));
  const decadeHi = 10 ** Math.ceil(Math.log10(hi + 1));
  const lx = (ms: number) =>
    ms < 1
      ? PAD.left + slotW / 2
      : axisLeft + ((Math.log10(Math.max(ms, decadeLo)) - Math.log10(decadeLo)) / (Math.log10(decadeHi) - Math.log10(decadeLo))) * plotW;
  for (const [name, ms, color] of [
    ["p50", percentiles.p50, "#12b76a"],
    ["p95", percentiles.p95, "#f79009"],
    ["p99", percentiles.p99, "#f04438"],
  ] as const) {
    if (ms !== null) markers.push({ name, ms, x: lx(ms), color });
  }
  const placed = placeLabels(markers, frame.font, W - PAD.right);
  const rows = Math.max(1, ...placed.map((p) => p.row + 1));
  const h = 190 + rows * rowH;
  const top = PAD.top + rows * rowH;
  const plotH = h - top - PAD.bottom;
  const max = niceMax(Math.max(...buckets.map((b) => b.n)));
  const y = (v: number) => top + plotH - (v / max) * plotH;
  const ticks: number[] = [];
  for (let t = decadeLo; t <= decadeHi; t *= 10) ticks.push(t);
  const every = labelEvery(ticks.length, frame.xLabels + 1);
  return (
    <ChartSvg frame={frame} height={h} label="Latency histogram" chart="latency">
      <CountGridlines frame={frame} max={max} y={y} />
      {hasSubMs ? (
        <g data-sub-ms>
          <line x1={axisLeft - 4} x2={axisLeft - 4} y1={top} y2={y(0)} stroke="#d0d5dd" stroke-dasharray="2 3" />
          <text x={PAD.left + slotW / 2} y={h - frame.font * 0.7} text-anchor="middle">{"< 1 ms"}</text>
        </g>
      ) : null}
      {ticks.map((t, i) =>
        i % every === 0 || i === ticks.length - 1 ? (
          <text x={lx(t)} y={h - frame.font * 0.7} text-anchor={i === ticks.length - 1 ? "end" : i === 0 ? "start" : "middle"}>{formatMs(t)}</text>
        ) : null,
      )}
      {buckets.map((b) => (
        <rect x={lx(b.ms) - 2} y={y(b.n)} width="4" height={Math.max(1, y(0) - y(b.n))} fill="#818cf8">
          <title>{`${b.ms < 1 ? "< 1 ms" : `≈ ${formatMs(b.ms)}`}: ${formatInt(b.n)} calls`}</title>
        </rect>
      ))}
      {placed.map((p) => (
        <g data-percentile={p.name}>
          <line x1={p.x} x2={p.x} y1={PAD.top + p.row * rowH + 2} y2={y(0)} stroke={p.color} stroke-width="1.5" stroke-dasharray="4 3" />
          <text x={p.anchor === "end" ? p.x - 4 : p.x + 4} y={PAD.top + p.row * rowH + frame.font * 0.85} text-anchor={p.anchor} style={`fill:${p.color};font-weight:600`}>
            {p.text}
          </text>
        </g>
      ))}
    </ChartSvg>
  );
};

export type OutcomeCounts = { ok: number; empty: number; bad_args: number; tool_error: number; crashed: number; calls: number };

/** ok (non-empty), empty, bad_args, tool_error, crashed as one 100 % bar with a legend. */
export const OutcomeBar: FC<{ counts: OutcomeCounts }> = ({ counts }) => {
  const parts: [string, number, string][] = [
    ["ok", counts.ok - counts.empty, "var(--ok)"],
    ["empty", counts.empty, "var(--empty)"],
    ["bad_args", counts.bad_args, "var(--badargs)"],
    ["tool_error", counts.tool_error, "var(--toolerr)"],
    ["crashed", counts.crashed, "var(--crash)"],
  ];
  if (counts.calls === 0) return <p class="empty-state">No calls in this range.</p>;
  return (
    <div>
      <div class="bar" data-chart="outcomes">
        {parts.map(([name, n, color]) =>
          n > 0 ? <span style={`width:${((n / counts.calls) * 100).toFixed(3)}%;background:${color}`} title={`${name}: ${n}`} /> : null,
        )}
      </div>
      <div class="legend">
        {parts.map(([name, n, color]) => (
          <span data-outcome={name} data-value={String(n)}>
            <i style={`background:${color}`} />
            {name === "ok" ? "ok (with data)" : name} <b>{formatInt(n)}</b> ({formatRate(n / counts.calls)})
          </span>
        ))}
      </div>
    </div>
  );
};

export type MeasureBar = { label: string; title: string; value: number | null };

/**
 * One measure as bars — per time bucket (Explore with a grain) or per group (without one): any
 * scale, its axis in the measure's own format; a null (no calls) leaves a gap.
 */
export const MeasureChart: FC<{ bars: MeasureBar[]; format: (v: number) => string; label: string; height?: number }> = ({ bars, format, label, height = 190 }) => (
  <Responsive draw={(f) => <MeasureSvg bars={bars} format={format} label={label} frame={f} height={f === NARROW ? Math.min(height, 170) : height} />} />
);

const MeasureSvg: FC<{ bars: MeasureBar[]; format: (v: number) => string; label: string; frame: ChartFrame; height: number }> = ({ bars, format, label, frame, height: h }) => {
  const W = frame.width;
  const PAD = padOf(frame);
  const plotW = W - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  const max = niceMax(Math.max(0, ...bars.map((b) => b.value ?? 0)));
  const step = plotW / Math.max(1, bars.length);
  const barW = Math.max(1, step * 0.72);
  const every = labelEvery(bars.length, frame.xLabels);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  return (
    <ChartSvg frame={frame} height={h} label={label} chart="measure">
      <Gridlines frame={frame} at={[0, 0.5, 1].map((f) => max * f)} y={y} label={format} />
      {bars.map((b, i) => {
        const x = PAD.left + i * step + (step - barW) / 2;
        const v = b.value ?? 0;
        return (
          <g>
            {b.value === null ? null : (
              <rect x={x} y={y(v)} width={barW} height={Math.max(0, y(0) - y(v))} rx="2" fill="#818cf8">
                <title>{`${b.title}: ${format(v)}`}</title>
              </rect>
            )}
            {i % every === 0 ? (
              <text x={x + barW / 2} y={h - frame.font * 0.7} text-anchor={i === 0 ? "start" : "middle"}>{[...b.label].length > 14 ? [...b.label].slice(0, 13).join("") + "…" : b.label}</text>
            ) : null}
          </g>
        );
      })}
    </ChartSvg>
  );
};
