// Types of the test runtime's bindings and main module, for `cloudflare:test` and `cloudflare:workers`.
import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../../src/worker/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      GENERATED_SCHEMA_SQL: string;
      /** The local Analytics Engine vitest.config.ts starts (scripts/analytics-local.ts). */
      ANALYTICS_LOCAL_URL: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../../src/worker/index.ts");
    }
  }
}
