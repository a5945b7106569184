// Bundles the worker (src/worker/index.ts) into one ES module for Miniflare, as the ingest and
// rollup benchmarks run it.
import { build } from "esbuild";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Writes the bundled worker to `outfile`; `entry` (default src/worker/index.ts) names another entry
 * that wraps it (bench/cost/metered-worker.ts).
 * @param {string} outfile
 * @param {string} [entry]
 */
export async function bundleWorker(outfile, entry = join(root, "src/worker/index.ts")) {
  await build({
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    outfile,
    logLevel: "warning",
  });
}
