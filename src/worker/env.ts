// The worker's bindings and variables (wrangler.toml), in one type.
export interface Env {
  DB: D1Database;
  CALLS_AE: AnalyticsEngineDataset;
  KEY_BUDGET: DurableObjectNamespace;
  ADMIN_TOKEN?: string;
  RAW_RETENTION_DAYS?: string;
  PRICE_PER_MILLION_TOKENS_USD?: string;
}
