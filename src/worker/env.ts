// The worker's bindings and variables, and the one Hono environment. WranglerEnv is generated
// (`npm run types`); added here is what wrangler.toml cannot declare: secrets, optional vars, DB_<suffix>.
import type { Context } from "hono";
import type { RequestIdVariables } from "hono/request-id";

export interface Env extends WranglerEnv {
  /** Further databases for projects: every binding named DB_<suffix> (databases.ts lists them). */
  [database: `DB_${string}`]: D1Database | undefined;
  /** Base delay of the D1 write retries after a 202, in ms (default 250: waits of 0.25, 1 and 4 s). */
  INGEST_RETRY_BASE_MS?: string;
  ADMIN_TOKEN?: string;
  /** Milliseconds a rollup run waits between its transactions so queued requests get through (rollup/run.ts; default 50). */
  ROLLUP_PAUSE_MS?: string;
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

/** The Hono environment of the whole app: bindings, the request's id (hono/request-id, app.ts) and what requireKey sets. */
export type AppEnv = { Bindings: Env; Variables: AuthVariables & RequestIdVariables };

/** A request's context in any route of the app. */
export type AppContext = Context<AppEnv>;
