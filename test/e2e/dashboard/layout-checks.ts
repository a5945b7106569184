// What "comfortable on a phone and on a desktop" means, measured in the browser on any dashboard
// page: the page never scrolls sideways (wide tables scroll inside their card), the header fits
// with "Sign out" in it, and chart labels are readable.
import type { Page } from "playwright-core";

/** The widths every page is checked at: a phone (iPhone 12–15) and a laptop. */
export const WIDTHS = [390, 1280] as const;
/** Smallest chart label, in CSS pixels as rendered. */
export const MIN_CHART_LABEL_PX = 10;

export type LayoutReport = {
  scrollWidth: number;
  innerWidth: number;
  /** Elements sticking out past the right edge of the screen (none when the page fits). */
  overflowing: string[];
  /** The header's height, and whether "Sign out" sits inside it and on screen (null: no header). */
  header: { height: number; signOutInside: boolean } | null;
  /** The smallest rendered font size of any visible chart label (null: no chart on the page). */
  minChartLabelPx: number | null;
};

/**
 * Runs in the page (a string: this project's TypeScript has no DOM types). Elements whose box passes
 * the screen's right edge count unless a scrolling ancestor clips them.
 */
const MEASURE = `(() => {
  const innerWidth = window.innerWidth;
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== "hidden";
  };
  const overflowing = [];
  for (const el of Array.from(document.body.querySelectorAll("*"))) {
    if (!visible(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.right <= innerWidth + 0.5) continue;
    let clipped = false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === "auto" || ox === "scroll" || ox === "hidden" || ox === "clip") { clipped = true; break; }
    }
    if (!clipped) overflowing.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + "." + String(el.className).replace(/\\s+/g, ".") + " → " + Math.round(r.right));
  }
  const header = document.querySelector("header.top");
  let headerReport = null;
  if (header) {
    const h = header.getBoundingClientRect();
    const button = header.querySelector('form[action="/signout"] button');
    const b = button ? button.getBoundingClientRect() : null;
    headerReport = {
      height: Math.round(h.height),
      signOutInside: !!b && b.width > 0 && b.left >= h.left && b.right <= Math.min(h.right, innerWidth) && b.top >= h.top && b.bottom <= h.bottom,
    };
  }
  let minChartLabelPx = null;
  for (const t of Array.from(document.querySelectorAll("svg[data-chart] text"))) {
    if (!visible(t)) continue;
    const ctm = t.getScreenCTM();
    if (!ctm) continue;
    const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(ctm.a, ctm.b);
    minChartLabelPx = minChartLabelPx === null ? px : Math.min(minChartLabelPx, px);
  }
  return { scrollWidth: document.documentElement.scrollWidth, innerWidth, overflowing: overflowing.slice(0, 10), header: headerReport, minChartLabelPx };
})()`;

/** Measures the page as it is rendered now. */
export function measureLayout(page: Page): Promise<LayoutReport> {
  return page.evaluate(MEASURE) as Promise<LayoutReport>;
}
