// The one builder from an ExploreQuery to SQL (SPEC §8), in the subset AE's SQL API and ClickHouse
// (the local engine) both accept. Identifiers only from fixed lists, literals escaped here; golden
// snapshots in test/worker/analytics/sql/.
import { CALLS_DATASET } from "./calls-dataset.ts";
import { DIMENSIONS, type Dimension, type ExploreQuery, type Measure } from "./explore-query.ts";

const D = CALLS_DATASET.doubles;
const B = CALLS_DATASET.blobs;

/** Every point's weight: AE's own sampling interval times the calls the point stands for. */
const WEIGHT = `_sample_interval * ${D.calls}`;

/** The sums an additive measure is made of, each selected as `sum_<name>`. */
export const SUMS = {
  calls: D.calls,
  ok: D.ok,
  empty: D.empty,
  bad_args: D.bad_args,
  tool_error: D.tool_error,
  crashed: D.crashed,
  duration_ms_sum: D.duration_ms_sum,
  response_bytes_sum: D.response_bytes_sum,
} as const;
export type SumName = keyof typeof SUMS;
export type Sums = Record<SumName, number>;

type Additive = { kind: "additive"; sums: readonly SumName[]; value: (s: Sums) => number | null };
type Direct = { kind: "direct"; sql: string; approximate: boolean };

const rate = (n: number, d: number) => (d > 0 ? Math.round((n / d) * 10_000) / 10_000 : null);
const quantile = (level: number): Direct => ({
  kind: "direct",
  // quantileExactWeighted wants an unsigned whole weight; both factors are whole numbers.
  sql: `quantileExactWeighted(${level})(${D.duration_ms}, toUInt64(${WEIGHT}))`,
  approximate: false,
});

/**
 * How each measure is read. Additive measures are computed from weighted sums after the query —
 * so an `(other)` row can be summed from the rows it replaces; quantiles and distinct counts come
 * straight from the engine (and an `(other)` row cannot carry them).
 */
export const MEASURE_DEFINITIONS: Record<Measure, Additive | Direct> = {
  calls: { kind: "additive", sums: ["calls"], value: (s) => s.calls },
  errors: { kind: "additive", sums: ["bad_args", "tool_error", "crashed"], value: (s) => s.bad_args + s.tool_error + s.crashed },
  error_rate: {
    kind: "additive",
    sums: ["calls", "bad_args", "tool_error", "crashed"],
    value: (s) => rate(s.bad_args + s.tool_error + s.crashed, s.calls),
  },
  bad_args: { kind: "additive", sums: ["bad_args"], value: (s) => s.bad_args },
  tool_errors: { kind: "additive", sums: ["tool_error"], value: (s) => s.tool_error },
  crashes: { kind: "additive", sums: ["crashed"], value: (s) => s.crashed },
  empty_rate: { kind: "additive", sums: ["calls", "empty"], value: (s) => rate(s.empty, s.calls) },
  p50: quantile(0.5),
  p95: quantile(0.95),
  p99: quantile(0.99),
  mean_ms: {
    kind: "additive",
    sums: ["calls", "duration_ms_sum"],
    value: (s) => (s.calls > 0 ? Math.round((s.duration_ms_sum / s.calls) * 10) / 10 : null),
  },
  response_bytes: { kind: "additive", sums: ["response_bytes_sum"], value: (s) => s.response_bytes_sum },
  // Distinct stored values: under sampling, values only on unsampled points are missing.
  distinct_args: { kind: "direct", sql: `count(DISTINCT ${B.args_hash})`, approximate: true },
  distinct_sessions: { kind: "direct", sql: `count(DISTINCT ${B.session_id})`, approximate: true },
};

/** Rows the engine may return for one query: enough for 31 days of hours × a few groups. */
export const MAX_SQL_ROWS = 10_000;

/** Time bucket widths of the grains, in ms of `started_at`. */
export const GRAIN_MS = { hour: 3_600_000, day: 86_400_000 } as const;

/** Where the builder reads from: the dataset's name as the executor's SQL interface names it. */
export type SqlTarget = { projectId: string; table?: string };

/**
 * A string literal in the dialect of ClickHouse and AE: backslashes doubled, quotes doubled
 * (`''` is a quote in both, so the literal ends where it seems to for either parser). Control
 * characters never get here: the query model refuses them, and this refuses them again.
 */
