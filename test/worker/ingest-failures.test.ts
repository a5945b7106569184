// Ingest when D1 fails (SPEC §1.1, turn 3: a 202 is a promise), every path with the fault injected
// at the binding: the key check (the key's Durable Object answers without D1), the write after the
// 202 (retried with backoff, then the ingest queue), the queue itself (503 when it refuses before
// the answer), and the queue's consumer (stored once, retried, dead-lettered). Log lines carry the
// project and counts, never a payload.
import { createMessageBatch, env, getQueueResult, runInDurableObject, createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/worker/index.ts";
import type { KeyBudget } from "../../src/worker/budget/key-budget.ts";
import { INGEST_HEALTH_NAME } from "../../src/worker/health/ingest-health.ts";
import { INGEST_DEAD_LETTER_QUEUE_NAME } from "../../src/worker/queues/ingest-dead-letters.ts";
import { INGEST_QUEUE_NAME, resetD1FailingForTests, retryDelaySeconds, type IngestWriteMessage } from "../../src/worker/queues/ingest-writes.ts";
import type { Env } from "../../src/worker/env.ts";
import { capturingQueue, failingD1 } from "./helpers/faults.ts";
import { agreementPayload, callPayload, postIngest, startupPayload, storedRows } from "./helpers/ingest.ts";
import { adminHeaders, createProject, revokeKey, setPayloadBudget } from "./helpers/projects.ts";
import { PREFIX_RULE } from "../../src/worker/throttle/credentials.ts";
import { runCron } from "./helpers/cron.ts";

const batch = [
  callPayload({ tool_name: "SECRET_TOOL", client_name: "SECRET_CLIENT" }),
  callPayload({ tool_name: "SECRET_TOOL" }),
  startupPayload(),
  agreementPayload(),
];

/** Test bindings: retries after 1, 4 and 16 ms instead of 0.25, 1 and 4 s. */
const fast = (overrides: Partial<Env> = {}): Env => ({ ...env, INGEST_RETRY_BASE_MS: "1", ...overrides });

function logLines(spy: ReturnType<typeof vi.spyOn>): Record<string, unknown>[] {
  return spy.mock.calls.map((args: unknown[]) => JSON.parse(String(args[0])) as Record<string, unknown>);
}

const keyStub = (ingestKey: string) => env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(ingestKey.slice(0, 16)));

/** Ages the key's state past its 60 s, as time would. */
async function ageKeyState(ingestKey: string): Promise<void> {
  await runInDurableObject(keyStub(ingestKey), async (instance: KeyBudget) => {
    (instance as unknown as { keyStateLoadedAtMs: number }).keyStateLoadedAtMs = Date.now() - 61_000;
  });
}

async function adminHealth(): Promise<Record<string, any>> {
  const res = await worker.fetch(new Request("http://worker/v1/admin/health", { headers: adminHeaders() }) as never, env, createExecutionContext());
  expect(res.status).toBe(200);
  return res.json();
}

