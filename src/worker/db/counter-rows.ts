// The counter tables and the one way sums are read from them: SELECTs from metrics/counter-sums.ts
// joined as UNION ALL statements.
import { DAY_MS } from "../time.ts";

/** Where each grain's rows live: one row per project, hour or day, tool and client. */
export const COUNTER_TABLES = {
  day: { table: "tool_day_metrics", time: "day_start_ms" },
  hour: { table: "tool_hour_metrics", time: "hour_start_ms" },
} as const satisfies Record<string, { table: string; time: string }>;

/**
 * Keeps each concatenated string far from D1's 2,000,000-byte limit on a value: at most 32 rows per
 * client.
 */
export const CONCAT_BLOCK_MS = 32 * DAY_MS;

/** D1 binds at most 100 parameters per statement. */
const MAX_BOUND_PARAMETERS = 100;
/** D1 refuses a compound SELECT of more than 5 terms ("too many terms in compound SELECT"). */
const MAX_COMPOUND_TERMS = 5;

export type CounterRowsBranch = { sql: string; params: unknown[] };

export async function readCounterRows(db: D1Database, branches: readonly CounterRowsBranch[]): Promise<Record<string, unknown>[][]> {
  const statements: { sql: string[]; params: unknown[] }[] = [];
  branches.forEach((branch, index) => {
    let current = statements.at(-1);
    if (!current || current.sql.length === MAX_COMPOUND_TERMS || current.params.length + branch.params.length > MAX_BOUND_PARAMETERS) {
      current = { sql: [], params: [] };
      statements.push(current);
    }
    const offset = current.params.length;
    const sql = branch.sql.replace(/\$(\d+)/g, (_, n: string) => `?${offset + Number(n)}`);
    current.sql.push(sql.replace(/^SELECT /, `SELECT ${index} AS branch, `));
    current.params.push(...branch.params);
  });
  const results = await Promise.all(
    statements.map((s) =>
      db
        .prepare(s.sql.join(" UNION ALL "))
        .bind(...s.params)
        .all<Record<string, unknown>>(),
    ),
  );
  const rows: Record<string, unknown>[][] = branches.map(() => []);
  for (const result of results) for (const row of result.results) rows[Number(row.branch)]?.push(row);
  return rows;
}