export function sqlString(value: string): string {
  if (/[\u0000-\u001f\u007f]/u.test(value)) throw new Error("control character in a SQL literal");
  return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`;
}

/** A whole number literal; anything else is a programming error, never formatted. */
export function sqlInteger(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error("not a whole number");
  return String(value);
}

const TABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/** The sums a query needs: `calls` always (it orders the groups), plus what its measures read. */
export function sumsOf(query: ExploreQuery): SumName[] {
  const needed = new Set<SumName>(["calls"]);
  for (const m of query.measures) {
    const def = MEASURE_DEFINITIONS[m];
    if (def.kind === "additive") for (const s of def.sums) needed.add(s);
  }
  return (Object.keys(SUMS) as SumName[]).filter((s) => needed.has(s));
}

function slotOf(dimension: Dimension): string {
  return B[DIMENSIONS[dimension].column];
}

/** The SQL for one query of one project. Pure: the same query gives the same text. */
export function exploreSql(query: ExploreQuery, target: SqlTarget): string {
  const table = target.table ?? CALLS_DATASET.name;
  if (!TABLE_PATTERN.test(table)) throw new Error("bad table name");
  const select: string[] = [];
  const groupBy: string[] = [];
  if (query.grain !== "none") {
    const width = sqlInteger(GRAIN_MS[query.grain]);
    const bucket = `intDiv(${D.started_at_ms}, ${width}) * ${width}`;
    select.push(`${bucket} AS bucket_ms`);
    groupBy.push(bucket);
  }
  for (const dimension of query.by) {
    select.push(`${slotOf(dimension)} AS ${dimension}`);
    groupBy.push(slotOf(dimension));
  }
  for (const sum of sumsOf(query)) select.push(`SUM(_sample_interval * ${SUMS[sum]}) AS sum_${sum}`);
  for (const m of query.measures) {
    const def = MEASURE_DEFINITIONS[m];
    if (def.kind === "direct") select.push(`${def.sql} AS ${m}`);
  }
  select.push("MAX(_sample_interval) AS sample_interval_max");

  const where = [
    `index1 = ${sqlString(target.projectId)}`,
    `${D.started_at_ms} >= ${sqlInteger(query.startMs)}`,
    `${D.started_at_ms} < ${sqlInteger(query.endMs)}`,
  ];
  for (const dimension of Object.keys(DIMENSIONS) as Dimension[]) {
    const list = query.filters[dimension];
    if (!list || list.length === 0) continue;
    where.push(list.length === 1 ? `${slotOf(dimension)} = ${sqlString(list[0]!)}` : `${slotOf(dimension)} IN (${list.map(sqlString).join(", ")})`);
  }

  const lines = [
    "SELECT",
    select.map((s) => `  ${s}`).join(",\n"),
    `FROM ${table}`,
    `WHERE ${where.join("\n  AND ")}`,
  ];
  if (groupBy.length > 0) lines.push(`GROUP BY ${groupBy.join(", ")}`);
  // Largest first, so a cut at MAX_SQL_ROWS drops the smallest groups; time order is restored after.
  lines.push(`ORDER BY sum_calls DESC${groupBy.length > 0 ? `, ${groupBy.join(", ")}` : ""}`);
  lines.push(`LIMIT ${sqlInteger(MAX_SQL_ROWS + 1)}`);
  lines.push("FORMAT JSON");
  return lines.join("\n");
}

/**
 * Reconciliation (SPEC §8): weighted calls per (project, hour of started_at, tool) over
 * [startMs, endMs), every project, with the Horvitz–Thompson variance of each estimate
 * (Σ si·(si−1)·w² — 0 when unsampled, so an unsampled hour must match D1 exactly).
 */
export function hourlyCallsSql(startMs: number, endMs: number, table: string = CALLS_DATASET.name): string {
  if (!TABLE_PATTERN.test(table)) throw new Error("bad table name");
  const hour = `intDiv(${D.started_at_ms}, ${sqlInteger(GRAIN_MS.hour)}) * ${sqlInteger(GRAIN_MS.hour)}`;
  return [
    "SELECT",
    "  index1 AS project_id,",
    `  ${hour} AS hour_ms,`,
    `  ${B.tool_name} AS tool,`,
    `  SUM(${WEIGHT}) AS calls,`,
    `  SUM(_sample_interval * (_sample_interval - 1) * ${D.calls} * ${D.calls}) AS variance,`,
    "  MAX(_sample_interval) AS sample_interval_max",
    `FROM ${table}`,
    `WHERE ${D.started_at_ms} >= ${sqlInteger(startMs)}`,
    `  AND ${D.started_at_ms} < ${sqlInteger(endMs)}`,
    `GROUP BY index1, ${hour}, ${B.tool_name}`,
    `ORDER BY index1, ${hour}, ${B.tool_name}`,
    `LIMIT ${sqlInteger(MAX_SQL_ROWS + 1)}`,
    "FORMAT JSON",
  ].join("\n");
}
