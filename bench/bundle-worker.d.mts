/** Bundles src/worker/index.ts into one ES module at `outfile` (see bundle-worker.mjs). */
export function bundleWorker(outfile: string): Promise<void>;
