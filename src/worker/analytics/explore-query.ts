// Explore's typed query (SPEC §8), parsed once by Zod from fixed lists; nothing downstream sees the
// request's raw text. Errors list the allowed values, never the input (SPEC §3).
import { z } from "zod";
import { CALL_OUTCOMES } from "../../shared/call.ts";
import { HASH_PATTERN } from "../../shared/fields.ts";
import {
  MAX_CLIENT_NAME_CHARS,
  MAX_CLIENT_VERSION_CHARS,
  MAX_PROTOCOL_VERSION_CHARS,
  MAX_SERVER_VERSION_CHARS,
  MAX_SESSION_ID_CHARS,
  MAX_TOOL_NAME_CHARS,
} from "../../shared/limits.ts";
import { TRANSPORTS } from "../../shared/startup.ts";
import { CALLS_DATASET, SESSION_KINDS, type BlobName } from "./calls-dataset.ts";

const DAY_MS = 86_400_000;

/** AE keeps three months: a range starting further back is answered from D1's day rows, or 400. */
export const EXPLORE_RETENTION_DAYS = 90;
/** The longest range at all (rollups past 90 days): a year and a day, as the read API. */
export const EXPLORE_MAX_RANGE_DAYS = 366;
/** Without `from`: the last 7 days up to the request's time. */
export const EXPLORE_DEFAULT_RANGE_DAYS = 7;
/** Groups in an answer, largest first; the rest summed as `(other)`. */
export const EXPLORE_MAX_LIMIT = 200;
export const EXPLORE_DEFAULT_LIMIT = 50;
/** `by` names at most two dimensions. */
export const EXPLORE_MAX_BY = 2;
/** Values one filter may list (any of them matches), and filter values in all. */
export const EXPLORE_MAX_FILTER_VALUES = 20;
export const EXPLORE_MAX_FILTER_VALUES_TOTAL = 50;
/** `grain=hour` buckets at most this many days (744 hours), as the read API's timeseries. */
export const EXPLORE_MAX_HOUR_GRAIN_DAYS = 31;

/** Country codes and colo names are short (ISO 3166 alpha-2, IATA codes). */
const MAX_PLACE_CHARS = 8;

const text = (maxChars: number) => z.string().min(1).max(maxChars);

/**
 * Every dimension Explore can break down or filter by: its column (from the one layout map) and
 * what a filter value must be — a value ingest could have stored, so anything else cannot match
 * and is refused before any SQL exists.
 */
export const DIMENSIONS = {
  tool: { column: "tool_name", value: text(MAX_TOOL_NAME_CHARS) },
  client: { column: "client_name", value: text(MAX_CLIENT_NAME_CHARS) },
  client_version: { column: "client_version", value: text(MAX_CLIENT_VERSION_CHARS) },
  outcome: { column: "outcome", value: z.enum(CALL_OUTCOMES) },
  empty: { column: "empty", value: z.enum(["0", "1"]) },
  session_kind: { column: "session_kind", value: z.enum(SESSION_KINDS) },
  transport: { column: "transport", value: z.enum(TRANSPORTS) },
  protocol_version: { column: "protocol_version", value: text(MAX_PROTOCOL_VERSION_CHARS) },
  server_version: { column: "server_version", value: text(MAX_SERVER_VERSION_CHARS) },
  country: { column: "country", value: text(MAX_PLACE_CHARS) },
  colo: { column: "colo", value: text(MAX_PLACE_CHARS) },
  args_hash: { column: "args_hash", value: z.string().regex(HASH_PATTERN) },
  session_id: { column: "session_id", value: z.string().max(MAX_SESSION_ID_CHARS) },
} as const satisfies Record<string, { column: BlobName; value: z.ZodType<string> }>;

export type Dimension = keyof typeof DIMENSIONS;
export const DIMENSION_NAMES = Object.keys(DIMENSIONS) as Dimension[];

/** The measures of SPEC §8, in the order an answer lists them. */
export const MEASURES = [
  "calls",
  "errors",
  "error_rate",
  "bad_args",
  "tool_errors",
  "crashes",
  "empty_rate",
  "p50",
  "p95",
  "p99",
  "mean_ms",
  "response_bytes",
  "distinct_args",
  "distinct_sessions",
] as const;
export type Measure = (typeof MEASURES)[number];

export const GRAINS = ["none", "hour", "day"] as const;
export type ExploreGrain = (typeof GRAINS)[number];

export type ExploreQuery = {
  /** Distinct, in the order of MEASURES. */
  measures: Measure[];
  /** At most two, distinct, in the order asked. */
  by: Dimension[];
  /** Per dimension, the values any of which matches; dimensions are ANDed. */
  filters: Partial<Record<Dimension, string[]>>;
  /** `started_at` range, epoch ms, end exclusive. */
  startMs: number;
  endMs: number;
  grain: ExploreGrain;
  limit: number;
};

/** The parameter names Explore accepts, as a 400 lists them. */
export const EXPLORE_PARAMETERS = ["measure", "by", "from", "to", "grain", "limit", ...DIMENSION_NAMES.map((d) => `filter[${d}]`)];

