// Alerts end to end (SPEC §5) in Node: the real worker in Miniflare (LOCAL_DEV=true, so it may
// call http://127.0.0.1), a real node:http receiver shaped like a signed webhook, Slack and Discord,
// one target answering 500 and one never answering. Ingest → two cron runs → firing → delivery;
// the signature is verified as docs/alerts.md says; retries and the delivery log are checked.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createProject, startWorker, type RunningWorker } from "./dashboard/start-worker.ts";

type Received = { path: string; headers: IncomingMessage["headers"]; body: string; at: number; signatureOk?: boolean };

const MINUTE = 60_000;
let worker: RunningWorker;
let server: Server;
let receiverUrl = "";
const received: Received[] = [];
/** What the targets saw, in order: "<path> received", and "/slow closed" when the worker gave up on it. */
const events: string[] = [];
const secrets = new Map<string, string>();
let flakyFailuresLeft = 1;

/** docs/alerts.md's verification: HMAC-SHA256 of `timestamp.body`, compared in constant time; replays over 5 minutes old refused. */
function verify(secret: string, headers: IncomingMessage["headers"], body: string): boolean {
  const timestamp = String(headers["x-mcpulse-timestamp"] ?? "");
  const signature = String(headers["x-mcpulse-signature"] ?? "");
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const expected = "sha256=" + createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
  return expected.length === signature.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature));
}

function handle(req: IncomingMessage, res: ServerResponse) {
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    const path = req.url ?? "";
    const entry: Received = { path, headers: req.headers, body, at: Date.now() };
    received.push(entry);
    events.push(`${path} received`);
    if (path === "/slow") {
      // Never answers: the worker's timeout ends it.
      res.on("close", () => events.push("/slow closed"));
      return;
    }
    if (path === "/flaky" && flakyFailuresLeft > 0) {
      flakyFailuresLeft -= 1;
      res.writeHead(500).end("boom");
      return;
    }
    // A moved webhook: its redirect points back at this machine, which must never be followed.
    if (path === "/moved") {
      res.writeHead(307, { location: `${receiverUrl}/after-redirect` }).end();
      return;
    }
    if (path === "/hook" || path === "/flaky") {
      entry.signatureOk = verify(secrets.get(path)!, req.headers, body);
      res.writeHead(entry.signatureOk ? 204 : 401).end();
      return;
    }
    res.writeHead(200).end("ok");
  });
}

