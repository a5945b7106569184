// POST /v1/ingest, SPEC §1.1 turn 3: gzip bodies (the 1 MiB limit on the bytes read and on the
// inflated bytes, a gzip bomb, invalid gzip, other encodings) and Idempotency-Key (its format at
// 7/8/64/65 characters; a resend within the hour stored once — by the key's Durable Object, by the
// D1 guard after the object restarted, and across the queue path).
import { createMessageBatch, env, runInDurableObject, createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { MAX_BODY_BYTES } from "../../src/shared/index.ts";
import worker from "../../src/worker/index.ts";
import type { KeyBudget } from "../../src/worker/budget/key-budget.ts";
import { INGEST_QUEUE_NAME, resetD1FailingForTests, type IngestWriteMessage } from "../../src/worker/queues/ingest-writes.ts";
import { capturingQueue, failingD1 } from "./helpers/faults.ts";
import { callPayload, postIngest, storedRows } from "./helpers/ingest.ts";
import { createProject } from "./helpers/projects.ts";
import { runCron } from "./helpers/cron.ts";

beforeEach(() => resetD1FailingForTests());

async function gzip(data: Uint8Array | string): Promise<Uint8Array> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer());
}

/** A JSON body of exactly `bytes` bytes: a valid one-call envelope padded with spaces. */
function envelopeOfExactly(bytes: number): string {
  const core = JSON.stringify({ batch: [callPayload()] });
  return core.slice(0, -1) + " ".repeat(bytes - core.length) + "}";
}

async function errorOf(res: Response, status: number): Promise<string> {
  expect(res.status).toBe(status);
  const body = await res.json<Record<string, unknown>>();
  // The one error model (docs/errors.md): a message, a code and the request's id.
  expect(Object.keys(body)).toEqual(["error", "code", "request_id"]);
  expect(body.request_id).toBe(res.headers.get("x-request-id"));
  return body.error as string;
}

const gz = { "content-encoding": "gzip" };
const rollup = () => runCron(Date.now());

