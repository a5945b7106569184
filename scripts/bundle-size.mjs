#!/usr/bin/env node
// `npm run bundle:size`: builds the worker exactly as `wrangler deploy` would (`--dry-run`), prints
// its size and fails when the gzip size passes the Workers free plan's 3 MB limit. Run by .ci/run.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

// Cloudflare's limit on a Worker's compressed size on the free plan (10 MB on paid).
const FREE_PLAN_LIMIT_BYTES = 3 * 1024 * 1024;
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = mkdtempSync(join(tmpdir(), "mcpulse-bundle-"));
try {
  const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  const built = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", outdir], { cwd: root, encoding: "utf8" });
  if (built.status !== 0) {
    console.error(built.stdout, built.stderr);
    process.exit(built.status ?? 1);
  }
  const files = readdirSync(outdir).filter((f) => f.endsWith(".js"));
  const raw = files.map((f) => readFileSync(join(outdir, f)));
  const bytes = raw.reduce((n, b) => n + b.length, 0);
  const gzipBytes = raw.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0);
  const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(`worker bundle (wrangler deploy --dry-run): ${kb(bytes)}, ${kb(gzipBytes)} gzip — free plan limit ${kb(FREE_PLAN_LIMIT_BYTES)} gzip`);
  if (gzipBytes > FREE_PLAN_LIMIT_BYTES) {
    console.error("The worker is over the free plan's compressed size limit.");
    process.exit(1);
  }
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
