// End to end (SPEC §1.1 turn 3, §4): the real worker in Miniflare with its local D1 made unavailable
// for 16 seconds — an exclusive SQLite lock held on the database file, so every statement fails
// with SQLITE_BUSY — while the real SDK (watch() around an McpServer) and a producer that retries as
// SPEC §4 says keep sending. No valid request gets a 500 or a 401; afterwards every call is counted
// exactly once, a resend with the same Idempotency-Key included.
import { afterAll, beforeAll, expect, test } from "vitest";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { watch } from "../../src/sdk/index.ts";
import { destinationFor, setTransportOverridesForTests } from "../../src/sdk/destination.ts";
import { defaultPostJson } from "../../src/sdk/transport.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

const OUTAGE_MS = 16_000;
let worker: RunningWorker;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mcpulse-outage-"));
  // D1 lives in a file under `dir`; write retries wait 0.1, 0.4 and 1.6 s.
  worker = await startWorker({ persistTo: dir, vars: { INGEST_RETRY_BASE_MS: "100" } });
});
afterAll(async () => {
  setTransportOverridesForTests({});
  await worker?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The SQLite file of the local D1 database that holds the keys and the test's project: the first
 * one, DB (Miniflare keeps one file per database under d1/, and wrangler.toml has two, SPEC §7).
 */
function d1File(): string {
  const entries = readdirSync(join(dir, "d1"), { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile() && e.name.endsWith(".sqlite") && e.name !== "metadata.sqlite");
  const first = files.find((e) => {
    const probe = new DatabaseSync(join(e.parentPath, e.name), { readOnly: true });
    try {
      return (probe.prepare("SELECT COUNT(*) AS n FROM api_keys").get() as { n: number }).n > 0;
    } finally {
      probe.close();
    }
  });
  if (!first) throw new Error("no local D1 file holds the keys");
  return join(first.parentPath, first.name);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("a 16 s D1 outage under steady load: no 500 or 401, every call counted exactly once", async () => {
  const project = await createProject(worker, "outage");
  const ingest = `${worker.url}/v1/ingest`;
  const headers = { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" };
  // The key is used once before the outage (its Durable Object learns it), as any producer's would be.
  expect((await fetch(ingest, { method: "POST", headers, body: '{"batch":[]}' })).status).toBe(202);

  // Every answer any producer gets, as status or "network".
  const answers: (number | string)[] = [];
  const post = defaultPostJson();
  setTransportOverridesForTests({
    tuning: { flushIntervalMs: 250 },
    post: async (url, key, body, options) => {
      try {
        const answer = await post(url, key, body, options);
        answers.push(typeof answer === "number" ? answer : answer.status);
        return answer;
      } catch (error) {
        answers.push("network");
        throw error;
      }
    },
  });

  // The real SDK: a watched McpServer, called at a steady pace by a client.
  const server = watch(new McpServer({ name: "outage", version: "1.0.0" }), { key: project.ingest_key, endpoint: worker.url });
  server.registerTool("ping", { description: "Ping" }, () => ({ content: [{ type: "text" as const, text: "pong" }] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "outage-client", version: "1" });
  await client.connect(clientSide);
  let sdkCalls = 0;
  let running = true;
  const sdkLoad = (async () => {
    while (running) {
      await client.callTool({ name: "ping", arguments: { n: sdkCalls } });
      sdkCalls++;
      await sleep(20);
    }
  })();

  // A producer that retries as SPEC §4 says: 5xx, 429 and network errors again with the same key;
  // every fifth batch is also resent after its 202 (a lost answer), which must count once.
  let rawBatches = 0;
  const call = (i: number) => ({
    v: 1, type: "call", session_id: "s_0000000000aa", client_name: "raw", tool_name: "raw_tool",
    started_at: new Date().toISOString(), duration_ms: 3, outcome: "ok", response_bytes: 10, is_empty: false, args_hash: (0xabc000 + i).toString(16).padStart(12, "0"),
  });
  const sendUntilAccepted = async (body: string, idempotencyKey: string) => {
    for (let attempt = 0; ; attempt++) {
      let status: number | string;
      try {
        status = (await fetch(ingest, { method: "POST", headers: { ...headers, "idempotency-key": idempotencyKey }, body })).status;
      } catch {
        status = "network";
      }
      answers.push(status);
      if (status === 202) return;
      if (typeof status === "number" && status < 500 && status !== 429) throw new Error(`ingest answered ${status}`);
      await sleep(Math.min(60_000, 1_000 * 2 ** attempt));
    }
  };
  const rawLoad = (async () => {
    const inFlight: Promise<void>[] = [];
    while (running) {
      const n = rawBatches++;
      const body = JSON.stringify({ batch: Array.from({ length: 5 }, (_, i) => call(n * 5 + i)) });
      const key = `raw-batch-${String(n).padStart(6, "0")}`;
      inFlight.push(sendUntilAccepted(body, key).then(() => (n % 5 === 0 ? sendUntilAccepted(body, key) : undefined)));
      await sleep(200);
    }
    await Promise.all(inFlight);
  })();

  await sleep(3_000);
  // The outage: an exclusive lock on the database file; D1 answers SQLITE_BUSY to every statement.
  const lock = new DatabaseSync(d1File(), { timeout: 10_000 });
  lock.exec("BEGIN EXCLUSIVE");
  const lockedAt = Date.now();
  await sleep(OUTAGE_MS);
  const outage = await (await fetch(`${worker.url}/v1/admin/health`, { headers: { authorization: `Bearer ${worker.adminToken}` } })).json() as Record<string, any>;
  lock.exec("ROLLBACK");
  lock.close();
  expect(Date.now() - lockedAt).toBeGreaterThanOrEqual(15_000);
  await sleep(3_000);
  running = false;
  await sdkLoad;
  await rawLoad;

  // The SDK's buffer empties (a retry may still be waiting) and the queue's backlog drains.
  const destination = destinationFor(worker.url, project.ingest_key);
  for (let i = 0; i < 600 && (destination.buffer.size > 0 || destination.buffer.sending); i++) await sleep(100);
  expect(destination.buffer.size).toBe(0);
  let health: Record<string, any> = {};
  for (let i = 0; i < 120; i++) {
    health = await (await fetch(`${worker.url}/v1/admin/health`, { headers: { authorization: `Bearer ${worker.adminToken}` } })).json() as Record<string, any>;
    if (health.queue.backlog_batches === 0) break;
    await sleep(1_000);
  }

  // The outage was real: batches went to the queue, D1 said it was unavailable.
  expect(outage.database).toBe("unavailable");
  expect(outage.last_24h.batches_queued).toBeGreaterThan(0);
  expect(health.queue.backlog_batches).toBe(0);
  expect(health.dead_letters.batches).toBe(0);
  expect(health.last_24h.batches_lost).toBe(0);
  // No valid request got a 500 or a 401.
  expect(answers.filter((a) => a === 500 || a === 401)).toEqual([]);
  expect(answers.length).toBeGreaterThan(100);

  await worker.runRollup();
  const tools = await (await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${project.read_key}` } })).json() as { tools: { tool_name: string; calls: number }[] };
  const counted = Object.fromEntries(tools.tools.map((t) => [t.tool_name, t.calls]));
  expect(sdkCalls).toBeGreaterThan(200);
  expect(counted).toEqual({ ping: sdkCalls, raw_tool: rawBatches * 5 });
});