/** Runs the worker's queue() on `bodies` as one delivery of `queue`; the messages' outcomes. */
async function deliver(bodies: unknown[], bindings: Env = env, queue = INGEST_QUEUE_NAME, attempts = 1) {
  const messages = bodies.map((body, i) => ({ id: `m${i}-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body }));
  const messageBatch = createMessageBatch(queue, messages as Parameters<typeof createMessageBatch>[1]);
  const ctx = createExecutionContext();
  await worker.queue!(messageBatch as never, bindings);
  await waitOnExecutionContext(ctx);
  return getQueueResult(messageBatch, ctx);
}

beforeEach(() => resetD1FailingForTests());
afterEach(() => vi.restoreAllMocks());

describe("the key check without D1", () => {
  it("a known key keeps getting 202 while every D1 statement fails, and its batch is queued", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [callPayload()] }, { key: p.ingest_key })).status).toBe(202);
    const d1 = failingD1();
    const queue = capturingQueue();
    d1.failing = true;
    vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: d1.db, INGEST_QUEUE: queue.queue }) });
    expect(res.status).toBe(202);
    expect(queue.sent).toHaveLength(1);
  });

  it("a stale state still answers while D1 is down (never a 401 or a 500), and is refreshed once D1 answers", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    await ageKeyState(p.ingest_key);
    const d1 = failingD1();
    d1.failing = true;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await postIngest({ batch: [] }, { key: p.ingest_key, env: fast({ DB: d1.db }) })).status).toBe(202);
    expect(logLines(errors)[0]).toMatchObject({ event: "key_check_d1_unavailable" });
    d1.failing = false;
    const before = d1.statements;
    expect((await postIngest({ batch: [] }, { key: p.ingest_key, env: fast({ DB: d1.db }) })).status).toBe(202);
    expect(d1.statements).toBe(before + 1); // the refresh
    expect((await postIngest({ batch: [] }, { key: p.ingest_key, env: fast({ DB: d1.db }) })).status).toBe(202);
    expect(d1.statements).toBe(before + 1); // fresh again: no D1 on the hot path
  });

  it("a key the object has never seen answers 503 with Retry-After while D1 is down", async () => {
    const p = await createProject();
    const d1 = failingD1();
    d1.failing = true;
    vi.spyOn(console, "error").mockImplementation(() => {});
    const before = (await adminHealth()).last_24h;
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: d1.db }) });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("10");
    expect(await res.json()).toEqual({ error: "ingest temporarily unavailable; retry later", code: "SERVICE_UNAVAILABLE", request_id: res.headers.get("x-request-id") });
    // Health counts this 503 too, by its cause.
    const after = (await adminHealth()).last_24h;
    expect(after.requests_refused - before.requests_refused).toBe(1);
    expect(after.refused_key_unverifiable - before.refused_key_unverifiable).toBe(1);
    expect(after.refused_queue_unavailable).toBe(before.refused_queue_unavailable);
  });

  it("health counts every 429 ingest answers, by its limit", async () => {
    const p = await createProject();
    await setPayloadBudget(p.project_id, 1);
    const before = (await adminHealth()).last_24h;
    expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(202);
    for (let i = 0; i < 3; i++) expect((await postIngest({ batch }, { key: p.ingest_key })).status).toBe(429);
    const unknownKey = "mp_live_" + "q".repeat(32);
    for (let i = 0; i < PREFIX_RULE.maxFailures; i++) expect((await postIngest({ batch }, { key: unknownKey, headers: { "cf-connecting-ip": "192.0.2.77" } })).status).toBe(401);
    expect((await postIngest({ batch }, { key: unknownKey, headers: { "cf-connecting-ip": "192.0.2.77" } })).status).toBe(429);
    const after = (await adminHealth()).last_24h;
    expect(after.throttled_payload_budget - before.throttled_payload_budget).toBe(3);
    expect(after.throttled_failed_key - before.throttled_failed_key).toBe(1);
    expect(after.requests_throttled - before.requests_throttled).toBe(4);
  });

  it("an unknown key is 401 and the answer is remembered for the minute", async () => {
    const d1 = failingD1();
    const key = "mp_live_" + "Z".repeat(32);
    expect((await postIngest({ batch: [] }, { key, env: fast({ DB: d1.db }) })).status).toBe(401);
    d1.failing = true;
    expect((await postIngest({ batch: [] }, { key, env: fast({ DB: d1.db }) })).status).toBe(401);
  });

  it("a revocation takes effect at once, D1 up or down", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    await revokeKey(p.ingest_key.slice(0, 16));
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(401);
    const d1 = failingD1();
    d1.failing = true;
    vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await postIngest({ batch: [] }, { key: p.ingest_key, env: fast({ DB: d1.db }) })).status).toBe(401);
  });

  it("a project deletion takes effect at once", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    const res = await worker.fetch(new Request(`http://worker/v1/admin/projects/${p.project_id}`, { method: "DELETE", headers: adminHeaders() }) as never, env, createExecutionContext());
    expect(res.status).toBe(204);
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(401);
  });

  it("a revocation the object was not told about takes effect when the state is older than 60 s", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    await env.DB.prepare("UPDATE api_keys SET revoked_at_ms = 1 WHERE key_id = ?1").bind(p.ingest_key.slice(0, 16)).run();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    await ageKeyState(p.ingest_key);
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(401);
  });

  it("falls back to D1 when the key's object cannot answer (and logs it)", async () => {
    const p = await createProject();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const brokenBudget = { idFromName: () => { throw new Error("DO down"); } } as unknown as typeof env.KEY_BUDGET;
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ KEY_BUDGET: brokenBudget }) });
    expect(res.status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
    const events = logLines(errors).map((l) => l.event);
    expect(events).toContain("key_state_unavailable");
    expect(events).toContain("budget_unavailable");
  });
});

