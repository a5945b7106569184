// Where Explore's SQL runs (SPEC §8 "Where it runs"): `(sql) → rows` over the Analytics SQL binding,
// the AE SQL API with a token, or the local engine. 429/503/507 are retried within a bounded wait;
// any other failure is AnalyticsUnavailable (503).
import type { Env } from "../env.ts";

export type SqlRow = Record<string, unknown>;

export interface SqlExecutor {
  /** Which interface answers (for logs and the health report). */
  readonly name: "binding" | "sql-api" | "local";
  /** The dataset's name in that interface's SQL. */
  readonly table: string;
  query(sql: string): Promise<SqlRow[]>;
}

/** The Analytics SQL binding as its documentation shows it: `query({query}) → result`. */
export type AnalyticsSqlBinding = { query(request: { query: string; params?: Record<string, unknown> }): Promise<unknown> };

/** AE is not configured, refused, or failed: Explore answers 503 and says which. */
export class AnalyticsUnavailable extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = "AnalyticsUnavailable";
  }
}

/** Statuses that mean "later": too many queries (429), unavailable (503), over a limit (507). */
const RETRYABLE = new Set([429, 503, 507]);
/** Retries after the first attempt, and the longest total wait for them. */
export const MAX_RETRIES = 2;
export const MAX_RETRY_WAIT_MS = 5_000;
/** What a 503 from Explore asks the caller to wait. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 30;

export type Sleep = (ms: number) => Promise<void>;
const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Seconds of a Retry-After header (delta-seconds or an HTTP date); 1 when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs = Date.now()): number {
  if (header === null) return 1_000;
  const trimmed = header.trim();
  if (/^\d{1,6}$/.test(trimmed)) return Number(trimmed) * 1_000;
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : 1_000;
}

/**
 * Sends one HTTP query, retrying 429/503/507 per Retry-After while the waits stay within
 * MAX_RETRY_WAIT_MS. The SQL API and the local engine both answer ClickHouse's `FORMAT JSON`.
 */
export async function fetchWithRetry(send: () => Promise<Response>, sleep: Sleep = realSleep): Promise<Response> {
  let waited = 0;
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await send();
    } catch {
      throw new AnalyticsUnavailable("Analytics Engine could not be reached", UNAVAILABLE_RETRY_AFTER_SECONDS);
    }
    if (res.ok || !RETRYABLE.has(res.status)) return res;
    const wait = retryAfterMs(res.headers.get("retry-after"));
    await res.body?.cancel();
    if (attempt >= MAX_RETRIES || waited + wait > MAX_RETRY_WAIT_MS) {
      throw new AnalyticsUnavailable(`Analytics Engine is busy (HTTP ${res.status}); retry later`, Math.max(1, Math.ceil(wait / 1000)));
    }
    waited += wait;
    await sleep(wait);
  }
}

async function rowsOf(res: Response): Promise<SqlRow[]> {
  if (!res.ok) {
    await res.body?.cancel();
    throw new AnalyticsUnavailable(`Analytics Engine refused the query (HTTP ${res.status})`, UNAVAILABLE_RETRY_AFTER_SECONDS);
  }
  const body = (await res.json()) as { data?: unknown };
  if (!Array.isArray(body.data)) throw new AnalyticsUnavailable("Analytics Engine answered without rows", UNAVAILABLE_RETRY_AFTER_SECONDS);
  return body.data as SqlRow[];
}

/** A statement for the binding, which takes the SQL without an output format (it answers JSON). */
function withoutFormat(sql: string): string {
  return sql.replace(/\nFORMAT JSON$/, "");
}

function rowsOfBindingResult(result: unknown): SqlRow[] {
  if (Array.isArray(result)) return result as SqlRow[];
  const r = result as { data?: unknown; rows?: unknown; results?: unknown } | null;
  for (const candidate of [r?.data, r?.rows, r?.results]) if (Array.isArray(candidate)) return candidate as SqlRow[];
  throw new AnalyticsUnavailable("the Analytics SQL binding answered without rows", UNAVAILABLE_RETRY_AFTER_SECONDS);
}

export type ExecutorEnv = Pick<Env, "ANALYTICS_SQL" | "CF_ACCOUNT_ID" | "CF_ANALYTICS_TOKEN" | "ANALYTICS_LOCAL_URL" | "ANALYTICS_SQL_TABLE">;

/** The interface this deployment has, in the order above; null when none is configured. */
export function executorFor(env: ExecutorEnv, options: { sleep?: Sleep; fetch?: typeof fetch; table?: string } = {}): SqlExecutor | null {
  const sleep = options.sleep ?? realSleep;
  const doFetch = options.fetch ?? fetch;
  const table = env.ANALYTICS_SQL_TABLE || options.table || "mcpulse_calls";
  if (env.ANALYTICS_SQL) {
    const binding = env.ANALYTICS_SQL as AnalyticsSqlBinding;
    return {
      name: "binding",
      table,
      async query(sql) {
        try {
          return rowsOfBindingResult(await binding.query({ query: withoutFormat(sql) }));
        } catch (err) {
          if (err instanceof AnalyticsUnavailable) throw err;
          throw new AnalyticsUnavailable("the Analytics SQL binding failed", UNAVAILABLE_RETRY_AFTER_SECONDS);
        }
      },
    };
  }
  if (env.CF_ACCOUNT_ID && env.CF_ANALYTICS_TOKEN) {
    const url = `https://api.cloudflare.com/client/v4/accounts/${encodeURIComponent(env.CF_ACCOUNT_ID)}/analytics_engine/sql`;
    const token = env.CF_ANALYTICS_TOKEN;
    return {
      name: "sql-api",
      table,
      query: async (sql) => rowsOf(await fetchWithRetry(() => doFetch(url, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: sql }), sleep)),
    };
  }
  if (env.ANALYTICS_LOCAL_URL) {
    const url = new URL("/sql", env.ANALYTICS_LOCAL_URL).toString();
    return {
      name: "local",
      table: "mcpulse_calls",
      query: async (sql) => rowsOf(await fetchWithRetry(() => doFetch(url, { method: "POST", body: sql }), sleep)),
    };
  }
  return null;
}
