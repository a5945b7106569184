// Starts the real worker in Miniflare from Node, configured from wrangler.toml (the same bindings
// `wrangler dev` gives it), with every migration applied to an empty D1 and an ADMIN_TOKEN. Used by
// the dashboard's browser test and by `npm run bench:read`.
import { spawnSync } from "node:child_process";
import { Miniflare, convertV4MiniflareOptions, type V4MiniflareOptions } from "miniflare";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { migrateToHead } from "../../../scripts/migrations.ts";
// @ts-expect-error -- a plain .mjs module of the scripts, without type declarations
import * as devSupport from "../../../scripts/dev-support.mjs";

/** The D1 bindings of a wrangler.toml, in order (scripts/dev-support.mjs). */
const databaseBindings = (devSupport as { databaseBindings: (toml: string) => string[] }).databaseBindings;

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

export type RunningWorker = {
  url: string;
  adminToken: string;
  mf: Miniflare;
  /** The first database (DB): the directory, keys, sessions, and the projects placed there. */
  db: D1Database;
  /** Every database of the worker's wrangler.toml by binding name (DB, DB_2: SPEC §7). */
  dbs: Record<string, D1Database>;
  /** Runs the 5-minute rollup cron's jobs once (one per database), as Cloudflare would, and waits for them. */
  runRollup(scheduledTime?: Date): Promise<void>;
  stop(): Promise<void>;
};

export type StartOptions = {
  adminToken?: string;
  vars?: Record<string, string>;
  /** A worker already built (a frozen release): its bundle and the wrangler.toml it was deployed with. */
  build?: { scriptPath: string; wranglerToml: string };
  /** Keep D1 and Durable Object storage in this directory (so a second start sees the same database). */
  persistTo?: string;
  /** Brings the first database to the schema the worker expects; default: every migration (migrateToHead). The others always get every migration. */
  prepareDb?: (db: D1Database) => Promise<unknown>;
  /** Sees every line the worker logs (console.log/error), then printed as Miniflare would. */
  onLog?: (message: string) => void;
};

export async function startWorker(options: StartOptions = {}): Promise<RunningWorker> {
  const adminToken = options.adminToken ?? "e2e-admin-token";
  const outdir = mkdtempSync(join(tmpdir(), "mcpulse-worker-"));
  const scriptPath = join(outdir, "index.js");
  if (options.build) {
    copyFileSync(options.build.scriptPath, scriptPath);
  } else {
    // Bundle exactly as a deploy would (wrangler's own build, nodejs_compat polyfills included).
    const wrangler = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
    const bundled = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", outdir], {
      cwd: ROOT,
      encoding: "utf8",
    });
    if (bundled.status !== 0) throw new Error(`wrangler build failed: ${bundled.stderr}`);
  }
  const wranglerToml = options.build?.wranglerToml ?? join(ROOT, "wrangler.toml");
  const { workerOptions } = unstable_getMiniflareWorkerOptions(wranglerToml);
  // The bundle is one ES module: module rules (for loose files) do not apply.
  const { modulesRules: _unusedRules, ...fromWrangler } = workerOptions as Record<string, unknown> & { bindings?: Record<string, unknown> };
  // wrangler hands over options in Miniflare's v4 shape; this Miniflare converts them itself.
  const v4Options = {
    workers: [
      {
        ...fromWrangler,
        name: "mcpulse-edge",
        modules: true,
        scriptPath,
        // Module names are paths relative to this root; the default (the cwd) cannot reach a temp dir.
        modulesRoot: outdir,
        bindings: { ...(fromWrangler.bindings ?? {}), ...options.vars, ADMIN_TOKEN: adminToken },
      },
    ],
    host: "127.0.0.1",
    port: 0,
    // Never fetch the Request.cf placeholder from the internet (tests run offline).
    cf: false,
    ...(options.onLog ? { handleStructuredLogs: structuredLogsTo(options.onLog) } : {}),
    // Without persistTo, storage lives in a temporary directory, empty on every start.
    ...(options.persistTo ? { resourcePersistencePath: options.persistTo } : {}),
  } as unknown as V4MiniflareOptions;
  const mf = new Miniflare(convertV4MiniflareOptions(v4Options));
  const url = (await mf.ready).toString().replace(/\/$/, "");
  const dbs: Record<string, D1Database> = {};
  for (const binding of databaseBindings(readFileSync(wranglerToml, "utf8"))) {
    dbs[binding] = (await mf.getD1Database(binding)) as unknown as D1Database;
    await (binding === "DB" ? (options.prepareDb ?? migrateToHead) : migrateToHead)(dbs[binding]);
  }
  const db = dbs.DB!;
  return {
    url,
    adminToken,
    mf,
    db,
    dbs,
    async runRollup(scheduledTime = new Date()) {
      const worker = await mf.getWorker();
      // A frozen release ran its rollup in the scheduled handler itself.
      if (options.build && !Object.keys(dbs).includes("DB_2")) {
        await worker.scheduled({ cron: "*/5 * * * *", scheduledTime });
        return;
      }
      // The cron sends one job per database to the rollup queue (SPEC §7), which Miniflare delivers
      // on its own time: here each job is handed to the worker's queue() directly and awaited, one
      // message per invocation as wrangler.toml's max_batch_size = 1 delivers them. The real path
      // (cron → queue → consumer) is test/e2e/databases.test.ts's.
      for (const database of Object.keys(dbs)) {
        const body = { v: 1, kind: "rollup", database, scheduled_time_ms: scheduledTime.getTime() };
        await worker.queue("mcpulse-rollup", [{ id: crypto.randomUUID(), timestamp: scheduledTime, attempts: 1, body }]);
      }
    },
    async stop() {
      await mf.dispose();
      rmSync(outdir, { recursive: true, force: true });
    },
  };
}

/** Hands each worker log line to `onLog`, then prints it as Miniflare's default handler does. */
function structuredLogsTo(onLog: (message: string) => void) {
  return ({ level, message }: { level: string; message: string }) => {
    onLog(message);
    if (level === "error" || level === "warn") console.error(message);
    else console.log(message);
  };
}

/**
 * A project with its ingest and read keys, through the admin route (SPEC §3), in the database
 * `database` (SPEC §7; default the first, which the tests read as `worker.db`; null: placement).
 */
export async function createProject(
  worker: RunningWorker,
  name: string,
  database: string | null = "DB",
): Promise<{ project_id: string; name: string; ingest_key: string; read_key: string }> {
  const res = await fetch(`${worker.url}/v1/admin/projects`, {
    method: "POST",
    headers: { authorization: `Bearer ${worker.adminToken}`, "content-type": "application/json" },
    // A frozen release knows no `database` (and refuses nothing it does not know; it is left out anyway).
    body: JSON.stringify(database === null || (worker.dbs.DB_2 === undefined) ? { name } : { name, database }),
  });
  if (res.status !== 201) throw new Error(`create project: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as { project_id: string; name: string; ingest_key: string; read_key: string };
}

/** The `name=value` of a dashboard session cookie for `readKey`, from the sign-in form (the cookie never holds the key). */
export async function readSessionCookie(worker: RunningWorker, readKey: string): Promise<string> {
  const res = await fetch(`${worker.url}/signin`, {
    method: "POST",
    headers: { origin: worker.url, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ key: readKey }),
    redirect: "manual",
  });
  const set = res.headers.getSetCookie().find((c) => c.startsWith("mcpulse_session="));
  if (res.status !== 303 || !set) throw new Error(`sign in: HTTP ${res.status}`);
  return set.split(";")[0]!;
}
