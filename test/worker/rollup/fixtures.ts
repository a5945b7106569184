// Test helpers for the rollup: write raw rows straight into D1 (as ingest would), read every
// rollup table back in a canonical form, and count D1 statements through a proxy.
import { durationBucket } from "../../../src/worker/histogram.ts";
import { outOfDayRowsSql } from "../../../src/worker/db/day-marks.ts";
import { toolVersionsSourceSql } from "../../../src/worker/db/tool-versions.ts";
import { nextCallSeqSql, startupsWatermarkSql } from "../../../src/worker/db/rollup-state.ts";

export type Outcome = "ok" | "bad_args" | "tool_error" | "crashed";

export interface TestCall {
  project_id: string;
  session_id: string;
  client_name: string;
  tool_name: string;
  started_at_ms: number;
  duration_ms: number;
  outcome: Outcome;
  response_bytes: number;
  is_empty: boolean;
  args_hash: string;
}

export interface TestTool {
  name: string;
  schema_bytes: number;
  schema_hash: string | null;
  description_hash: string | null;
  description_norm: string | null;
  policy: { requires_authorization: boolean; requires_verified_identity: boolean } | null;
}

export interface TestStartup {
  project_id: string;
  session_id: string;
  client_name: string;
  tools: TestTool[];
  agree_declared: { field: string; tools: string[] }[];
}

export interface TestAgreement {
  project_id: string;
  session_id: string;
  field: string;
  tool_a: string;
  tool_b: string;
  agreed: boolean;
  checked_at_ms: number;
  window_ms: number;
}

export type TestPayload =
  | { type: "call"; call: TestCall }
  | { type: "startup"; startup: TestStartup }
  | { type: "agreement"; agreement: TestAgreement };

const TABLES_TO_RESET = [
  "call_batches",
  "api_keys",
  "projects",
  "call_state",
  "raw_startups",
  "raw_agreements",
  "sessions",
  "tool_hour_metrics",
  "tool_day_metrics",
  "day_marks",
  "pair_days",
  "registered_tools",
  "tool_versions",
  "agreement_days",
  "agreement_declarations",
  "rollup_state",
  "recomputes",
  "recompute_hours",
  "recompute_pairs",
];

export async function resetDb(db: D1Database): Promise<void> {
  await db.batch(TABLES_TO_RESET.map((t) => db.prepare(`DELETE FROM ${t}`)));
}

// One row per run of calls of one project, as ingest stores a request's calls (migration 0008).
const INSERT_CALLS = `INSERT INTO call_batches (project_id, received_at_ms, call_count, calls_json)
  VALUES (?1, ?2, json_array_length(?3), ?3)`;

/**
 * Writes one received batch of payloads in order, as ingest would: each payload gets the next
 * *_seq of its table, and all get `receivedAtMs`.
 */
