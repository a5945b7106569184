// `npm run example` against the real worker (Miniflare here; `npm run dev` for a person): it
// creates a project through the admin route, drives examples/server.ts over stdio, and its calls
// arrive in the worker's D1 and, after the rollup, in /v1/metrics/tools.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;
beforeAll(async () => {
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
});

test("npm run example sends the example server's calls to the worker and prints the dashboard URL", async () => {
  const run = spawnSync(process.execPath, ["--experimental-strip-types", "--no-warnings", fileURLToPath(new URL("../../examples/run.ts", import.meta.url))], {
    env: { ...process.env, MCPULSE_URL: worker.url, ADMIN_TOKEN: worker.adminToken },
    encoding: "utf8",
    timeout: 60_000,
  });
  expect(run.status).toBe(0);
  const readKey = /Dashboard: \S+\/\?key=(mp_read_[0-9A-Za-z]{32})/.exec(run.stdout)?.[1];
  expect(readKey).toBeDefined();
  expect(run.stdout).toContain("search_orders");
  // Miniflare has no /__scheduled route: run the cron here, as wrangler dev's route would, until
  // the ingest's background writes (after its 202) have all been folded in.
  let tools: Record<string, unknown>[] = [];
  const deadline = Date.now() + 15_000;
  do {
    await worker.runRollup();
    const response = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${readKey}` } });
    tools = ((await response.json()) as { tools: Record<string, unknown>[] }).tools;
    if (tools.reduce((sum, tool) => sum + (tool.calls as number), 0) >= 9) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  } while (Date.now() < deadline);
  const byName = Object.fromEntries(tools.map((tool) => [tool.tool_name, tool]));
  expect(byName.search_orders).toMatchObject({ calls: 4, ok: 3, bad_args: 1 });
  expect(byName.get_order).toMatchObject({ calls: 2, ok: 2, empty: 1 });
  expect(byName.refund_order).toMatchObject({ calls: 2, tool_error: 1, policy: { requires_authorization: true, requires_verified_identity: false } });
  expect(byName.export_report).toMatchObject({ calls: 1, crashed: 1 });
  expect(byName.legacy_lookup).toMatchObject({ calls: 0, registered: true, dead: true });
});
