// Query parameters of the read API and the dashboard (SPEC §3) as Zod schemas. A bad parameter is a
// 400 naming it in our words, never repeating what the request held (SPEC §3).
import { z } from "zod";
import { MAX_CLIENT_NAME_CHARS, MAX_TOOL_NAME_CHARS } from "../../shared/limits.ts";
import { DAY_MS, HOUR_ROWS_KEPT_DAYS, hourRowsHorizonMs } from "../time.ts";
import { apiError, type ApiError } from "../errors.ts";

/** Without `from`/`to`: the last 7 days, today (UTC, by the request time) included (SPEC §3). */
export const DEFAULT_RANGE_DAYS = 7;
/** A year and a day, so a leap year fits. */
export const MAX_RANGE_DAYS = 366;
/** A month of hours is the most a chart can use. */
export const MAX_HOUR_GRAIN_DAYS = 31;

export const GRAINS = ["hour", "day"] as const;
export type Grain = (typeof GRAINS)[number];

/** Inclusive UTC dates `from`..`to` (SPEC §3), with their epoch bounds (`endMs` exclusive). */
export type DateRange = { from: string; to: string; startMs: number; endMs: number; days: number };

export type ReadFilters = { client?: string | undefined; tool?: string | undefined };

export function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function rangeFromDays(fromDayMs: number, toDayMs: number): DateRange {
  return {
    from: isoDate(fromDayMs),
    to: isoDate(toDayMs),
    startMs: fromDayMs,
    endMs: toDayMs + DAY_MS,
    days: Math.round((toDayMs - fromDayMs) / DAY_MS) + 1,
  };
}

export function previousRange(range: DateRange): DateRange {
  return rangeFromDays(range.startMs - range.days * DAY_MS, range.startMs - DAY_MS);
}

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** Hono's validator hands a repeated name over as an array: which of two `client`s would be meant? Refuse it. */
function givenOnce(name: string, otherwise: string) {
  return (issue: { input?: unknown }) => (Array.isArray(issue.input) ? `parameter '${name}' is given more than once` : otherwise);
}

/** Checks chained on it so the OpenAPI document shows them as the parameter's schema. */
function single(name: string) {
  return z.string({ error: givenOnce(name, `'${name}' must be text`) });
}

/**
 * SPEC §3: an unknown name is answered with the allowed names, never the one sent; the message is
 * the schema's own so every validator says the same.
 */
function unknownParameter(issue: z.core.$ZodRawIssue): string | undefined {
  if (issue.code !== "unrecognized_keys") return undefined;
  const shape = issue.inst instanceof z.ZodObject ? (issue.inst.shape as Record<string, unknown>) : {};
  const allowed = Object.keys(shape).filter((k) => k !== "key");
  return `unknown parameter (allowed: ${allowed.join(", ") || "none"})`;
}

export function strictQuery<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, { error: unknownParameter });
}

function calendarDayMs(value: string): number | null {
  if (!DATE_PATTERN.test(value)) return null;
  const ms = Date.UTC(Number(value.slice(0, 4)), Number(value.slice(5, 7)) - 1, Number(value.slice(8, 10)));
  // Date.UTC rolls 2026-02-30 over into March: a date that does not round-trip does not exist.
  return new Date(ms).toISOString().slice(0, 10) === value ? ms : null;
}

function dateParam(name: "from" | "to", description: string) {
  return single(name)
    .regex(DATE_PATTERN, { error: `'${name}' must be a date YYYY-MM-DD`, abort: true })
    .refine((value) => calendarDayMs(value) !== null, { error: `'${name}' is not a calendar date` })
    .transform((value) => calendarDayMs(value) as number)
    .optional()
    .describe(description);
}

/** Never longer than the wire allows (SPEC §1.2), so it can match. */
function nameParam(name: "client" | "tool" | "name", maxChars: number, description: string) {
  return single(name)
    .min(1, { error: `'${name}' must not be empty` })
    .max(maxChars, { error: `'${name}' is longer than ${maxChars} characters` })
    .optional()
    .describe(description);
}

const PARAMS = {
  from: dateParam("from", `first UTC day, inclusive (YYYY-MM-DD); default: ${DEFAULT_RANGE_DAYS - 1} days before \`to\``),
  to: dateParam("to", "last UTC day, inclusive (YYYY-MM-DD); default: today (UTC)"),
  client: nameParam("client", MAX_CLIENT_NAME_CHARS, "only calls from this MCP client (its exact name)"),
  tool: nameParam("tool", MAX_TOOL_NAME_CHARS, "only this tool (its exact name)"),
  grain: z
    .enum(GRAINS, { error: givenOnce("grain", "'grain' must be 'hour' or 'day'") })
    .optional()
    .describe(`bucket size: day (default) or hour (hours: ranges of at most ${MAX_HOUR_GRAIN_DAYS} days, within the last ${HOUR_ROWS_KEPT_DAYS})`),
};

type RangeInput = { from?: number | undefined; to?: number | undefined };

/** Only `from` → up to today; only `to` → the DEFAULT_RANGE_DAYS days ending on `to`. */
function toRange(q: RangeInput, maxDays: number, ctx: z.RefinementCtx): DateRange | undefined {
  const todayMs = Math.floor(Date.now() / DAY_MS) * DAY_MS;
  const toMs = q.to ?? todayMs;
  const fromMs = q.from ?? toMs - (DEFAULT_RANGE_DAYS - 1) * DAY_MS;
  if (fromMs > toMs) {
    ctx.addIssue({ code: "custom", message: "'from' is after 'to'" });
    return undefined;
  }
  const days = (toMs - fromMs) / DAY_MS + 1;
  if (days > maxDays) {
    ctx.addIssue({ code: "custom", message: `the range is longer than ${maxDays} days` });
    return undefined;
  }
  return rangeFromDays(fromMs, toMs);
}

