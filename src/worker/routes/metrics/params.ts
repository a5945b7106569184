// Query parameters of the read API and the dashboard (SPEC §3): inclusive UTC date ranges, the
// client/tool filters and the timeseries grain. Every bad parameter is a 400 {"error"} naming it.
import { HTTPException } from "hono/http-exception";
import { clientNameSchema, MAX_CLIENT_NAME_CHARS, MAX_TOOL_NAME_CHARS, toolNameSchema } from "../../../shared/index.ts";
import { DAY_MS, type Grain } from "../../db/metrics.ts";
import { rangeFromDays, type DateRange, type ReadFilters } from "../../db/metrics-report.ts";

/** Without `from`/`to`: the last 7 days, today (UTC, by the request time) included (SPEC §3). */
export const DEFAULT_RANGE_DAYS = 7;
/** Longest range accepted: a year and a day, so a leap year fits (larger ranges answer 400). */
export const MAX_RANGE_DAYS = 366;
/** `grain=hour` is limited to 31 days (744 buckets): a month of hours is the most a chart can use. */
export const MAX_HOUR_GRAIN_DAYS = 31;
/**
 * Filters longer than the wire caps cannot match anything stored (SPEC §1.2): refuse them. Counted
 * in code points by the wire's own schemas, so every name ingest accepts can be filtered on.
 */
export const MAX_CLIENT_CHARS = MAX_CLIENT_NAME_CHARS;
export const MAX_TOOL_CHARS = MAX_TOOL_NAME_CHARS;
const FILTER_SCHEMAS = {
  client: { schema: clientNameSchema, maxChars: MAX_CLIENT_CHARS },
  tool: { schema: toolNameSchema, maxChars: MAX_TOOL_CHARS },
} as const;

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

export function badParameter(message: string): HTTPException {
  return new HTTPException(400, { message });
}

/**
 * The query as single values, refusing names outside `allowed` (a typo such as `tools=` must not
 * silently widen the answer) and any name given more than once (which of two `client`s is meant?).
 */
export function singleParams(url: URL, allowed: readonly string[]): Map<string, string> {
  const params = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (!allowed.includes(name)) {
      throw badParameter(`unknown parameter '${name.slice(0, 40)}' (allowed: ${allowed.join(", ") || "none"})`);
    }
    if (params.has(name)) throw badParameter(`parameter '${name}' is given more than once`);
    params.set(name, value);
  }
  return params;
}

/** Epoch ms of a `YYYY-MM-DD` UTC date, or a 400 naming the parameter. */
export function parseDate(name: string, value: string): number {
  const match = DATE_PATTERN.exec(value);
  if (!match) throw badParameter(`'${name}' must be a date YYYY-MM-DD`);
  const [, y, m, d] = match;
  const ms = Date.UTC(Number(y), Number(m) - 1, Number(d));
  // Date.UTC rolls 2026-02-30 over into March: a date that does not round-trip does not exist.
  if (new Date(ms).toISOString().slice(0, 10) !== value) throw badParameter(`'${name}' is not a calendar date`);
  return ms;
}

/**
 * `from`/`to`, inclusive UTC dates. Defaults: neither → the last DEFAULT_RANGE_DAYS days ending today;
 * only `from` → up to today; only `to` → the DEFAULT_RANGE_DAYS days ending on `to`.
 */
export function parseRange(params: Map<string, string>, nowMs: number, maxDays = MAX_RANGE_DAYS): DateRange {
  const todayMs = Math.floor(nowMs / DAY_MS) * DAY_MS;
  const fromRaw = params.get("from");
  const toRaw = params.get("to");
  const toMs = toRaw === undefined ? todayMs : parseDate("to", toRaw);
  const fromMs =
    fromRaw === undefined ? toMs - (DEFAULT_RANGE_DAYS - 1) * DAY_MS : parseDate("from", fromRaw);
  if (fromMs > toMs) throw badParameter(`'from' (${fromRaw ?? "default"}) is after 'to' (${toRaw ?? "today"})`);
  const days = (toMs - fromMs) / DAY_MS + 1;
  if (days > maxDays) throw badParameter(`the range is ${days} days; at most ${maxDays} are allowed`);
  return rangeFromDays(fromMs, toMs);
}

function parseName(params: Map<string, string>, name: keyof typeof FILTER_SCHEMAS): string | undefined {
  const value = params.get(name);
  if (value === undefined) return undefined;
  if (value.length === 0) throw badParameter(`'${name}' must not be empty`);
  const { schema, maxChars } = FILTER_SCHEMAS[name];
  if (!schema.safeParse(value).success) throw badParameter(`'${name}' is longer than ${maxChars} characters`);
  return value;
}

export function parseFilters(params: Map<string, string>): ReadFilters {
  return { client: parseName(params, "client"), tool: parseName(params, "tool") };
}

/** `grain=hour|day`, default `day`. */
export function parseGrain(params: Map<string, string>): Grain {
  const grain = params.get("grain") ?? "day";
  if (grain !== "hour" && grain !== "day") throw badParameter(`'grain' must be 'hour' or 'day'`);
  return grain;
}