const CONTROL = /[\u0000-\u001f\u007f]/u;
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A parameter's values: Hono hands a repeated name over as an array, a single one as a string. */
const values = z.union([z.string(), z.array(z.string())]).transform((v) => (Array.isArray(v) ? v : [v]));

/** Comma-separated and/or repeated list values (`measure=calls,p95&measure=errors`). */
function listOf(raw: string[]): string[] {
  return raw.flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== "");
}

function oneOf<T extends string>(name: string, allowed: readonly T[]) {
  return (value: string, ctx: z.RefinementCtx): value is T => {
    if ((allowed as readonly string[]).includes(value)) return true;
    ctx.addIssue({ code: "custom", message: `'${name}' must be among: ${allowed.join(", ")}` });
    return false;
  };
}

function single(name: string, raw: string[] | undefined, ctx: z.RefinementCtx): string | undefined {
  if (raw === undefined) return undefined;
  if (raw.length !== 1) {
    ctx.addIssue({ code: "custom", message: `parameter '${name}' is given more than once` });
    return undefined;
  }
  return raw[0];
}

/** A calendar date (`YYYY-MM-DD`, UTC) or an ISO instant, as epoch ms; null when it is neither. */
function timeParam(value: string, endOfDay: boolean): number | null {
  if (DATE.test(value)) {
    const ms = Date.parse(`${value}T00:00:00Z`);
    if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== value) return null;
    return endOfDay ? ms + DAY_MS : ms;
  }
  if (!INSTANT.test(value)) return null;
  const ms = Date.parse(value);
  // Date.parse rolls 2026-02-30T… over into March; a date part that does not exist is refused.
  if (!Number.isFinite(ms)) return null;
  const day = Date.parse(`${value.slice(0, 10)}T00:00:00Z`);
  if (!Number.isFinite(day) || new Date(day).toISOString().slice(0, 10) !== value.slice(0, 10)) return null;
  return ms;
}

/** What each parameter means, as the OpenAPI document and docs/read-api.md describe it. */
function parameterDescription(name: string): string {
  const dimension = /^filter\[(.+)\]$/.exec(name)?.[1];
  if (dimension !== undefined) {
    return `only calls whose ${dimension} is one of these values (repeat the parameter for more, at most ${EXPLORE_MAX_FILTER_VALUES}; ${EXPLORE_MAX_FILTER_VALUES_TOTAL} in all)`;
  }
  const descriptions: Record<string, string> = {
    measure: `what to compute per group (default calls), repeated or comma-separated; among: ${MEASURES.join(", ")}`,
    by: `up to ${EXPLORE_MAX_BY} dimensions to break down by (default none), repeated or comma-separated; among: ${DIMENSION_NAMES.join(", ")}`,
    from: `start: a UTC date YYYY-MM-DD (inclusive) or an ISO 8601 instant with Z or an offset; default ${EXPLORE_DEFAULT_RANGE_DAYS} days before \`to\``,
    to: "end: a UTC date YYYY-MM-DD (inclusive) or an ISO 8601 instant (exclusive); default now",
    grain: `${GRAINS.join(", ")}: none (default), or a row per hour (at most ${EXPLORE_MAX_HOUR_GRAIN_DAYS} days) or day as well`,
    limit: `groups kept, largest first (default ${EXPLORE_DEFAULT_LIMIT}, at most ${EXPLORE_MAX_LIMIT}); the rest summed as (other)`,
  };
  return descriptions[name] ?? "";
}

const shape: Record<string, z.ZodOptional<typeof values>> = {};
for (const name of EXPLORE_PARAMETERS) shape[name] = values.optional().describe(parameterDescription(name));

