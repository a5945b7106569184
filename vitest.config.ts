// Test projects: Node for the wire contract, the SDK and end-to-end runs; workerd for the worker.
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { sharedLocalAnalytics } from "./scripts/analytics-local.ts";

// The local stand-in for Analytics Engine (an embedded ClickHouse in this process, SPEC §8), as
// `npm run dev` runs it: the worker tests' ingest posts its data points there and Explore queries
// it. Every test uses its own project, so they share it as they share D1.
const analytics = await sharedLocalAnalytics();

/**
 * Files left out of the fast lane (`npm run test:fast`, `vitest run --mode fast`): property runs,
 * fault injection, workload generators and child processes — minutes each. The full suite runs them.
 */
const SLOW_TESTS = [
  "test/sdk/processes.test.ts", "test/sdk/drops.test.ts", "test/worker/ingest-fuzz.test.ts", "test/worker/moves.test.ts",
  "test/worker/budget.test.ts", "test/worker/alerts/state-machine.test.ts", "test/worker/rollup/bounded.test.ts",
  "test/worker/rollup/day-fold.test.ts", "test/worker/rollup/faults.test.ts", "test/worker/rollup/history-fold.test.ts",
  "test/worker/rollup/property.test.ts", "test/worker/rollup/recompute.test.ts", "test/worker/rollup/retention-property.test.ts",
  "test/worker/rollup/shapes.test.ts",
];

export default defineConfig(async ({ mode }) => ({
  test: {
    exclude: ["**/node_modules/**", ...(mode === "fast" ? SLOW_TESTS : [])],
    projects: [
      {
        test: {
          name: "node",
          environment: "node",
          include: ["test/shared/**/*.test.ts", "test/sdk/**/*.test.ts", "test/analytics/**/*.test.ts", "test/sql/**/*.test.ts", "test/scripts/**/*.test.ts"],
        },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                ADMIN_TOKEN: "test-admin-token",
                // Applied by test/worker/apply-migrations.ts, as `wrangler d1 migrations apply` would.
                TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL("./migrations", import.meta.url))),
                // The generated schema.sql, compared with what the migrations produce (test/worker/schema.test.ts).
                GENERATED_SCHEMA_SQL: readFileSync(new URL("./schema.sql", import.meta.url), "utf8"),
                ANALYTICS_LOCAL_URL: analytics.url,
              },
            },
          }),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          setupFiles: ["test/worker/apply-migrations.ts"],
        },
      },
      {
        test: {
          name: "e2e",
          environment: "node",
          include: ["test/e2e/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
}));