function filtersOf(q: ReadFilters): ReadFilters {
  return { client: q.client, tool: q.tool };
}

function rangedQuery<S extends Partial<Pick<typeof PARAMS, "client" | "tool">>>(filters: S) {
  return strictQuery({ from: PARAMS.from, to: PARAMS.to, ...filters }).transform((q, ctx) => {
    const range = toRange(q as RangeInput, MAX_RANGE_DAYS, ctx);
    return { range: range as DateRange, filters: filtersOf(q as ReadFilters) };
  });
}

export const toolsQuery = rangedQuery({ client: PARAMS.client, tool: PARAMS.tool });
export const clientsQuery = toolsQuery;
export const pairsQuery = toolsQuery;
export const insightsQuery = toolsQuery;
export const sessionsQuery = rangedQuery({ client: PARAMS.client });
export const agreementQuery = rangedQuery({ tool: PARAMS.tool });

export const timeseriesQuery = strictQuery({ from: PARAMS.from, to: PARAMS.to, grain: PARAMS.grain, client: PARAMS.client, tool: PARAMS.tool })
  .transform((q, ctx) => {
    const grain: Grain = q.grain ?? "day";
    const range = toRange(q, grain === "hour" ? MAX_HOUR_GRAIN_DAYS : MAX_RANGE_DAYS, ctx);
    return { range: range as DateRange, grain, filters: filtersOf(q) };
  });

/** Whether the hour rows of every day of `range` are still kept at `nowMs` (SPEC §7). */
export function hoursKept(range: DateRange, nowMs: number): boolean {
  return range.startMs >= hourRowsHorizonMs(nowMs);
}

/**
 * SPEC §7: checked against the request's clock after the schema, so the horizon is the one the fold
 * uses for that day.
 */
export function requireHoursKept(range: DateRange, grain: Grain, nowMs: number): void {
  if (grain !== "hour" || hoursKept(range, nowMs)) return;
  throw apiError(
    "HOURS_NOT_KEPT",
    `hours are kept for the last ${HOUR_ROWS_KEPT_DAYS} days (from ${isoDate(hourRowsHorizonMs(nowMs))}); ` +
      "older hours are folded into their days: ask grain=day, or a 'from' on or after that date",
  );
}

export const descriptionsQuery = strictQuery({ tool: PARAMS.tool }).transform((q) => ({ filters: { tool: q.tool } }));
export const schemaRegressionsQuery = strictQuery({ client: PARAMS.client, tool: PARAMS.tool }).transform((q) => ({ filters: filtersOf(q) }));

/** The dashboard's search box: part of a name, at most as long as the longest name (SPEC §1.2). */
export const MAX_SEARCH_CHARS = MAX_TOOL_NAME_CHARS;
/** 10,000 pages of 100 rows hold any project. */
export const MAX_LIST_PAGE = 10_000;

/**
 * The form's "All clients" sends `client=`, meaning no filter; `key` is the sign-in link's, handled
 * before the page.
 */
const PAGE_PARAMS = {
  from: PARAMS.from,
  to: PARAMS.to,
  client: z.preprocess((value) => (value === "" ? undefined : value), PARAMS.client),
  q: single("q").max(MAX_SEARCH_CHARS, { error: `'q' is longer than ${MAX_SEARCH_CHARS} characters` }).optional(),
  page: single("page")
    .regex(/^[1-9]\d{0,4}$/, { error: "'page' must be a page number", abort: true })
    .transform(Number)
    .pipe(z.number().max(MAX_LIST_PAGE, { error: `'page' is over ${MAX_LIST_PAGE}` }))
    .optional(),
  key: z.unknown().optional(),
};

type PageInput = RangeInput & { client?: string | undefined; q?: string | undefined; page?: number | undefined };

function pageOf(q: PageInput, ctx: z.RefinementCtx) {
  return { range: toRange(q, MAX_RANGE_DAYS, ctx) as DateRange, client: q.client, search: q.q || undefined, page: q.page ?? 1 };
}

export const pageQuery = strictQuery(PAGE_PARAMS).transform(pageOf);

/** The name in the query, so `.` and `..` are names like any other. */
export const toolPageQuery = strictQuery({ ...PAGE_PARAMS, name: nameParam("name", MAX_TOOL_NAME_CHARS, "the tool's exact name").unwrap() })
  .transform((q, ctx) => ({ ...pageOf(q, ctx), tool: q.name }));

export type PageParams = z.output<typeof pageQuery>;


// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

export function badParameter(message: string): ApiError {
  return apiError("BAD_REQUEST", message);
}

/** SPEC §3: our own words only, never the name the request used. */
export function messageOf(error: z.core.$ZodError): string {
  const unknown = error.issues.find((issue) => issue.code === "unrecognized_keys");
  return (unknown ?? error.issues[0])?.message ?? "bad parameter";
}

/**
 * A schema not built by strictQuery still names no unknown parameter: the error map words it the
 * same way.
 */
export function parseQuery<T extends z.ZodType>(schema: T, url: URL): z.output<T> {
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(name);
    query[name] = values.length === 1 ? (values[0] as string) : values;
  }
  const result = schema.safeParse(query, { error: unknownParameter });
  if (!result.success) throw badParameter(messageOf(result.error));
  return result.data;
}
