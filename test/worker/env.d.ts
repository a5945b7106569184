// Types of the test runtime's bindings and main module, for `cloudflare:test` and `cloudflare:workers`.
import type { Env as WorkerEnv } from "../../src/worker/env.ts";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      SCHEMA_SQL: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../../src/worker/index.ts");
    }
  }
}