describe("gzip bodies", () => {
  it("accepts a gzip body that inflates to exactly 1 MiB, and one just under", async () => {
    const p = await createProject();
    expect((await postIngest(await gzip(envelopeOfExactly(MAX_BODY_BYTES)), { key: p.ingest_key, headers: gz })).status).toBe(202);
    expect((await postIngest(await gzip(envelopeOfExactly(MAX_BODY_BYTES - 1)), { key: p.ingest_key, headers: { "content-encoding": "GZIP" } })).status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });

  it("refuses with 413 a gzip body that inflates to 1 MiB + 1 byte", async () => {
    const p = await createProject();
    expect(await errorOf(await postIngest(await gzip(envelopeOfExactly(MAX_BODY_BYTES + 1)), { key: p.ingest_key, headers: gz }), 413)).toBe(`body over ${MAX_BODY_BYTES} bytes`);
    expect((await storedRows(p.project_id)).calls).toHaveLength(0);
  });

  it("stops inflating a gzip bomb at the limit (64 MiB of zeros in ~64 KB)", async () => {
    const p = await createProject();
    const bomb = await gzip(new Uint8Array(64 * MAX_BODY_BYTES));
    expect(bomb.byteLength).toBeLessThan(MAX_BODY_BYTES / 8);
    await errorOf(await postIngest(bomb, { key: p.ingest_key, headers: gz }), 413);
  });

  it("counts the compressed bytes read too: over 1 MiB of gzip is a 413 before inflating", async () => {
    const p = await createProject();
    const random = new Uint8Array(MAX_BODY_BYTES + 1024);
    for (let i = 0; i < random.length; i += 65_536) crypto.getRandomValues(random.subarray(i, i + 65_536));
    const compressed = await gzip(random);
    expect(compressed.byteLength).toBeGreaterThan(MAX_BODY_BYTES);
    await errorOf(await postIngest(compressed, { key: p.ingest_key, headers: gz }), 413);
  });

  it("answers 400 for a body that is not valid gzip (garbage, or cut short)", async () => {
    const p = await createProject();
    expect(await errorOf(await postIngest("not gzip at all", { key: p.ingest_key, headers: gz }), 400)).toBe("body is not valid gzip");
    const whole = await gzip(JSON.stringify({ batch: [callPayload()] }));
    await errorOf(await postIngest(whole.slice(0, whole.length - 6), { key: p.ingest_key, headers: gz }), 400);
  });

  it("answers 415 for any other encoding; identity is accepted", async () => {
    const p = await createProject();
    const body = JSON.stringify({ batch: [callPayload()] });
    for (const encoding of ["br", "deflate", "zstd", "gzip, br", "x-gzip"]) {
      expect(await errorOf(await postIngest(body, { key: p.ingest_key, headers: { "content-encoding": encoding } }), 415)).toBe("content encoding must be gzip or identity");
    }
    expect((await postIngest(body, { key: p.ingest_key, headers: { "content-encoding": "identity" } })).status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(1);
  });

  it("keeps the order of checks: key (401) before encoding (415) before size (413)", async () => {
    const p = await createProject();
    await errorOf(await postIngest("x", { headers: { "content-encoding": "br" } }), 401);
    await errorOf(await postIngest("x".repeat(MAX_BODY_BYTES + 1), { key: p.ingest_key, headers: { "content-encoding": "br" } }), 415);
  });
});

describe("Idempotency-Key", () => {
  it("accepts 8 and 64 characters of [A-Za-z0-9_-] and refuses 7, 65 and other characters with a clear 400", async () => {
    const p = await createProject();
    const body = { batch: [callPayload()] };
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "Ab3_-xYz" } })).status).toBe(202);
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "k".repeat(64) } })).status).toBe(202);
    for (const bad of ["Ab3_-xY", "k".repeat(65), "abc def!", "ключ-ключ-ключ", ""]) {
      expect(await errorOf(await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": bad } }), 400)).toBe(
        "Idempotency-Key must be 8 to 64 characters of A-Z, a-z, 0-9, _ and -",
      );
    }
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });

  it("checks the body size (413) before the key's format (400)", async () => {
    const p = await createProject();
    await errorOf(await postIngest(envelopeOfExactly(MAX_BODY_BYTES + 1), { key: p.ingest_key, headers: { "idempotency-key": "short" } }), 413);
  });

  it("a resend with the same key within the hour is 202 and stored once; another key is another batch", async () => {
    const p = await createProject();
    const body = { batch: [callPayload({ tool_name: "once" }), callPayload({ tool_name: "once" })] };
    for (let i = 0; i < 3; i++) expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "batch-0001" } })).status).toBe(202);
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "batch-0002" } })).status).toBe(202);
    expect((await postIngest(body, { key: p.ingest_key })).status).toBe(202);
    expect((await postIngest(body, { key: p.ingest_key })).status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(8);
  });

  it("is per ingest key: the same Idempotency-Key from another project is its own batch", async () => {
    const a = await createProject();
    const b = await createProject();
    const body = { batch: [callPayload()] };
    expect((await postIngest(body, { key: a.ingest_key, headers: { "idempotency-key": "shared-key-1" } })).status).toBe(202);
    expect((await postIngest(body, { key: b.ingest_key, headers: { "idempotency-key": "shared-key-1" } })).status).toBe(202);
    expect((await storedRows(a.project_id)).calls).toHaveLength(1);
    expect((await storedRows(b.project_id)).calls).toHaveLength(1);
  });

  it("after the key's object restarted, the D1 guard still stores a resend once", async () => {
    const p = await createProject();
    const body = { batch: [callPayload()] };
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "restart-0001" } })).status).toBe(202);
    await forgetIdempotencyKeys(p.ingest_key);
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "restart-0001" } })).status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(1);
  });

  it("a key older than the hour names a new batch", async () => {
    const p = await createProject();
    const body = { batch: [callPayload()] };
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "hour-old-01" } })).status).toBe(202);
    await rollup();
    await runInDurableObject(keyStub(p.ingest_key), async (instance: KeyBudget) => {
      const keys = (instance as unknown as { idempotencyKeys: Map<string, number> }).idempotencyKeys;
      keys.set("hour-old-01", Date.now() - 3_600_001);
    });
    // …and the row the rollup emptied, kept for the window, was last written to over an hour ago.
    await env.DB.prepare("UPDATE call_batches SET last_received_at_ms = last_received_at_ms - 3600001 WHERE project_id = ?1").bind(p.project_id).run();
    expect((await postIngest(body, { key: p.ingest_key, headers: { "idempotency-key": "hour-old-01" } })).status).toBe(202);
    expect((await storedRows(p.project_id)).calls).toHaveLength(2);
  });

  // The D1 guard after the rollup folded the first copy in (migration 0025): the emptied row keeps
  // its batch ids for the window after its last request, then the rollup deletes it.
  it("after the rollup took the first copy and the key's object restarted, a resend within the hour counts once", async () => {
    // (The exact edge of the window is tested on the rollup's clock below: the worker's advances with I/O.)
    for (const [agoMs, stored] of [[3_590_000, 1], [3_600_001, 2]] as const) {
      const p = await createProject();
      const body = { batch: [callPayload({ tool_name: "taken" })] };
      const headers = { "idempotency-key": `taken-${agoMs}` };
      expect((await postIngest(body, { key: p.ingest_key, headers })).status).toBe(202);
      await rollup();
      const emptied = await env.DB.prepare("SELECT call_count, batch_ids FROM call_batches WHERE project_id = ?1").bind(p.project_id).all();
      expect(emptied.results).toEqual([{ call_count: 0, batch_ids: ` taken-${agoMs} ` }]);
      await forgetIdempotencyKeys(p.ingest_key);
      // The resend arrives `agoMs` after the first copy's request (its row's time moved back instead).
      await env.DB.prepare("UPDATE call_batches SET last_received_at_ms = ?2 WHERE project_id = ?1").bind(p.project_id, Date.now() - agoMs).run();
      expect((await postIngest(body, { key: p.ingest_key, headers })).status).toBe(202);
      await rollup();
      expect((await storedRows(p.project_id)).calls, `${agoMs} ms later`).toHaveLength(stored);
    }
  });

  it("deletes an emptied row once the window after its last request has passed, not before", async () => {
    const p = await createProject();
    expect((await postIngest({ batch: [callPayload()] }, { key: p.ingest_key })).status).toBe(202);
    await rollup();
    const rows = () => env.DB.prepare("SELECT COUNT(*) AS n FROM call_batches WHERE project_id = ?1").bind(p.project_id).first<{ n: number }>();
    const lastReceived = (await env.DB.prepare("SELECT last_received_at_ms AS t FROM call_batches WHERE project_id = ?1").bind(p.project_id).first<{ t: number }>())!.t;
    const runAt = (ms: number) => runCron(ms);
    await runAt(lastReceived + 3_600_000);
    expect((await rows())!.n).toBe(1);
    await runAt(lastReceived + 3_600_001);
    expect((await rows())!.n).toBe(0);
  });

  it("is stored once across the queue path: queued, resent, delivered twice", async () => {
    for (const restart of [false, true]) {
      const p = await createProject();
      expect((await postIngest({ batch: [] }, { key: p.ingest_key })).status).toBe(202);
      const d1 = failingD1();
      d1.failNextBatches = 4;
      const queue = capturingQueue();
      vi.spyOn(console, "error").mockImplementation(() => {});
      const body = { batch: [callPayload({ tool_name: "queued" })] };
      const headers = { "idempotency-key": "queued-batch-7" };
      expect((await postIngest(body, { key: p.ingest_key, headers, env: { ...env, DB: d1.db, INGEST_QUEUE: queue.queue, INGEST_RETRY_BASE_MS: "1" } })).status).toBe(202);
      expect(queue.sent).toHaveLength(1);
      resetD1FailingForTests();
      if (restart) await forgetIdempotencyKeys(p.ingest_key);
      // The resend reaches D1 first (only when the object forgot the key), then the queue delivers.
      expect((await postIngest(body, { key: p.ingest_key, headers })).status).toBe(202);
      await deliver(queue.sent);
      await deliver(queue.sent);
      expect((await storedRows(p.project_id)).calls).toHaveLength(1);
      vi.restoreAllMocks();
    }
  });
});

const keyStub = (ingestKey: string) => env.KEY_BUDGET.get(env.KEY_BUDGET.idFromName(ingestKey.slice(0, 16)));

/** What a restart of the key's object does to the Idempotency-Keys it remembers (memory only). */
async function forgetIdempotencyKeys(ingestKey: string): Promise<void> {
  await runInDurableObject(keyStub(ingestKey), async (instance: KeyBudget) => {
    (instance as unknown as { idempotencyKeys: Map<string, number> }).idempotencyKeys.clear();
  });
}

async function deliver(bodies: unknown[]): Promise<void> {
  const messages = bodies.map((body, i) => ({ id: `m${i}-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body }));
  const ctx = createExecutionContext();
  await worker.queue!(createMessageBatch(INGEST_QUEUE_NAME, messages as Parameters<typeof createMessageBatch>[1]) as never, env);
  await waitOnExecutionContext(ctx);
}

export type { IngestWriteMessage };
