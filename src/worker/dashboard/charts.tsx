// Inline SVG charts (no chart library, no network): calls over time, rates over time, the latency
// histogram and the outcome split. Every chart scales with its container through its viewBox.
import type { FC } from "hono/jsx";
import { bucketValueMs, type DurationHistogram } from "../histogram.ts";
import type { Percentiles } from "../metrics/counters.ts";
import { formatCompact, formatInt, formatMs, formatRate } from "./format.ts";

const W = 720;
const PAD = { left: 44, right: 12, top: 12, bottom: 26 };

function niceMax(value: number): number {
  if (value <= 0) return 1;
  const exp = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exp >= value) return m * exp;
  return 10 * exp;
}

/** Which of `count` x labels to print so they do not collide (about 8 across). */
function labelEvery(count: number): number {
  return Math.max(1, Math.ceil(count / 8));
}

export type TimePoint = { label: string; title: string; calls: number; errors: number };

/** Calls per bucket, errors stacked in red at the bottom of each bar. */
export const CallsChart: FC<{ points: TimePoint[]; height?: number; width?: number }> = ({ points, height = 190, width = W }) => {
  const h = height;
  const W = width;
  const plotW = W - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  const max = niceMax(Math.max(0, ...points.map((p) => p.calls)));
  const step = plotW / Math.max(1, points.length);
  const barW = Math.max(1, step * 0.72);
  const every = labelEvery(points.length);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  return (
    <svg viewBox={`0 0 ${W} ${h}`} width="100%" role="img" aria-label="Calls over time" data-chart="calls">
      {[0, 0.5, 1].map((f) => (
        <g>
          <line x1={PAD.left} x2={W - PAD.right} y1={y(max * f)} y2={y(max * f)} stroke="#eaecf0" />
          {Number.isInteger(max * f) ? <text x={PAD.left - 6} y={y(max * f) + 4} text-anchor="end">{formatCompact(max * f)}</text> : null}
        </g>
      ))}
      {points.map((p, i) => {
        const x = PAD.left + i * step + (step - barW) / 2;
        return (
          <g>
            <rect x={x} y={y(p.calls)} width={barW} height={Math.max(0, y(0) - y(p.calls))} rx="2" fill="#818cf8">
              <title>{`${p.title}: ${formatInt(p.calls)} calls, ${formatInt(p.errors)} errors`}</title>
            </rect>
            {p.errors > 0 ? <rect x={x} y={y(p.errors)} width={barW} height={Math.max(1, y(0) - y(p.errors))} fill="#f04438" /> : null}
            {i % every === 0 ? (
              <text x={x + barW / 2} y={h - 8} text-anchor="middle">{p.label}</text>
            ) : null}
          </g>
        );
      })}
    </svg>
  );
};

export type RateSeries = { name: string; color: string; values: (number | null)[] };