export async function deliver(db: D1Database, payloads: TestPayload[], receivedAtMs: number): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  let calls: unknown[] = [];
  let callsProject = "";
  const flushCalls = () => {
    if (calls.length) statements.push(db.prepare(INSERT_CALLS).bind(callsProject, receivedAtMs, JSON.stringify(calls)));
    calls = [];
  };
  // Ingest only stores payloads of existing projects (the key names the project).
  const projects = new Set(payloads.map((p) => (p.type === "call" ? p.call : p.type === "startup" ? p.startup : p.agreement).project_id));
  for (const id of projects) {
    statements.push(db.prepare("INSERT OR IGNORE INTO projects (project_id, name, created_at_ms) VALUES (?1, ?1, 0)").bind(id));
  }
  for (const p of payloads) {
    if (p.type === "call") {
      const c = p.call;
      if (c.project_id !== callsProject) flushCalls();
      callsProject = c.project_id;
      calls.push([c.session_id, c.client_name, c.tool_name, c.started_at_ms, c.duration_ms, c.outcome, c.response_bytes, c.is_empty ? 1 : 0, c.args_hash, durationBucket(c.duration_ms)]);
      continue;
    }
    flushCalls();
    if (p.type === "startup") {
      const s = p.startup;
      statements.push(
        db
          .prepare(
            `INSERT INTO raw_startups (project_id, session_id, client_name, received_at_ms, tools_json, agree_declared_json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
          )
          .bind(s.project_id, s.session_id, s.client_name, receivedAtMs, JSON.stringify(s.tools), JSON.stringify(s.agree_declared)),
      );
    } else {
      const a = p.agreement;
      statements.push(
        db
          .prepare(
            `INSERT INTO raw_agreements (project_id, session_id, field, tool_a, tool_b, agreed, checked_at_ms, window_ms, received_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)`,
          )
          .bind(a.project_id, a.session_id, a.field, a.tool_a, a.tool_b, a.agreed ? 1 : 0, a.checked_at_ms, a.window_ms, receivedAtMs),
      );
    }
  }
  flushCalls();
  if (statements.length) await db.batch(statements);
}

export const calls = (list: TestCall[]): TestPayload[] => list.map((call) => ({ type: "call", call }));

/** A call with defaults, for example tests. */
export function call(over: Partial<TestCall> & Pick<TestCall, "started_at_ms">): TestCall {
  return {
    project_id: "p1",
    session_id: "s1",
    client_name: "claude",
    tool_name: "search",
    duration_ms: 0,
    outcome: "ok",
    response_bytes: 10,
    is_empty: false,
    args_hash: "aaaa",
    ...over,
  };
}

// ---------------------------------------------------------------------------------------------
// Reading the rollup tables back, canonically (sorted rows, histograms parsed).
// ---------------------------------------------------------------------------------------------

export type CounterRow = {
  project_id: string;
  start_ms: number;
  tool_name: string;
  client_name: string;
  calls: number;
  ok: number;
  empty: number;
  bad_args: number;
  tool_error: number;
  crashed: number;
  response_bytes_sum: number;
  duration_ms_sum: number;
  retries: number;
  first_call_attempts: number;
  first_call_ok: number;
  calls_without_session: number;
  calls_without_args_hash: number;
  histogram: Record<string, number>;
};

export interface RollupSnapshot {
  hours: CounterRow[];
  days: CounterRow[];
  pairs: { project_id: string; day_start_ms: number; client_name: string; from_tool: string; to_tool: string; pair_count: number }[];
  sessions: {
    project_id: string; session_id: string; first_seen_ms: number; last_seen_ms: number; client_name: string;
    calls: number; response_bytes_sum: number; schema_bytes_sum: number;
  }[];
  registered: Record<string, unknown>[];
  versions: Record<string, unknown>[];
  agreementDays: Record<string, unknown>[];
  declarations: Record<string, unknown>[];
}

const COUNTERS =
  "calls, ok, empty, bad_args, tool_error, crashed, response_bytes_sum, duration_ms_sum, retries, first_call_attempts, first_call_ok, calls_without_session, calls_without_args_hash";

function sortedHistogram(json: string): Record<string, number> {
  const h = JSON.parse(json) as Record<string, number>;
  return Object.fromEntries(Object.keys(h).sort((a, b) => Number(a) - Number(b)).map((k) => [k, h[k]!]));
}

/** Rows of one (project, day, tool, client) added up, histograms bucket by bucket, in key order. */
function sumByDay(rows: CounterRow[]): CounterRow[] {
  const byKey = new Map<string, CounterRow>();
  for (const row of rows) {
    const key = JSON.stringify([row.project_id, row.start_ms, row.tool_name, row.client_name]);
    const into = byKey.get(key);
    if (!into) {
      byKey.set(key, { ...row, histogram: { ...row.histogram } });
      continue;
    }
    for (const column of COUNTERS.split(", ")) (into as Record<string, unknown>)[column] = Number((into as Record<string, unknown>)[column]) + Number((row as Record<string, unknown>)[column]);
    for (const [bucket, n] of Object.entries(row.histogram)) into.histogram[bucket] = (into.histogram[bucket] ?? 0) + n;
  }
  const cmp = (a: unknown, b: unknown) => (a === b ? 0 : (a as string | number) < (b as string | number) ? -1 : 1);
  return [...byKey.values()]
    .map((row) => ({ ...row, histogram: Object.fromEntries(Object.entries(row.histogram).filter(([, n]) => n !== 0).sort(([a], [b]) => Number(a) - Number(b))) }))
    .sort((a, b) => cmp(a.project_id, b.project_id) || cmp(a.start_ms, b.start_ms) || cmp(a.tool_name, b.tool_name) || cmp(a.client_name, b.client_name));
}

export async function snapshot(db: D1Database): Promise<RollupSnapshot> {
  const [hours, days, pairs, sessions, registered, versions, agreementDays, declarations] = await db.batch([
    db.prepare(`SELECT project_id, hour_start_ms AS start_ms, tool_name, client_name, ${COUNTERS}, duration_histogram_json
      FROM tool_hour_metrics ORDER BY project_id, hour_start_ms, tool_name, client_name`),
    // A day as reads see it: its day row plus its hour rows not folded in yet (db/day-marks.ts).
    db.prepare(`SELECT project_id, day_start_ms AS start_ms, tool_name, client_name, ${COUNTERS}, duration_histogram_json
      FROM tool_day_metrics
      UNION ALL
      SELECT project_id, hour_start_ms - hour_start_ms % 86400000, tool_name, client_name, ${COUNTERS}, duration_histogram_json
      FROM tool_hour_metrics AS h WHERE ${outOfDayRowsSql("h")}`),
    db.prepare(`SELECT d.project_id, d.day_start_ms, d.client_name, p.key ->> 0 AS from_tool, p.key ->> 1 AS to_tool, p.value AS pair_count
      FROM pair_days d, json_each(d.pairs_json) AS p ORDER BY d.project_id, d.day_start_ms, d.client_name, from_tool, to_tool`),
    db.prepare(`SELECT project_id, session_id, first_seen_ms, last_seen_ms, client_name, calls, response_bytes_sum, schema_bytes_sum FROM sessions ORDER BY project_id, session_id`),
    db.prepare(`SELECT project_id, tool_name, schema_bytes, schema_hash, description_hash, description_norm,
      requires_authorization, requires_verified_identity FROM registered_tools ORDER BY project_id, tool_name`),
    // As reads see them: the rows counted in plus the folded startups above their watermark (db/tool-versions.ts).
    db.prepare(`SELECT project_id, tool_name, schema_hash, description_hash, description_norm, first_seen_ms, last_seen_ms, startups
      FROM ${toolVersionsSourceSql("SELECT project_id FROM projects")} ORDER BY project_id, tool_name, schema_hash, description_hash`),
    db.prepare(`SELECT project_id, day_start_ms, field, tool_a, tool_b, checks, disagreements FROM agreement_days
      ORDER BY project_id, day_start_ms, field, tool_a, tool_b`),
    db.prepare(`SELECT project_id, field, tool_name, last_declared_ms FROM agreement_declarations ORDER BY project_id, field, tool_name`),
  ]);
  const counterRows = (rows: Record<string, unknown>[]) =>
    rows.map(({ duration_histogram_json, ...rest }) => ({
      ...(rest as Omit<CounterRow, "histogram">),
      histogram: sortedHistogram(duration_histogram_json as string),
    }));
  return {
    hours: counterRows(hours!.results as Record<string, unknown>[]),
    days: sumByDay(counterRows(days!.results as Record<string, unknown>[])),
    pairs: pairs!.results as RollupSnapshot["pairs"],
    sessions: sessions!.results as RollupSnapshot["sessions"],
    registered: registered!.results as Record<string, unknown>[],
    versions: versions!.results as Record<string, unknown>[],
    agreementDays: agreementDays!.results as Record<string, unknown>[],
    declarations: declarations!.results as Record<string, unknown>[],
  };
}

/** The hour rows of one (tool, client), or all, as plain counters without the histogram. */
export async function hourCounters(db: D1Database): Promise<Omit<CounterRow, "histogram">[]> {
  return (await snapshot(db)).hours.map(({ histogram: _h, ...rest }) => rest);
}

// ---------------------------------------------------------------------------------------------
// Counting D1 statements (SPEC-adjacent platform limit: queries per invocation).
// ---------------------------------------------------------------------------------------------

/** Wraps a D1 binding and counts every statement run, each statement of a batch counted once. */
export function countingDb(db: D1Database): { db: D1Database; count: () => number } {
  let n = 0;
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrapStatement = (stmt: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...args: unknown[]) => wrapStatement(target.bind(...args));
        if (prop === "first" || prop === "run" || prop === "all" || prop === "raw") {
          return (...args: unknown[]) => {
            n += 1;
            return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    real.set(proxy, stmt);
    return proxy;
  };
  const proxy = new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrapStatement(target.prepare(sql));
      if (prop === "batch") {
        return (stmts: D1PreparedStatement[]) => {
          n += stmts.length;
          return target.batch(stmts.map((s) => real.get(s) ?? s));
        };
      }
      if (prop === "exec") {
        return (sql: string) => {
          n += sql.split("\n").filter((l) => l.trim()).length;
          return target.exec(sql);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { db: proxy, count: () => n };
}

// ---------------------------------------------------------------------------------------------
// Faults and costs injected at the binding: wrappers passed in place of env.DB, so the code under
// test runs its production path unchanged.
// ---------------------------------------------------------------------------------------------

/** What one D1 call (a batch is one transaction) did: each statement's SQL and meta. */
export interface MeteredCall {
  statements: { sql: string; rows_read: number; rows_written: number }[];
}

/**
 * A D1 binding that fails its k-th statement (1-based, a batch's statements counted one by one)
 * with the error D1 gives when a connection drops. `when: "before"` fails the call holding it
 * before D1 runs it (a batch is rolled back whole); `"after"` lets D1 run and commit it and fails
 * the answer (the caller cannot tell it committed). Every call is also metered.
 */
export function faultyDb(
  db: D1Database,
  options: { failAt?: number; when?: "before" | "after" } = {},
): { db: D1Database; statements: () => number; calls: MeteredCall[]; failed: () => boolean } {
  let n = 0;
  let failed = false;
  const calls: MeteredCall[] = [];
  const sqlOf = new WeakMap<object, string>();
  const real = new WeakMap<object, D1PreparedStatement>();
  const guard = async <T>(count: number, sqls: string[], run: () => Promise<T>, metas: (r: T) => D1Result[]): Promise<T> => {
    const first = n + 1;
    n += count;
    const hit = options.failAt !== undefined && options.failAt >= first && options.failAt <= n;
    if (hit && (options.when ?? "before") === "before") {
      failed = true;
      throw new Error("D1_ERROR: Network connection lost.");
    }
    const result = await run();
    calls.push({
      statements: metas(result).map((r, i) => ({ sql: sqls[i] ?? "", rows_read: r.meta.rows_read ?? 0, rows_written: r.meta.rows_written ?? 0 })),
    });
    if (hit) {
      failed = true;
      throw new Error("D1_ERROR: Network connection lost.");
    }
    return result;
  };
  const wrapStatement = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy = new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...args: unknown[]) => wrapStatement(target.bind(...args), sql);
        if (prop === "run" || prop === "all") {
          return () => guard(1, [sql], () => (target[prop] as () => Promise<D1Result>).call(target), (r) => [r]);
        }
        if (prop === "first") {
          // first() answers no meta: run it as all() and take the first row, as D1 does.
          return (column?: string) =>
            guard(1, [sql], () => target.all<Record<string, unknown>>(), (r) => [r]).then((r) => {
              const row = r.results[0] ?? null;
              return column === undefined || row === null ? row : row[column];
            });
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    real.set(proxy, stmt);
    sqlOf.set(proxy, sql);
    return proxy;
  };
  const proxy = new Proxy(db, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrapStatement(target.prepare(sql), sql);
      if (prop === "batch") {
        return (stmts: D1PreparedStatement[]) =>
          guard(
            stmts.length,
            stmts.map((s) => sqlOf.get(s) ?? ""),
            () => target.batch(stmts.map((s) => real.get(s) ?? s)),
            (r) => r,
          );
      }
      if (prop === "exec") throw new Error("faultyDb: exec is not metered");
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  return { db: proxy, statements: () => n, calls, failed: () => failed };
}

/**
 * The raw side after a rollup, canonically: waiting requests, the stored calls of each (session,
 * client, hour) sorted and without their call_seq (which numbers calls in the order chunks took
 * them), the raw startups and verdicts kept and pending, and the calls numbered.
 */
export async function rawState(db: D1Database): Promise<Record<string, unknown>> {
  const [batches, state, startups, agreements, watermarks] = await db.batch([
    db.prepare("SELECT COUNT(*) AS n FROM call_batches"),
    db.prepare("SELECT project_id, session_id, client_name, hour_start_ms, call_count, calls_json FROM call_state ORDER BY 1, 2, 3, 4"),
    // Numbers depend on the rows and watermarks before (db/raw-writes.ts): compare counts, not values.
    db.prepare(`SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE startup_seq >
      ${startupsWatermarkSql()}) AS pending FROM raw_startups`),
    db.prepare(`SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE agreement_seq >
      COALESCE((SELECT value FROM rollup_state WHERE name = 'agreements_seq'), 0)) AS pending FROM raw_agreements`),
    db.prepare(`SELECT ${nextCallSeqSql()} AS next_call_seq`),
  ]);
  return {
    batches: batches!.results,
    state: (state!.results as { calls_json: string }[]).map(({ calls_json, ...row }) => ({
      ...row,
      calls: (JSON.parse(calls_json) as unknown[][]).map((c) => JSON.stringify(c.slice(1))).sort(),
    })),
    startups: startups!.results,
    agreements: agreements!.results,
    watermarks: watermarks!.results,
  };
}