async function api(method: string, path: string, body?: unknown, key = worker.adminToken) {
  const res = await fetch(`${worker.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // The answers are checked field by field below.
  return { status: res.status, body: (res.status === 204 ? null : await res.json()) as any };
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  worker = await startWorker({ vars: { LOCAL_DEV: "true", PUBLIC_URL: "https://mcpulse.example.com" } });
});

afterAll(async () => {
  await worker?.stop();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

describe("alert delivery to a real receiver", () => {
  it("fires within two cron runs, delivers signed webhook, Slack and Discord messages, retries a 500 and a timeout, logs every attempt", async () => {
    const project = await createProject(worker, "shop");
    const base = `/v1/admin/projects/${project.project_id}`;
    const dest = async (kind: string, path: string) => {
      const r = await api("POST", `${base}/alert-destinations`, { kind, url: `${receiverUrl}${path}`, name: path });
      expect(r.status).toBe(201);
      if (r.body.secret) secrets.set(path, r.body.secret);
      return r.body.id as string;
    };
    const ids = { hook: await dest("webhook", "/hook"), slack: await dest("slack", "/slack"), discord: await dest("discord", "/discord"), flaky: await dest("webhook", "/flaky"), slow: await dest("webhook", "/slow") };
    const rule = await api("POST", `${base}/alert-rules`, {
      name: "search failing", metric: "error_rate", op: ">", threshold: 0.2, tool: "search_orders", min_calls: 5, destinations: Object.values(ids),
    });
    expect(rule.status).toBe(201);

    // The tool breaks: 6 of 10 calls fail.
    const now = Date.now();
    const batch = Array.from({ length: 10 }, (_, i) => ({
      v: 1, type: "call", session_id: `s_${i}`, client_name: "claude-ai", tool_name: "search_orders",
      started_at: new Date(now - 120_000 + i * 1000).toISOString(), duration_ms: 40, outcome: i < 6 ? "tool_error" : "ok",
      response_bytes: 100, is_empty: false, args_hash: "aaaaaaaaaaaa",
    }));
    const ingest = await fetch(`${worker.url}/v1/ingest`, { method: "POST", headers: { authorization: `Bearer ${project.ingest_key}`, "content-type": "application/json" }, body: JSON.stringify({ batch }) });
    expect(ingest.status).toBe(202);

    const t0 = Math.ceil(now / (5 * MINUTE)) * 5 * MINUTE;
    await worker.runRollup(new Date(t0));
    expect(received).toEqual([]); // pending: one breach of for_evaluations = 2
    await worker.runRollup(new Date(t0 + 5 * MINUTE));

    const byPath = (p: string) => received.filter((r) => r.path === p);
    expect(received.map((r) => r.path).sort()).toEqual(["/discord", "/flaky", "/hook", "/slack", "/slow"]);
    const hook = byPath("/hook")[0]!;
    expect(hook.signatureOk).toBe(true);
    const payload = JSON.parse(hook.body);
    expect(payload).toMatchObject({
      kind: "firing", state: "firing", metric: "error_rate", op: ">", value: 0.6, threshold: 0.2,
      scope: { tool: "search_orders", client: null }, project: { id: project.project_id, name: "shop" },
      url: "https://mcpulse.example.com/tool?name=search_orders", window: { hours: 24 },
    });
    // A tampered body does not verify.
    expect(verify(secrets.get("/hook")!, hook.headers, hook.body.replace("0.6", "0.1"))).toBe(false);
    const slack = JSON.parse(byPath("/slack")[0]!.body);
    expect(slack.blocks.map((b: { type: string }) => b.type)).toEqual(["header", "section", "actions", "context"]);
    expect(JSON.stringify(slack)).toContain("60.0% vs threshold &gt; 20.0%");
    const discord = JSON.parse(byPath("/discord")[0]!.body);
    expect(discord.embeds[0].url).toBe("https://mcpulse.example.com/tool?name=search_orders");
    // The slow target held one slot until its timeout; every other target was reached while it
    // still held it (deliveries run side by side, never one after the other), whatever the speed.
    await vi.waitFor(() => expect(events).toContain("/slow closed"));
    const slowClosed = events.indexOf("/slow closed");
    for (const path of ["/hook", "/slack", "/discord", "/flaky"]) expect(events.indexOf(`${path} received`), path).toBeLessThan(slowClosed);

    const log1 = (await api("GET", "/v1/metrics/alerts", undefined, project.read_key)).body;
    const byDest = (log: { deliveries: { destination_id: string }[] }, id: string) => log.deliveries.find((d) => d.destination_id === id) as unknown as { status: string; attempts: { http_status: number | null; error_class: string | null; latency_ms: number }[]; next_attempt_at: string | null };
    expect(log1.rules[0].states).toMatchObject([{ scope: { tool: "search_orders", client: null }, state: "firing", value: 0.6 }]);
    expect(byDest(log1, ids.hook)).toMatchObject({ status: "delivered", attempts: [{ http_status: 204, error_class: null }] });
    expect(byDest(log1, ids.slack)).toMatchObject({ status: "delivered", attempts: [{ http_status: 200 }] });
    expect(byDest(log1, ids.flaky)).toMatchObject({ status: "pending", attempts: [{ http_status: 500, error_class: "http_5xx" }], next_attempt_at: new Date(t0 + 6 * MINUTE).toISOString() });
    const slow = byDest(log1, ids.slow);
    expect(slow).toMatchObject({ status: "pending", attempts: [{ http_status: null, error_class: "timeout" }] });
    expect(slow.attempts[0]!.latency_ms).toBeGreaterThanOrEqual(4_900);

    // The next run: the 500 is retried and lands; the timeout is retried and times out again, next in 5 min.
    await worker.runRollup(new Date(t0 + 10 * MINUTE));
    const log2 = (await api("GET", "/v1/metrics/alerts", undefined, project.read_key)).body;
    expect(byDest(log2, ids.flaky)).toMatchObject({ status: "delivered", attempts: [{ error_class: "http_5xx" }, { http_status: 204, error_class: null }] });
    expect(byPath("/flaky")[1]!.signatureOk).toBe(true);
    expect(byDest(log2, ids.slow)).toMatchObject({ status: "pending", attempts: [{ error_class: "timeout" }, { error_class: "timeout" }], next_attempt_at: new Date(t0 + 15 * MINUTE).toISOString() });
    // Still firing, reminder not due: never a second firing message.
    expect(byPath("/hook")).toHaveLength(1);
    expect(byPath("/slack")).toHaveLength(1);

    // A test notification reaches the receiver on the next run.
    expect((await api("POST", `${base}/alert-destinations/${ids.hook}/test`)).status).toBe(202);
    await worker.runRollup(new Date(t0 + 11 * MINUTE));
    const test = byPath("/hook")[1]!;
    expect(test.signatureOk).toBe(true);
    expect(JSON.parse(test.body)).toMatchObject({ kind: "test", rule: null });
  });

  it("never follows a redirect: the attempt is logged as http_3xx and the redirect's target is never asked", async () => {
    const project = await createProject(worker, "moved");
    const base = `/v1/admin/projects/${project.project_id}`;
    const created = await api("POST", `${base}/alert-destinations`, { kind: "webhook", url: `${receiverUrl}/moved` });
    expect(created.status).toBe(201);
    expect((await api("POST", `${base}/alert-destinations/${created.body.id}/test`)).status).toBe(202);
    await worker.runRollup(new Date(Date.now() + MINUTE));
    expect(received.filter((r) => r.path === "/moved")).toHaveLength(1);
    expect(received.filter((r) => r.path === "/after-redirect")).toEqual([]);
    const log = (await api("GET", "/v1/metrics/alerts", undefined, project.read_key)).body;
    expect(log.deliveries).toMatchObject([{ destination_id: created.body.id, attempts: [{ http_status: 307, error_class: "http_3xx" }] }]);
  });
});