/** 0–100 % lines; a null (no calls in the bucket) breaks the line. */
export const RateChart: FC<{ labels: string[]; series: RateSeries[]; height?: number; width?: number }> = ({ labels, series, height = 190, width = W }) => {
  const h = height;
  const W = width;
  const plotW = W - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom;
  const n = labels.length;
  const x = (i: number) => PAD.left + (n <= 1 ? plotW / 2 : (i / (n - 1)) * plotW);
  const y = (v: number) => PAD.top + plotH - v * plotH;
  const every = labelEvery(n);
  return (
    <svg viewBox={`0 0 ${W} ${h}`} width="100%" role="img" aria-label="Rates over time" data-chart="rates">
      {[0, 0.25, 0.5, 0.75, 1].map((f) => (
        <g>
          <line x1={PAD.left} x2={W - PAD.right} y1={y(f)} y2={y(f)} stroke="#eaecf0" />
          <text x={PAD.left - 6} y={y(f) + 4} text-anchor="end">{`${f * 100}%`}</text>
        </g>
      ))}
      {labels.map((label, i) =>
        i % every === 0 ? (
          <text x={x(i)} y={h - 8} text-anchor={i === 0 && n > 1 ? "start" : i === n - 1 && n > 1 ? "end" : "middle"}>{label}</text>
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
    </svg>
  );
};

/**
 * The latency histogram on a logarithmic time axis: one bar per non-empty bucket at its reported
 * value, with the p50/p95/p99 markers.
 */
export const LatencyHistogram: FC<{ histogram: DurationHistogram; percentiles: Percentiles }> = ({ histogram, percentiles }) => {
  const h = 220;
  const plotW = W - PAD.left - PAD.right;
  const plotH = h - PAD.top - PAD.bottom - 30;
  const buckets = Object.entries(histogram)
    .map(([b, n]) => ({ ms: bucketValueMs(Number(b)), n }))
    .filter((b) => b.n > 0)
    .sort((a, b) => a.ms - b.ms);
  if (buckets.length === 0) return <p class="empty-state">No calls in this range.</p>;
  const lo = Math.max(1, Math.min(...buckets.map((b) => b.ms)));
  const hi = Math.max(lo * 10, ...buckets.map((b) => b.ms));
  const decadeLo = 10 ** Math.floor(Math.log10(lo));
  const decadeHi = 10 ** Math.ceil(Math.log10(hi + 1));
  const lx = (ms: number) => PAD.left + ((Math.log10(Math.max(ms, decadeLo)) - Math.log10(decadeLo)) / (Math.log10(decadeHi) - Math.log10(decadeLo))) * plotW;
  const max = niceMax(Math.max(...buckets.map((b) => b.n)));
  const y = (v: number) => PAD.top + 30 + plotH - (v / max) * plotH;
  const ticks: number[] = [];
  for (let t = decadeLo; t <= decadeHi; t *= 10) ticks.push(t);
  const markers: [string, number | null, string][] = [
    ["p50", percentiles.p50, "#12b76a"],
    ["p95", percentiles.p95, "#f79009"],
    ["p99", percentiles.p99, "#f04438"],
  ];
  return (
    <svg viewBox={`0 0 ${W} ${h}`} width="100%" role="img" aria-label="Latency histogram" data-chart="latency">
      {[0, 0.5, 1].map((f) => (
        <g>
          <line x1={PAD.left} x2={W - PAD.right} y1={y(max * f)} y2={y(max * f)} stroke="#eaecf0" />
          {Number.isInteger(max * f) ? <text x={PAD.left - 6} y={y(max * f) + 4} text-anchor="end">{formatCompact(max * f)}</text> : null}
        </g>
      ))}
      {ticks.map((t, i) => (
        <text x={lx(t)} y={h - 8} text-anchor={i === ticks.length - 1 ? "end" : "middle"}>{formatMs(t)}</text>
      ))}
      {buckets.map((b) => (
        <rect x={lx(b.ms) - 2} y={y(b.n)} width="4" height={Math.max(1, y(0) - y(b.n))} fill="#818cf8">
          <title>{`≈ ${formatMs(b.ms)}: ${formatInt(b.n)} calls`}</title>
        </rect>
      ))}
      {markers.map(([name, ms, color], i) => {
        if (ms === null) return null;
        // Labels sit on three rows so close percentiles do not overprint; near the right edge they
        // extend to the left of their line.
        const x = lx(ms);
        const right = x > W - 120;
        return (
          <g>
            <line x1={x} x2={x} y1={PAD.top + 2 + i * 12} y2={y(0)} stroke={color} stroke-width="1.5" stroke-dasharray="4 3" />
            <text x={right ? x - 4 : x + 4} y={PAD.top + 8 + i * 12} text-anchor={right ? "end" : "start"} style={`fill:${color};font-weight:600`}>
              {`${name} ${formatMs(ms)}`}
            </text>
          </g>
        );
      })}
    </svg>
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
