// Charts that say something: a range whose calls fall on one or two days is charted per hour over
// those days (not one bar and a dot at the edge), durations under 1 ms are shown as "< 1 ms" in
// their own slot, percentile labels never overprint, and each chart has a phone drawing.
import { describe, expect, it } from "vitest";
import { NARROW, WIDE, placeLabels } from "../../src/worker/dashboard/charts.tsx";
import { callsSpan } from "../../src/worker/metrics/page-data.ts";
import { pageHtml } from "./helpers/pages.ts";
import { createProject } from "./helpers/projects.ts";
import { dayMs, histogramOf, seedHour } from "./metrics/seed.ts";

const page = pageHtml;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The `<svg>` of one chart drawing. */
function svgOf(html: string, chart: string, variant: "wide" | "narrow"): string {
  const m = html.match(new RegExp(`<svg[^>]*data-chart="${chart}" data-variant="${variant}"[\\s\\S]*?</svg>`));
  expect(m, `${chart} ${variant}`).not.toBeNull();
  return m![0];
}
const bars = (svg: string) => (svg.match(/<rect [^>]*fill="#818cf8"/g) ?? []).length;
const grainOf = (html: string) => html.match(/data-chart-grain="(\w+)" data-chart-from="([\d-]+)" data-chart-to="([\d-]+)"/)!.slice(1);

describe("time charts", () => {
  it("chart a week with calls on one day per hour over that day, and say so", async () => {
    const p = await createProject("one day");
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-05") + 9 * HOUR, tool: "t", client: "c", counters: { calls: 5, ok: 5, first_call_attempts: 5, first_call_ok: 5 } });
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-05") + 15 * HOUR, tool: "t", client: "c", counters: { calls: 3, ok: 2, bad_args: 1, first_call_attempts: 3, first_call_ok: 2 } });
    const html = await page("/?from=2026-11-01&to=2026-11-07", p.read_key);
    expect(grainOf(html)).toEqual(["hour", "2026-11-05", "2026-11-05"]);
    expect(html).toContain("only Nov 5 had calls in this range");
    const wide = svgOf(html, "calls", "wide");
    expect(bars(wide)).toBe(24);
    expect(wide).toContain("2026-11-05 09:00 UTC: 5 calls, 0 errors");
    expect(wide).toContain(">Nov 5</text>"); // the day's first hour names the day
    const tool = await page("/tool?name=t&from=2026-11-01&to=2026-11-07", p.read_key);
    expect(grainOf(tool)).toEqual(["hour", "2026-11-05", "2026-11-05"]);
    // Two hours with calls, two lines (first-call success, empty rate): four points, not one at the edge.
    expect((svgOf(tool, "rates", "wide").match(/<circle/g) ?? []).length).toBe(4);
  });

  it("keep days when the calls spread over more than two days, and hours for a range of two days", async () => {
    const p = await createProject("spread");
    for (const d of ["2026-11-02", "2026-11-04"]) {
      await seedHour({ projectId: p.project_id, hourMs: dayMs(d) + 9 * HOUR, tool: "t", client: "c", counters: { calls: 2, ok: 2, first_call_attempts: 2, first_call_ok: 2 } });
    }
    const week = await page("/?from=2026-11-01&to=2026-11-07", p.read_key);
    expect(grainOf(week)).toEqual(["day", "2026-11-01", "2026-11-07"]);
    expect(bars(svgOf(week, "calls", "wide"))).toBe(7);
    expect(week).not.toContain("had calls in this range");
    const twoDays = await page("/?from=2026-11-03&to=2026-11-04", p.read_key);
    expect(grainOf(twoDays)).toEqual(["hour", "2026-11-03", "2026-11-04"]);
  });

  it("find the span of calls: at most two days, else none", () => {
    const bucket = (day: number, calls: number) => ({ start: new Date(dayMs("2026-11-01") + day * DAY).toISOString(), calls }) as Parameters<typeof callsSpan>[0][number];
    expect(callsSpan([bucket(0, 0), bucket(1, 3), bucket(2, 0)])).toMatchObject({ from: "2026-11-02", to: "2026-11-02", days: 1 });
    expect(callsSpan([bucket(0, 1), bucket(1, 3), bucket(2, 0)])).toMatchObject({ from: "2026-11-01", to: "2026-11-02", days: 2 });
    expect(callsSpan([bucket(0, 1), bucket(1, 0), bucket(2, 1)])).toBeNull();
    expect(callsSpan([bucket(0, 0), bucket(1, 0)])).toBeNull();
  });

  it("draw every chart twice, for a desktop column and for a phone, with readable label sizes", async () => {
    const p = await createProject("drawings");
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-05") + 9 * HOUR, tool: "t", client: "c", counters: { calls: 5, ok: 5, first_call_attempts: 5, first_call_ok: 5 } });
    const html = await page("/tool?name=t&from=2026-11-05&to=2026-11-05", p.read_key);
    for (const chart of ["calls", "rates", "latency"]) {
      expect(svgOf(html, chart, "narrow")).toContain(`viewBox="0 0 ${NARROW.width} `);
      expect(svgOf(html, chart, "narrow")).toContain(`font-size="${NARROW.font}"`);
      expect(svgOf(html, chart, "wide")).toContain(`font-size="${WIDE.font}"`);
    }
  });
});