describe("the write after the 202", () => {
  it("retries a failed write with backoff, stores the batch once, and logs the retry without payloads", async () => {
    const p = await createProject();
    const d1 = failingD1();
    d1.failNextBatches = 1;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: d1.db }) });
    expect(res.status).toBe(202);
    expect(d1.batches).toBe(2);
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(2);
    expect(rows.startups).toHaveLength(1);
    expect(rows.agreements).toHaveLength(1);
    // Logged after the answer (waitUntil), still under the request's id.
    expect(logLines(errors)).toEqual([
      { event: "ingest_write_retry", level: "error", request_id: res.headers.get("x-request-id"), project_id: p.project_id, attempt: 1, error: "Error", calls: 2, startups: 1, agreements: 1 },
    ]);
    expect(JSON.stringify(errors.mock.calls)).not.toContain("SECRET");
    expect((await adminHealth()).last_24h.write_retries).toBeGreaterThanOrEqual(1);
  });

  it("a retry after an attempt that did commit although it failed stores nothing twice", async () => {
    const p = await createProject();
    // The first attempt commits, then reports a failure (a lost answer); the retry must see it.
    let first = true;
    const lying = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "batch") {
          return async (statements: D1PreparedStatement[]) => {
            const results = await target.batch(statements);
            if (first) {
              first = false;
              throw new Error("D1_ERROR: Network connection lost");
            }
            return results;
          };
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    vi.spyOn(console, "error").mockImplementation(() => {});
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: lying }) });
    expect(res.status).toBe(202);
    expect(first).toBe(false);
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(2);
  });

  it("after every attempt failed the batch goes to the queue (still 202, nothing lost, counted)", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    const d1 = failingD1();
    d1.failNextBatches = 4;
    const queue = capturingQueue();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const before = await adminHealth();
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: d1.db, INGEST_QUEUE: queue.queue }) });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
    expect(d1.batches).toBe(4);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
    expect(queue.sent).toHaveLength(1);
    const message = queue.sent[0] as IngestWriteMessage;
    expect(message).toMatchObject({ v: 1, project_id: p.project_id });
    expect(message.calls).toHaveLength(2);
    expect(logLines(errors).map((l) => [l.event, l.attempt])).toEqual([
      ["ingest_write_retry", 1], ["ingest_write_retry", 2], ["ingest_write_retry", 3], ["ingest_write_failed", 4],
    ]);
    expect(JSON.stringify(errors.mock.calls)).not.toContain("SECRET");
    const after = await adminHealth();
    expect(after.last_24h.batches_queued - before.last_24h.batches_queued).toBe(1);
    expect(after.last_24h.write_retries - before.last_24h.write_retries).toBe(3);
    expect(after.queue.projects).toContainEqual(expect.objectContaining({ project_id: p.project_id, batches: 1 }));

    // The consumer writes it later: stored once, however often it is delivered.
    expect((await deliver([message])).explicitAcks).toHaveLength(1);
    expect((await deliver([message])).explicitAcks).toHaveLength(1);
    const rows = await storedRows(p.project_id);
    expect(rows.calls.map((c) => c.tool_name)).toEqual(["SECRET_TOOL", "SECRET_TOOL"]);
    expect(rows.startups).toHaveLength(1);
    expect(rows.agreements).toHaveLength(1);
    const done = await adminHealth();
    expect(done.queue.projects.find((x: { project_id: string }) => x.project_id === p.project_id)).toBeUndefined();
    expect(done.last_24h.batches_written_from_queue - before.last_24h.batches_written_from_queue).toBe(2);
  });

  it("a D1 that does not answer is given up on per attempt (not after its own 30 s), and the batch is queued", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    let attempts = 0;
    const hanging = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "batch") return () => (attempts++, new Promise(() => {}));
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const queue = capturingQueue();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: hanging, INGEST_QUEUE: queue.queue }) })).status).toBe(202);
    expect(attempts).toBe(4);
    expect(queue.sent).toHaveLength(1);
    expect(logLines(errors).filter((l) => l.event === "ingest_write_retry").map((l) => l.error)).toEqual(["WriteAttemptTimeout", "WriteAttemptTimeout", "WriteAttemptTimeout"]);
  });

  it("while D1 is failing, the queue takes the batch before the answer; if it refuses too: 503, never 500", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    const d1 = failingD1();
    d1.failing = true;
    const queue = capturingQueue();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const bindings = fast({ DB: d1.db, INGEST_QUEUE: queue.queue });
    expect((await postIngest({ batch }, { key: p.ingest_key, env: bindings })).status).toBe(202); // after the 202: 4 attempts, queued
    expect(queue.sent).toHaveLength(1);
    const batchesBefore = d1.batches;
    expect((await postIngest({ batch }, { key: p.ingest_key, env: bindings })).status).toBe(202); // straight to the queue
    expect(d1.batches).toBe(batchesBefore);
    expect(queue.sent).toHaveLength(2);
    queue.refuse = true;
    const refused = await postIngest({ batch }, { key: p.ingest_key, env: bindings, headers: { "idempotency-key": "refused-batch-1" } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("10");
    // Nothing was promised: the resend with the same key is a new batch, not a duplicate.
    queue.refuse = false;
    expect((await postIngest({ batch }, { key: p.ingest_key, env: bindings, headers: { "idempotency-key": "refused-batch-1" } })).status).toBe(202);
    expect(queue.sent).toHaveLength(3);
    expect((await adminHealth()).last_24h.requests_refused).toBeGreaterThanOrEqual(1);
    expect((await adminHealth()).last_24h.refused_queue_unavailable).toBeGreaterThanOrEqual(1);
  });

  it("a batch neither D1 nor the queue takes after its 202 is logged and counted as lost", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    const d1 = failingD1();
    d1.failNextBatches = 4;
    const queue = capturingQueue();
    queue.refuse = true;
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const before = (await adminHealth()).last_24h.batches_lost;
    expect((await postIngest({ batch }, { key: p.ingest_key, env: fast({ DB: d1.db, INGEST_QUEUE: queue.queue }) })).status).toBe(202);
    expect(logLines(errors).at(-1)).toMatchObject({ event: "ingest_batch_lost", project_id: p.project_id, calls: 2 });
    expect((await adminHealth()).last_24h.batches_lost).toBe(before + 1);
  });

  it("stores the D1 rows when the Analytics Engine binding throws", async () => {
    const p = await createProject();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const brokenAe = { writeDataPoint() { throw new Error("AE down"); } } as AnalyticsEngineDataset;
    const res = await postIngest({ batch }, { key: p.ingest_key, env: fast({ CALLS_AE: brokenAe }) });
    expect(res.status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
    expect(logLines(errors)).toEqual([{ event: "analytics_write_failed", level: "error", request_id: res.headers.get("x-request-id"), project_id: p.project_id, calls: 2, error: "Error" }]);
  });
});

