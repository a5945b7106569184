// The worker's bindings and variables (wrangler.toml), and the one Hono environment every route uses.
import type { KeyBudget } from "./budget/key-budget.ts";
import type { IngestHealth } from "./health/ingest-health.ts";
import type { SignInThrottle } from "./throttle/sign-in-throttle.ts";

export interface Env {
  /** The first database: the directory, keys and dashboard sessions, and projects (SPEC §7; databases.ts). */
  DB: D1Database;
  /** Further databases for projects: every binding named DB_<suffix> (databases.ts lists them). */
  [database: `DB_${string}`]: D1Database | undefined;
  CALLS_AE: AnalyticsEngineDataset;
  KEY_BUDGET: DurableObjectNamespace<KeyBudget>;
  /** Ingest's durability counters, backlog and dead letters (one instance). */
  INGEST_HEALTH: DurableObjectNamespace<IngestHealth>;
  /** Failed sign-ins per client network and per key prefix (throttle/credentials.ts). */
  SIGN_IN_THROTTLE: DurableObjectNamespace<SignInThrottle>;
  /** OAuth 2.1 for /mcp (SPEC §9): @cloudflare/workers-oauth-provider's clients, grants and hashed tokens. */
  OAUTH_KV: KVNamespace;
  /** Batches D1 could not take yet; producer and consumer check messages with their Zod schema (queues/ingest-writes.ts). */
  INGEST_QUEUE: Queue<unknown>;
  /** One rollup or retention job per database per cron run (queues/rollup-jobs.ts, SPEC §7). */
  ROLLUP_QUEUE: Queue<unknown>;
  /** Base delay of the D1 write retries after a 202, in ms (default 250: waits of 0.25, 1 and 4 s). */
  INGEST_RETRY_BASE_MS?: string;
  ADMIN_TOKEN?: string;
  RAW_RETENTION_DAYS?: string;
  /** D1 statements one rollup run may spend (default 48, the free plan; up to 1,000 on Paid). */
  ROLLUP_MAX_QUERIES?: string;
  /** Milliseconds a rollup run waits between its transactions so queued requests get through (rollup/run.ts; default 50). */
  ROLLUP_PAUSE_MS?: string;
  PRICE_PER_MILLION_TOKENS_USD?: string;
  /** D1 queries one invocation may make, shared by the rollup and the alert step (default 50, the free plan). */
  D1_QUERIES_PER_INVOCATION?: string;
  /** The worker's public origin, for the dashboard links in alert notifications (docs/alerts.md). */
  PUBLIC_URL?: string;
  /**
   * Origins besides the worker's own that may call /mcp from a browser, comma-separated (e.g. an MCP
   * inspector's page). A request with any other `Origin` is answered 403 (SPEC §9, DNS rebinding).
   */
  MCP_ALLOWED_ORIGINS?: string;
  /**
   * Local only (`npm run dev`, tests): the embedded ClickHouse engine standing in for Analytics
   * Engine (scripts/analytics-local.ts). Ingest also posts its data points there, and Explore
   * queries it when no AE SQL interface is configured. Never set on deploy.
   */
  ANALYTICS_LOCAL_URL?: string;
  /** The Analytics SQL Workers binding (`[analytics] binding`, wrangler ≥ 4.145; remote only), where the account has it. */
  ANALYTICS_SQL?: { query(request: { query: string; params?: Record<string, unknown> }): Promise<unknown> };
  /** The AE dataset's name in the SQL interface Explore uses (default `mcpulse_calls`). */
  ANALYTICS_SQL_TABLE?: string;
  /** The account SQL API for AE: the account id and an API token with Account Analytics Read (secrets). */
  CF_ACCOUNT_ID?: string;
  CF_ANALYTICS_TOKEN?: string;
  /** "true" when the worker runs locally (`npm run dev`): alert targets may then be http://127.0.0.1 and the like. */
  LOCAL_DEV?: string;
}

/**
 * What an authenticated request knows: its project (and nothing else — SPEC §3), and the project's
 * database, resolved once per request (SPEC §7). Set by requireKey (auth.ts setAuthenticated).
 */
export type AuthVariables = { projectId: string; keyId: string; payloadBudgetPerMinute: number; database: string; db: D1Database };

/** The Hono environment of the whole app: bindings plus what requireKey sets. */
export type AppEnv = { Bindings: Env; Variables: AuthVariables };