describe("the latency histogram", () => {
  it("shows durations under 1 ms as such, in a slot of their own, and never draws them at 1 ms", async () => {
    const p = await createProject("sub-ms");
    await seedHour({ projectId: p.project_id, hourMs: dayMs("2026-11-05") + 9 * HOUR, tool: "fast", client: "c", counters: { calls: 100, ok: 100, first_call_attempts: 100, first_call_ok: 100 }, histogram: histogramOf([...Array(90).fill(0), ...Array(9).fill(1), 40]) });
    const html = await page("/tool?name=fast&from=2026-11-05&to=2026-11-05", p.read_key);
    expect(html).toMatch(/data-card="p50" data-value="0">\s*<div class="label">p50<\/div>\s*<div class="value">&lt; 1 ms/);
    const svg = svgOf(html, "latency", "wide");
    expect(svg).toContain("data-sub-ms");
    expect(svg).toContain("&lt; 1 ms: 90 calls");
    expect(svg).toContain("≈ 1 ms: 9 calls");
    expect(svg).toContain(">p50 &lt; 1 ms</text>");
    // The sub-millisecond bar and the 1 ms bar stand apart.
    const xOf = (title: string) => Number(svg.match(new RegExp(`<rect x="([\\d.]+)"[^>]*><title>${title}`))![1]);
    expect(xOf("≈ 1 ms") - xOf("&lt; 1 ms")).toBeGreaterThan(20);
  });

  it("places percentile labels so none overprints another, at the right edge too", () => {
    for (const font of [WIDE.font, NARROW.font]) {
      for (const gap of [0, 3, 10, 40]) {
        const right = 700;
        const placed = placeLabels(
          [
            { name: "p50", ms: 120, x: right - 200, color: "" },
            { name: "p95", ms: 1800, x: right - 20 - gap, color: "" },
            { name: "p99", ms: 2100, x: right - 20, color: "" },
          ],
          font,
          right,
        );
        for (const a of placed) {
          expect(a.right).toBeLessThanOrEqual(right);
          for (const b of placed) if (a !== b && a.row === b.row) expect(a.right <= b.left || b.right <= a.left, `${a.name}/${b.name} gap ${gap}`).toBe(true);
        }
        const p95 = placed.find((l) => l.name === "p95")!;
        const p99 = placed.find((l) => l.name === "p99")!;
        expect(p95.row).not.toBe(p99.row);
      }
    }
    // Far apart, they share a row.
    const apart = placeLabels([{ name: "p50", ms: 5, x: 50, color: "" }, { name: "p95", ms: 900, x: 500, color: "" }], 11, 700);
    expect(apart.map((l) => l.row)).toEqual([0, 0]);
  });
});
