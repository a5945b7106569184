// Number formatting for the dashboard: readable text beside the exact API value (kept in
// data-value attributes, so a test can check the page against the JSON answer).

export function formatInt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/**
 * A count with its noun, singular for exactly one as it is shown: "1 retry", "2 retries",
 * "0 empty answers" (the count rounds as formatInt does, so 0.6 reads "1 …", singular).
 */
export function countOf(n: number, one: string, many = `${one}s`): string {
  return `${formatInt(n)} ${Math.round(n) === 1 ? one : many}`;
}


/** Large counts shortened: 1,234 → 1,234; 12,345 → 12.3k; 1,234,567 → 1.23M. */
export function formatCompact(n: number): string {
  if (Math.abs(n) < 10_000) return formatInt(n);
  if (Math.abs(n) < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

/** What a figure the calls cannot give shows instead of a number (SPEC §10): never 0 or 100 %. */
export const NOT_MEASURABLE = "not measurable";

/** Why, under a card that shows NOT_MEASURABLE for first-call success or retries (docs/otlp.md). */
export const NOT_MEASURABLE_WITHOUT_ARGS_WHY = "some calls came from OpenTelemetry spans without their arguments: a retry is a call with different arguments, so it cannot be told";

/** `text`, or NOT_MEASURABLE when the answer lists `figure` in its `not_measurable`. */
export function measured(figures: { not_measurable?: readonly string[] } | null | undefined, figure: string, text: string): string {
  return figures?.not_measurable?.includes(figure) ? NOT_MEASURABLE : text;
}

/** A 0–1 rate as a percentage with one decimal; an undefined rate is an em dash. */
export function formatRate(rate: number | null): string {
  return rate === null ? "—" : `${(rate * 100).toFixed(1)}%`;
}

/** A duration; under 1 ms (SDKs send whole milliseconds, so a 0) reads "< 1 ms", never "0 ms". */
export function formatMs(ms: number | null): string {
  if (ms === null) return "—";
  if (ms < 1) return "< 1 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** Response and schema sizes are UTF-16 code units of JSON (SPEC §1.3), shown as "chars". */
export function formatChars(n: number | null): string {
  if (n === null) return "—";
  if (n < 1000) return `${Math.round(n * 10) / 10}`;
  if (n < 1_000_000) return `${(n / 1000).toFixed(1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

export function formatUsd(n: number | null): string {
  if (n === null) return "—";
  if (n === 0) return "$0";
  if (n < 0.01) return `$${n.toFixed(5)}`;
  if (n < 1) return `$${n.toFixed(4)}`;
  return `$${n.toFixed(2)}`;
}

/**
 * Tokens, estimated as UTF-16 units ÷ 4 (SPEC §2.4): whole tokens wherever a page shows one, in one
 * notation, so a figure reads the same in Fix first (whose words round the same way), the cards and
 * the tables.
 */
export function formatTokens(n: number | null): string {
  if (n === null) return "—";
  return formatInt(n);
}

export type Delta = { text: string; tone: "good" | "bad" | "flat" };

/**
 * Change against the previous equal period. `relative`: percent change of a count; otherwise the
 * change of a rate in percentage points. `higherIsBetter` picks the colour.
 */
export function formatDelta(
  current: number | null,
  previous: number | null,
  options: { relative: boolean; higherIsBetter: boolean },
): Delta | null {
  if (current === null || previous === null) return null;
  let change: number;
  let text: string;
  if (options.relative) {
    if (previous === 0) return current === 0 ? { text: "no change", tone: "flat" } : { text: "new", tone: "flat" };
    change = (current - previous) / previous;
    text = `${change >= 0 ? "+" : "−"}${Math.abs(change * 100).toFixed(1)}%`;
  } else {
    change = current - previous;
    text = `${change >= 0 ? "+" : "−"}${Math.abs(change * 100).toFixed(1)} pts`;
  }
  if (Math.abs(change) < 0.0005) return { text: "no change", tone: "flat" };
  const good = change > 0 === options.higherIsBetter;
  return { text, tone: good ? "good" : "bad" };
}
