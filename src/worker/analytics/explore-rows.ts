// From the engine's rows to Explore's answer (SPEC §8). Pure, so every executor gives the same answer.
import { OTHER_GROUP } from "./calls-dataset.ts";
import type { ExploreQuery, Measure } from "./explore-query.ts";
import { MAX_SQL_ROWS, MEASURE_DEFINITIONS, SUMS, sumsOf, type SumName, type Sums } from "./explore-sql.ts";

export type ExploreRow = Record<string, string | number | null>;

export type ExploreShaped = {
  rows: ExploreRow[];
  sampled: boolean;
  sample_interval_max: number;
  /** Measures of this answer that are estimates, not counts of every call. */
  approximate: Measure[];
  /** The engine had more groups than MAX_SQL_ROWS: the smallest are missing from `(other)`. */
  truncated: boolean;
};

type Parsed = { bucket: number | null; dims: string[]; key: string; sums: Sums; direct: Partial<Record<Measure, number | null>> };

function num(value: unknown): number {
  const n = typeof value === "number" ? value : Number(value);
  return Number.isFinite(n) ? n : 0;
}

function numOrNull(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  const n = typeof value === "number" ? value : Number(value);
  return Number.isFinite(n) ? n : null;
}

function emptySums(): Sums {
  const sums = {} as Sums;
  for (const name of Object.keys(SUMS) as SumName[]) sums[name] = 0;
  return sums;
}

function parse(query: ExploreQuery, row: Record<string, unknown>, sumNames: readonly SumName[]): Parsed {
  const dims = query.by.map((d) => String(row[d] ?? ""));
  const sums = emptySums();
  for (const s of sumNames) sums[s] = num(row[`sum_${s}`]);
  const direct: Partial<Record<Measure, number | null>> = {};
  for (const m of query.measures) if (MEASURE_DEFINITIONS[m].kind === "direct") direct[m] = numOrNull(row[m]);
  return { bucket: query.grain === "none" ? null : num(row.bucket_ms), dims, key: JSON.stringify(dims), sums, direct };
}

function rowOf(query: ExploreQuery, bucket: number | null, dims: string[], sums: Sums, direct: Partial<Record<Measure, number | null>> | null): ExploreRow {
  const row: ExploreRow = {};
  if (bucket !== null) row.time = new Date(bucket).toISOString();
  query.by.forEach((d, i) => (row[d] = dims[i] ?? ""));
  for (const m of query.measures) {
    const def = MEASURE_DEFINITIONS[m];
    if (def.kind === "additive") {
      const value = def.value(sums);
      // Weighted sums of whole counts: a sampled estimate is whole too, but keep it exact as read.
      row[m] = value;
    } else {
      row[m] = direct ? (direct[m] ?? null) : null;
    }
  }
  return row;
}

/** Explore's answer from the engine's rows for `query`. */
export function shapeExploreRows(query: ExploreQuery, raw: readonly Record<string, unknown>[]): ExploreShaped {
  const truncated = raw.length > MAX_SQL_ROWS;
  const sumNames = sumsOf(query);
  const parsed = raw.slice(0, MAX_SQL_ROWS).map((r) => parse(query, r, sumNames));
  const sampleIntervalMax = raw.slice(0, MAX_SQL_ROWS).reduce((max, r) => Math.max(max, num(r.sample_interval_max)), 0);
  const sampled = sampleIntervalMax > 1;
  const approximate = query.measures.filter((m) => sampled || (MEASURE_DEFINITIONS[m].kind === "direct" && (MEASURE_DEFINITIONS[m] as { approximate: boolean }).approximate));

  // An aggregate without GROUP BY answers one row even over no points: no calls, no row.
  const withCalls = parsed.filter((p) => p.sums.calls > 0);

  // Rank the groups by their calls over the whole range; the first `limit` keep their rows.
  const totals = new Map<string, number>();
  for (const p of withCalls) totals.set(p.key, (totals.get(p.key) ?? 0) + p.sums.calls);
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([key]) => key);
  const rank = new Map(ranked.map((key, i) => [key, i]));
  const limited = query.by.length > 0;
  const kept = (key: string) => !limited || (rank.get(key) ?? Infinity) < query.limit;

  const rows: { bucket: number; order: number; row: ExploreRow }[] = [];
  const others = new Map<number, Sums>();
  for (const p of withCalls) {
    const bucket = p.bucket ?? 0;
    if (kept(p.key)) {
      rows.push({ bucket, order: rank.get(p.key) ?? 0, row: rowOf(query, p.bucket, p.dims, p.sums, p.direct) });
    } else {
      const into = others.get(bucket) ?? emptySums();
      for (const s of sumNames) into[s] += p.sums[s];
      others.set(bucket, into);
    }
  }
  for (const [bucket, sums] of others) {
    const row = rowOf(query, query.grain === "none" ? null : bucket, query.by.map(() => OTHER_GROUP), sums, null);
    rows.push({ bucket, order: Infinity, row });
  }
  rows.sort((a, b) => a.bucket - b.bucket || a.order - b.order);
  return { rows: rows.map((r) => r.row), sampled, sample_interval_max: Math.max(1, sampleIntervalMax), approximate, truncated };
}
