/** Bundles src/worker/index.ts (or another entry wrapping it) into one ES module at `outfile` (see bundle-worker.mjs). */
export function bundleWorker(outfile: string, entry?: string): Promise<void>;