describe("the ingest queue's consumer", () => {
  async function queuedMessage(projectId: string, ingestKey: string, body = batch): Promise<IngestWriteMessage> {
    expect((await postIngest({ batch: [] }, { key: ingestKey })).status).toBe(202);
    const d1 = failingD1();
    d1.failNextBatches = 4;
    const queue = capturingQueue();
    vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await postIngest({ batch: body }, { key: ingestKey, env: fast({ DB: d1.db, INGEST_QUEUE: queue.queue }) })).status).toBe(202);
    expect(queue.sent).toHaveLength(1);
    const message = queue.sent[0] as IngestWriteMessage;
    expect(message.project_id).toBe(projectId);
    return message;
  }

  it("retries a message with backoff while D1 fails, then stores it once", async () => {
    const p = await createProject();
    const message = await queuedMessage(p.project_id, p.ingest_key);
    const d1 = failingD1();
    d1.failing = true;
    const failed = await deliver([message], fast({ DB: d1.db }), INGEST_QUEUE_NAME, 3);
    expect(failed.explicitAcks).toHaveLength(0);
    expect(failed.retryMessages).toHaveLength(1);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
    d1.failing = false;
    expect((await deliver([message], fast({ DB: d1.db }))).explicitAcks).toHaveLength(1);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });

  it("waits 10 s, 20 s, 40 s … at most 5 minutes between a message's attempts", () => {
    expect([1, 2, 3, 5, 6, 20].map(retryDelaySeconds)).toEqual([10, 20, 40, 160, 300, 300]);
  });

  it("acknowledges (and counts lost) a message that does not parse", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const result = await deliver([{ v: 2, nonsense: true }]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(logLines(errors)[0]).toMatchObject({ event: "ingest_queue_message_invalid" });
  });

  it("writes nothing for a project deleted while its batch waited", async () => {
    const p = await createProject();
    const message = await queuedMessage(p.project_id, p.ingest_key);
    await worker.fetch(new Request(`http://worker/v1/admin/projects/${p.project_id}`, { method: "DELETE", headers: adminHeaders() }) as never, env, createExecutionContext());
    expect((await deliver([message])).explicitAcks).toHaveLength(1);
    const rows = await env.DB.prepare("SELECT COUNT(*) AS n FROM call_batches WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it("a large batch travels in parts under the message size, each stored once", async () => {
    const p = await createProject();
    const big = Array.from({ length: 1000 }, (_, i) => callPayload({ tool_name: `tool_${"x".repeat(150)}_${i}` }));
    const d1 = failingD1();
    d1.failNextBatches = 4;
    const queue = capturingQueue();
    vi.spyOn(console, "error").mockImplementation(() => {});
    expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
    expect((await postIngest({ batch: big }, { key: p.ingest_key, env: fast({ DB: d1.db, INGEST_QUEUE: queue.queue }) })).status).toBe(202);
    expect(queue.sent.length).toBeGreaterThan(1);
    for (const part of queue.sent) expect(JSON.stringify(part).length).toBeLessThan(128_000);
    await deliver(queue.sent);
    await deliver(queue.sent.slice(0, 1));
    const rows = await storedRows(p.project_id);
    expect(rows.calls).toHaveLength(1000);
    expect(new Set(rows.calls.map((c) => c.tool_name)).size).toBe(1000);
  });

  it("dead letters are kept, shown by the health answer, and can be sent back", async () => {
    const p = await createProject();
    const message = await queuedMessage(p.project_id, p.ingest_key);
    expect((await deliver([message], env, INGEST_DEAD_LETTER_QUEUE_NAME)).explicitAcks).toHaveLength(1);
    const health = await adminHealth();
    expect(health.dead_letters.batches).toBeGreaterThanOrEqual(1);
    expect(health.dead_letters.projects).toContain(p.project_id);
    expect(typeof health.dead_letters.oldest_received_at).toBe("string");

    const queue = capturingQueue();
    const res = await worker.fetch(new Request("http://worker/v1/admin/health/requeue", { method: "POST", headers: adminHeaders() }) as never, { ...env, INGEST_QUEUE: queue.queue }, createExecutionContext());
    expect(await res.json()).toEqual({ requeued: health.dead_letters.batches });
    expect(queue.sent).toContainEqual(message);
    expect((await adminHealth()).dead_letters.batches).toBe(0);
    await deliver(queue.sent.filter((m) => (m as IngestWriteMessage).project_id === p.project_id));
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });
});