/** The schema of `GET /v1/explore`'s query, given the request's clock (defaults and the 90-day edge). */
export function exploreQuerySchema(clock: number | (() => number)) {
  return z.strictObject(shape).transform((q, ctx): ExploreQuery => {
    const nowMs = typeof clock === "number" ? clock : clock();
    const measures = listOf(q.measure ?? ["calls"]);
    const by = listOf(q.by ?? []);
    let ok = true;
    for (const m of measures) ok = oneOf("measure", MEASURES)(m, ctx) && ok;
    for (const d of by) ok = oneOf("by", DIMENSION_NAMES)(d, ctx) && ok;
    if (measures.length === 0) {
      ctx.addIssue({ code: "custom", message: `'measure' must be among: ${MEASURES.join(", ")}` });
      ok = false;
    }
    const byDistinct = [...new Set(by)] as Dimension[];
    if (byDistinct.length > EXPLORE_MAX_BY) {
      ctx.addIssue({ code: "custom", message: `'by' names at most ${EXPLORE_MAX_BY} dimensions` });
      ok = false;
    }

    const grainText = single("grain", q.grain, ctx) ?? "none";
    if (!oneOf("grain", GRAINS)(grainText, ctx)) ok = false;
    const limitText = single("limit", q.limit, ctx);
    let limit = EXPLORE_DEFAULT_LIMIT;
    if (limitText !== undefined) {
      limit = /^[1-9]\d{0,2}$/.test(limitText) ? Number(limitText) : NaN;
      if (!(limit <= EXPLORE_MAX_LIMIT)) {
        ctx.addIssue({ code: "custom", message: `'limit' must be a whole number from 1 to ${EXPLORE_MAX_LIMIT}` });
        ok = false;
      }
    }

    const fromText = single("from", q.from, ctx);
    const toText = single("to", q.to, ctx);
    const endMs = toText === undefined ? nowMs : timeParam(toText, true);
    const startMs = fromText === undefined ? (endMs ?? nowMs) - EXPLORE_DEFAULT_RANGE_DAYS * DAY_MS : timeParam(fromText, false);
    if (startMs === null || endMs === null) {
      ctx.addIssue({ code: "custom", message: "'from' and 'to' must be dates YYYY-MM-DD or ISO 8601 instants with Z or an offset" });
      return z.NEVER;
    }
    if (startMs >= endMs) {
      ctx.addIssue({ code: "custom", message: "'from' must be before 'to'" });
      return z.NEVER;
    }
    if (endMs - startMs > EXPLORE_MAX_RANGE_DAYS * DAY_MS) {
      ctx.addIssue({ code: "custom", message: `the range is longer than ${EXPLORE_MAX_RANGE_DAYS} days` });
      return z.NEVER;
    }
    if (grainText === "hour" && endMs - startMs > EXPLORE_MAX_HOUR_GRAIN_DAYS * DAY_MS) {
      ctx.addIssue({ code: "custom", message: `'grain=hour' covers at most ${EXPLORE_MAX_HOUR_GRAIN_DAYS} days` });
      ok = false;
    }

    const filters: Partial<Record<Dimension, string[]>> = {};
    let total = 0;
    for (const dimension of DIMENSION_NAMES) {
      const raw = q[`filter[${dimension}]`];
      if (raw === undefined) continue;
      const list = [...new Set(raw)];
      total += list.length;
      if (list.length > EXPLORE_MAX_FILTER_VALUES) {
        ctx.addIssue({ code: "custom", message: `'filter[${dimension}]' lists more than ${EXPLORE_MAX_FILTER_VALUES} values` });
        ok = false;
        continue;
      }
      for (const value of list) {
        // Control characters (NUL included) are refused outright: no stored name a filter is
        // meant to match holds one, and they have no business near a SQL literal.
        if (CONTROL.test(value) || !DIMENSIONS[dimension].value.safeParse(value).success) {
          ctx.addIssue({ code: "custom", message: `'filter[${dimension}]' has a value ingest could not have stored (${filterRule(dimension)})` });
          ok = false;
          break;
        }
      }
      filters[dimension] = list;
    }
    if (total > EXPLORE_MAX_FILTER_VALUES_TOTAL) {
      ctx.addIssue({ code: "custom", message: `more than ${EXPLORE_MAX_FILTER_VALUES_TOTAL} filter values in all` });
      ok = false;
    }
    if (!ok) return z.NEVER;
    return {
      measures: MEASURES.filter((m) => measures.includes(m)),
      by: byDistinct,
      filters,
      startMs,
      endMs,
      grain: grainText as ExploreGrain,
      limit,
    };
  });
}

/** What a dimension's filter value must be, in words. */
function filterRule(dimension: Dimension): string {
  const schema = DIMENSIONS[dimension].value;
  if (schema instanceof z.ZodEnum) return `one of: ${(schema.options as string[]).join(", ")}`;
  if (dimension === "args_hash") return "4 to 64 lowercase hex digits";
  const max = schema.maxLength;
  return `up to ${max} characters, no control characters`;
}

export type ExploreParse = { ok: true; query: ExploreQuery } | { ok: false; message: string };

/** Parses a request's query (Hono's `c.req.queries()` shape or single strings) into an ExploreQuery. */
export function parseExploreQuery(params: Record<string, string | string[]>, nowMs: number): ExploreParse {
  const result = exploreQuerySchema(nowMs).safeParse(params);
  if (result.success) return { ok: true, query: result.data };
  return { ok: false, message: exploreMessageOf(result.error) };
}

/** The first problem in our own words; an unknown parameter is answered with the allowed list. */
export function exploreMessageOf(error: z.core.$ZodError): string {
  if (error.issues.some((issue) => issue.code === "unrecognized_keys")) {
    return `unknown parameter (allowed: ${EXPLORE_PARAMETERS.join(", ")})`;
  }
  const issue = error.issues[0];
  if (issue && issue.code !== "custom") return "every parameter must be text";
  return issue?.message ?? "bad parameter";
}

/** Whether a query reaches before AE's retention, seen from `nowMs`. */
export function reachesPastRetention(query: ExploreQuery, nowMs: number): boolean {
  return query.startMs < nowMs - EXPLORE_RETENTION_DAYS * DAY_MS;
}

/** The blob column of a dimension (from the one layout map). */
export function dimensionSlot(dimension: Dimension): string {
  return CALLS_DATASET.blobs[DIMENSIONS[dimension].column];
}
