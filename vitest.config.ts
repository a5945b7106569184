// Test projects: Node for the wire contract, the SDK and end-to-end runs; workerd for the worker.
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { sharedLocalAnalytics } from "./scripts/analytics-local.ts";

// The local stand-in for Analytics Engine (an embedded ClickHouse in this process, SPEC §8), as
// `npm run dev` runs it: the worker tests' ingest posts its data points there and Explore queries
// it. Every test uses its own project, so they share it as they share D1. Started here and awaited
// when the worker project starts, so that its start-up overlaps Vite's; a run without the worker
// project never waits for it (the catch only keeps a failure from being unhandled there).
const analytics = sharedLocalAnalytics();
analytics.catch(() => undefined);

/**
 * The fast lane (`npm run test:fast`, `vitest run --mode fast`): about a minute for a check of every
 * area before a commit — the wire contract, the SDK in process, Explore's SQL, ingest, the rollup,
 * the counters, the read API, the dashboard, alerts, OTLP, admin and the error model — each by its
 * cheapest files that still reach the real code (the full suite runs everything). The files run in
 * one Node process and one workerd (isolate: false) instead of one each, which costs ~1.7 s a file;
 * every file listed here passes that way (each of its tests makes its own project).
 */
const FAST_TESTS = {
  node: [
    "test/shared/payloads.test.ts", "test/shared/timestamp.test.ts", "test/shared/hash.test.ts", "test/shared/description.test.ts",
    "test/shared/tuple-layouts.test.ts", "test/shared/spec-citations.test.ts",
    "test/sdk/retry.test.ts", "test/sdk/internals.test.ts", "test/sdk/http-connection.test.ts", "test/sdk/limits.test.ts",
    "test/sdk/units.test.ts", "test/sdk/imports.test.ts", "test/sdk/mcp-sdk-facts.test.ts",
    "test/analytics/explore-query.test.ts", "test/analytics/explore-sql.test.ts", "test/analytics/explore-rows.test.ts", "test/analytics/executors.test.ts",
    "test/sql/rollup-sql.test.ts", "test/scripts/deploy-plan.test.ts", "test/scripts/dev-output.test.ts", "test/scripts/rollup-local.test.ts",
  ],
  worker: [
    "test/worker/ingest.test.ts", "test/worker/ingest-analytics.test.ts", "test/worker/tuples.test.ts", 
    "test/worker/ingest-health.test.ts", "test/worker/error-model.test.ts", "test/worker/schema.test.ts", "test/worker/imports.test.ts",
    "test/worker/rollup/ingest-to-rollup.test.ts", "test/worker/rollup/rules.test.ts", "test/worker/rollup/startups.test.ts",
    "test/worker/rollup/state-rows.test.ts",
    "test/worker/rollup/span-edges.test.ts", "test/worker/rollup/query-plans.test.ts",
    "test/worker/counters.test.ts", "test/worker/counter-rules.test.ts", "test/worker/counter-guide.test.ts", "test/worker/histogram.test.ts",
    "test/worker/retry-rule.test.ts", "test/worker/metrics/tools.test.ts", "test/worker/metrics/endpoints.test.ts",
    "test/worker/metrics/isolation.test.ts", "test/worker/metrics/cache.test.ts",
    "test/worker/dashboard.test.ts", "test/worker/dashboard-format.test.ts",
    "test/worker/alerts/evaluation.test.ts", "test/worker/alerts/targets.test.ts", "test/worker/alerts/formats.test.ts",
    "test/worker/otlp-mapping.test.ts", "test/worker/admin.test.ts",
    "test/worker/oauth.test.ts",
    "test/worker/sdk-in-workerd.test.ts",
  ],
};

export default defineConfig(async ({ mode }) => {
  const fast = mode === "fast";
  return {
    test: {
      exclude: ["**/node_modules/**"],
      // The fast lane's two processes (Node, workerd) side by side; the default is one less than the cores.
      ...(fast ? { maxWorkers: 2 } : {}),
      projects: [
        {
          test: {
            name: "node",
            environment: "node",
            include: fast ? FAST_TESTS.node : ["test/shared/**/*.test.ts", "test/sdk/**/*.test.ts", "test/analytics/**/*.test.ts", "test/sql/**/*.test.ts", "test/scripts/**/*.test.ts"],
            isolate: !fast,
          },
        },
        {
          plugins: [
            cloudflareTest(async () => ({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  ADMIN_TOKEN: "test-admin-token",
                  // Applied by test/worker/apply-migrations.ts, as `wrangler d1 migrations apply` would.
                  TEST_MIGRATIONS: await readD1Migrations(fileURLToPath(new URL("./migrations", import.meta.url))),
                  // The generated schema.sql, compared with what the migrations produce (test/worker/schema.test.ts).
                  GENERATED_SCHEMA_SQL: readFileSync(new URL("./schema.sql", import.meta.url), "utf8"),
                  ANALYTICS_LOCAL_URL: (await analytics).url,
                },
              },
            })),
          ],
          test: {
            name: "worker",
            include: fast ? FAST_TESTS.worker : ["test/worker/**/*.test.ts"],
            isolate: !fast,
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
  };
});
