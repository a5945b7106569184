// Starts the real worker in Miniflare from Node for the SDK's end-to-end test: bundled by wrangler
// as a deploy would be, bindings from wrangler.toml, schema.sql applied to a fresh D1, an
// ADMIN_TOKEN binding. (The same approach as the dashboard's e2e helper, kept here so this test
// depends only on the worker and wrangler.)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare, convertV4MiniflareOptions, type V4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

export interface LocalWorker {
  url: string;
  adminToken: string;
  /** Counts rows of a table in the worker's D1. */
  count(table: string): Promise<number>;
  /** Runs the 5-minute rollup cron once and waits for it. */
  runRollup(): Promise<void>;
  stop(): Promise<void>;
}

export async function startLocalWorker(adminToken = "sdk-e2e-admin-token"): Promise<LocalWorker> {
  const outdir = mkdtempSync(join(tmpdir(), "mcpulse-sdk-e2e-"));
  const wrangler = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const built = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", outdir], { cwd: ROOT, encoding: "utf8" });
  if (built.status !== 0) throw new Error(`wrangler build failed: ${built.stderr}`);
  const { workerOptions } = unstable_getMiniflareWorkerOptions(join(ROOT, "wrangler.toml"));
  const { modulesRules: _rules, ...fromWrangler } = workerOptions as Record<string, unknown> & { bindings?: Record<string, unknown> };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      workers: [
        {
          ...fromWrangler,
          name: "mcpulse-edge",
          modules: true,
          // The bundle lives in a temporary directory: module names are taken relative to it.
          modulesRoot: outdir,
          scriptPath: join(outdir, "index.js"),
          bindings: { ...(fromWrangler.bindings ?? {}), ADMIN_TOKEN: adminToken },
        },
      ],
      host: "127.0.0.1",
      port: 0,
    } as unknown as V4MiniflareOptions),
  );
  const url = (await mf.ready).toString().replace(/\/$/, "");
  const db = (await mf.getD1Database("DB")) as unknown as D1Database;
  const statements = readFileSync(join(ROOT, "schema.sql"), "utf8")
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, "").trim())
    .filter((s) => s.length > 0);
  await db.batch(statements.map((s) => db.prepare(s)));
  return {
    url,
    adminToken,
    async count(table) {
      const row = await db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).first<{ n: number }>();
      return row?.n ?? 0;
    },
    async runRollup() {
      const worker = await mf.getWorker();
      await worker.scheduled({ cron: "*/5 * * * *", scheduledTime: new Date() });
    },
    async stop() {
      await mf.dispose();
      rmSync(outdir, { recursive: true, force: true });
    },
  };
}
