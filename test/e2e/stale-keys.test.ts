// A stale or revoked ingest key never costs the valid one (SPEC §3), end to end: replicas behind one
// address (the real socket's 127.0.0.1, as a NAT or a cluster's egress address would be) send with
// keys that never existed and with a revoked key, as often as they like; then a server with the
// valid key, through the real SDK, makes its calls from that same address — every one is counted.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import { watch } from "../../src/sdk/index.ts";
import { allDestinations } from "../../src/sdk/destination.ts";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

let worker: RunningWorker;

beforeAll(async () => {
  worker = await startWorker();
});
afterAll(async () => {
  await worker?.stop();
});

const call = (i: number) => ({
  v: 1, type: "call", session_id: `s_replica_${i}`, client_name: "claude-ai", tool_name: "search_orders",
  started_at: new Date(Date.now() - 60_000).toISOString(), duration_ms: 40, outcome: "ok", response_bytes: 100, is_empty: false, args_hash: "52a4fe5fc814",
});

/** A replica: an MCP server watched with `key`, and a client connected to it in memory. */
async function replica(key: string): Promise<Client> {
  const server = watch(new McpServer({ name: "orders", version: "1.0.0" }), { key, endpoint: worker.url });
  server.registerTool("lookup", { description: "Look an order up" }, () => ({ content: [{ type: "text" as const, text: '{"id":1}' }] }));
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "replica-client", version: "1" });
  await client.connect(clientSide);
  return client;
}

async function send(key: string): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const res = await fetch(`${worker.url}/v1/ingest`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ batch: [call(0)] }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

test("from an address that sent any number of unknown and revoked ingest keys, the valid key is accepted at once and every call counted; the stale replica's SDK says on stderr what it gave up", async () => {
  const project = await createProject(worker, "behind one NAT");
  const admin = { authorization: `Bearer ${worker.adminToken}`, "content-type": "application/json" };
  const stale = (await (await fetch(`${worker.url}/v1/admin/projects/${project.project_id}/keys`, { method: "POST", headers: admin, body: '{"kind":"ingest"}' })).json()) as { key: string; key_id: string };
  expect((await fetch(`${worker.url}/v1/admin/keys/${stale.key_id}`, { method: "DELETE", headers: admin })).status).toBe(204);

  // 30 keys that never existed, then the revoked key 25 times: its own key id fills at 20.
  for (let i = 0; i < 30; i++) expect((await send(`mp_live_${String(i).padStart(8, "0")}${"u".repeat(24)}`)).status).toBe(401);
  const revoked: number[] = [];
  for (let i = 0; i < 25; i++) {
    const answer = await send(stale.key);
    revoked.push(answer.status);
    if (answer.status === 429) expect(answer.body).toMatchObject({ code: "TOO_MANY_REQUESTS", limit: "key_prefix" });
  }
  expect(revoked).toEqual([...Array(20).fill(401), ...Array(5).fill(429)]);

  // A replica still running with the revoked key, through the real SDK: its calls are refused (401,
  // then 429 for the key id), and its stderr says so — the data is never dropped silently.
  const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  const staleClient = await replica(stale.key);
  for (let i = 0; i < 3; i++) await staleClient.callTool({ name: "lookup", arguments: { id: i } });
  const staleDestination = allDestinations().find((d) => d.key === stale.key)!;
  await staleDestination.buffer.flushFinal(5_000);
  staleDestination.drops.writePending();
  const lines = stderr.mock.calls.map(([text]) => String(text)).filter((text) => text.includes("gave up on"));
  stderr.mockRestore();
  expect(lines.join("")).toMatch(/\[mcpulse\] gave up on \d+ payload\(s\) for .*\(key mp_live_/);
  expect(lines.join("")).toMatch(/ingest answered 429|ingest answered 401/);
  expect(lines.join("")).not.toContain(stale.key);
  await staleClient.close();

  // The valid key, from the same address, through the real SDK: 51 calls.
  const client = await replica(project.ingest_key);
  for (let i = 0; i < 51; i++) await client.callTool({ name: "lookup", arguments: { id: i } });
  await Promise.all(allDestinations().map((destination) => destination.buffer.flushFinal(5_000)));

  let calls = 0;
  const deadline = Date.now() + 15_000;
  do {
    await worker.runRollup();
    const res = await fetch(`${worker.url}/v1/metrics/tools`, { headers: { authorization: `Bearer ${project.read_key}` } });
    expect(res.status).toBe(200);
    calls = ((await res.json()) as { tools: { tool_name: string; calls: number }[] }).tools.find((t) => t.tool_name === "lookup")?.calls ?? 0;
    if (calls >= 51) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  } while (Date.now() < deadline);
  expect(calls).toBe(51);

  // Health saw the throttled revoked key, and refused nothing else.
  const health = (await (await fetch(`${worker.url}/v1/admin/health`, { headers: admin })).json()) as { last_24h: Record<string, number> };
  expect(health.last_24h.requests_refused).toBe(0);
  expect(health.last_24h.throttled_failed_key).toBeGreaterThanOrEqual(5);
  expect(health.last_24h.throttled_payload_budget).toBe(0);
  await client.close();
});