describe("GET /v1/admin/health", () => {
  it("needs the admin token", async () => {
    const res = await worker.fetch(new Request("http://worker/v1/admin/health") as never, env, createExecutionContext());
    expect(res.status).toBe(401);
  });

  it("answers while D1 is down, saying so", async () => {
    const d1 = failingD1();
    d1.failing = true;
    const res = await worker.fetch(new Request("http://worker/v1/admin/health", { headers: adminHeaders() }) as never, { ...env, DB: d1.db }, createExecutionContext());
    expect(res.status).toBe(200);
    const body = await res.json<Record<string, any>>();
    expect(body.database).toBe("unavailable");
    expect(body.rollup).toEqual({ as_of: null, projects_behind: [] });
    expect(Object.keys(body.last_24h).sort()).toEqual([
      "batches_dead_lettered", "batches_lost", "batches_queued", "batches_written_from_queue", "refused_key_unverifiable", "refused_queue_unavailable",
      "requests_refused", "requests_throttled", "throttled_failed_key", "throttled_payload_budget", "write_retries",
    ]);
  });

  it("lists the projects the rollup has not caught up with, most behind first, and none once it has", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [callPayload(), callPayload(), startupPayload()] }, { key: p.ingest_key })).status).toBe(202);
    const behind = (await adminHealth()).rollup.projects_behind as Record<string, unknown>[];
    expect(behind.find((r) => r.project_id === p.project_id)).toMatchObject({ pending_requests: 1, pending_calls: 2, pending_startups: 1 });
    await runCron(Date.now());
    const after = await adminHealth();
    expect(after.rollup.projects_behind.find((r: Record<string, unknown>) => r.project_id === p.project_id)).toBeUndefined();
    expect(after.rollup.as_of).not.toBeNull();
  });

  it("uses one health object", () => {
    expect(INGEST_HEALTH_NAME).toBe("ingest-health");
  });
});
