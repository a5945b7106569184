// The buffer and transport against a real local HTTP server (node:http on 127.0.0.1, not a mocked
// fetch): batching at 30 and on the interval, the 1,000 cap, ≤ 500 per request, one send in
// flight, the send timeout, failed sends retried with their Idempotency-Key (SPEC §4; the retry
// schedule itself: test/sdk/retry.test.ts).
import { afterEach, describe, expect, test, vi } from "vitest";
import { PayloadBuffer, DEFAULT_BUFFER_TUNING } from "../../src/sdk/buffer.ts";
import {
  destinationFor,
  resetDestinationsForTests,
  setTransportOverridesForTests,
} from "../../src/sdk/destination.ts";
import type { PostJson } from "../../src/sdk/transport.ts";
import { startCaptureServer, type CaptureMode, type CaptureServer } from "./helpers/capture-server.ts";

const servers: CaptureServer[] = [];
async function capture(mode: CaptureMode = "accept") {
  const server = await startCaptureServer(mode);
  servers.push(server);
  return server;
}
afterEach(async () => {
  setTransportOverridesForTests({});
  vi.useRealTimers();
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

let counter = 0;
const key = () => `mp_live_transport_${++counter}`;
const item = (seq: number) => ({ v: 1, type: "call", seq });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seqs = (batch: Record<string, unknown>[]) => batch.map((p) => p.seq);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe("batching", () => {
  test("29 payloads wait; the 30th sends all 30 at once", async () => {
    const ingest = await capture();
    const destination = destinationFor(ingest.url, key()); // real defaults: 30 payloads / 5 s
    for (let i = 0; i < 29; i++) destination.enqueue(item(i));
    await sleep(300);
    expect(ingest.requests).toHaveLength(0);
    destination.enqueue(item(29));
    const [request] = await ingest.waitForRequests(1, 3_000);
    expect(seqs(request!.batch)).toEqual(range(0, 30));
    expect(request!.method).toBe("POST");
    expect(request!.url).toBe("/v1/ingest");
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers.authorization).toMatch(/^Bearer mp_live_transport_/);
  });

  test("fewer than 30 go out on the interval (shortened through the internal test hook)", async () => {
    const ingest = await capture();
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 250 } });
    const destination = destinationFor(ingest.url, key());
    destination.enqueue(item(1));
    destination.enqueue(item(2));
    await sleep(120);
    expect(ingest.requests).toHaveLength(0);
    const [request] = await ingest.waitForRequests(1, 3_000);
    expect(seqs(request!.batch)).toEqual([1, 2]);
  });

  test("the real interval is 5 s after the first waiting payload (fake clock)", async () => {
    vi.useFakeTimers();
    const sent: unknown[][] = [];
    const buffer = new PayloadBuffer(async (batch) => {
      sent.push([...batch]);
    });
    buffer.add(item(1));
    vi.advanceTimersByTime(2_000);
    buffer.add(item(2));
    vi.advanceTimersByTime(2_999);
    expect(sent).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual([[item(1), item(2)]]);
  });

  test("a trailing slash on the endpoint is the same destination", async () => {
    const ingest = await capture();
    const sharedKey = key();
    expect(destinationFor(`${ingest.url}/`, sharedKey)).toBe(destinationFor(ingest.url, sharedKey));
  });
});

describe("limits", () => {
  test("1,000 buffered at most, oldest dropped; one send in flight; ≤ 500 per request", async () => {
    const ingest = await capture("hang");
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i)); // goes, and hangs
    await ingest.waitForRequests(1);
    for (let i = 30; i < 1_130; i++) destination.enqueue(item(i)); // 1,100 more while in flight
    expect(destination.buffer.size).toBe(1_000);
    await sleep(100);
    expect(ingest.requests).toHaveLength(1);
    expect(ingest.maxOpen).toBe(1);
    ingest.mode = "accept";
    // The first send fails; back in the buffer its 30 are the oldest of 1,030, so the bound drops them.
    ingest.releaseHanging();
    const requests = await ingest.waitForRequests(3);
    expect(seqs(requests[1]!.batch)).toEqual(range(130, 630));
    expect(seqs(requests[2]!.batch)).toEqual(range(630, 1_130));
    await sleep(100);
    expect(ingest.requests).toHaveLength(3);
    expect(ingest.maxOpen).toBe(1);
  });

  test("exactly 1,000 keeps all; 1,001 drops exactly the oldest one", () => {
    const buffer = new PayloadBuffer(() => new Promise(() => {}), { ...DEFAULT_BUFFER_TUNING, flushAtPayloads: 10_000 });
    for (let i = 0; i < 999; i++) buffer.add(item(i));
    expect(buffer.size).toBe(999);
    buffer.add(item(999));
    expect(buffer.size).toBe(1_000);
    expect(buffer.droppedOldest).toBe(0);
    buffer.add(item(1_000));
    expect(buffer.size).toBe(1_000);
    expect(buffer.droppedOldest).toBe(1);
  });

  test("a final flush of 1,000 is split into requests of 500; 501 into 500 + 1", async () => {
    const ingest = await capture();
    setTransportOverridesForTests({ tuning: { flushAtPayloads: 10_000, flushIntervalMs: 60_000 } });
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 1_000; i++) destination.enqueue(item(i));
    await destination.buffer.flushFinal(5_000);
    expect(ingest.requests.map((r) => r.batch.length)).toEqual([500, 500]);
    for (let i = 0; i < 501; i++) destination.enqueue(item(i));
    await destination.buffer.flushFinal(5_000);
    expect(ingest.requests.map((r) => r.batch.length)).toEqual([500, 500, 500, 1]);
    for (let i = 0; i < 500; i++) destination.enqueue(item(i));
    await destination.buffer.flushFinal(5_000);
    expect(ingest.requests.map((r) => r.batch.length)).toEqual([500, 500, 500, 1, 500]);
  });

  test("when a send ends with 30 or more waiting, the next goes at once; with fewer, on the interval", async () => {
    const ingest = await capture("hang");
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 60_000 } });
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await ingest.waitForRequests(1);
    for (let i = 30; i < 59; i++) destination.enqueue(item(i)); // 29 waiting
    ingest.mode = "accept";
    ingest.releaseHanging(202);
    await sleep(300);
    expect(ingest.requests).toHaveLength(1); // 29 < 30: they wait for the (long) interval
    destination.enqueue(item(59));
    await ingest.waitForRequests(2);
    expect(seqs(ingest.requests[1]!.batch)).toEqual(range(30, 60));
  });
});

describe("failures: retried with the same Idempotency-Key, or dropped", () => {
  test("a 500 answer is retried with the same Idempotency-Key, then the batch is done", async () => {
    const ingest = await capture("fail500");
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await ingest.waitForRequests(1);
    ingest.mode = "accept";
    await ingest.waitForRequests(2, 5_000);
    await sleep(200);
    expect(ingest.requests.map((r) => seqs(r.batch))).toEqual([range(0, 30), range(0, 30)]);
    const [first, second] = ingest.requests.map((r) => r.headers["idempotency-key"]);
    expect(first).toMatch(/^[A-Za-z0-9_-]{8,64}$/);
    expect(second).toBe(first);
    expect(destination.buffer.size).toBe(0);
  });

  test("a 400 drops the batch at once: no retry; the next batch has its own key", async () => {
    const ingest = await capture("reject400");
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await ingest.waitForRequests(1);
    ingest.mode = "accept";
    await sleep(1_500); // past the first retry's latest time (1.2 s)
    expect(ingest.requests).toHaveLength(1);
    for (let i = 30; i < 60; i++) destination.enqueue(item(i));
    await ingest.waitForRequests(2);
    expect(seqs(ingest.requests[1]!.batch)).toEqual(range(30, 60));
    expect(ingest.requests[1]!.headers["idempotency-key"]).not.toBe(ingest.requests[0]!.headers["idempotency-key"]);
    expect(destination.buffer.droppedBatches).toBe(1);
  });

  test("a 503's Retry-After is honoured", async () => {
    const ingest = await capture("fail503");
    ingest.retryAfter = "2";
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await ingest.waitForRequests(1);
    ingest.mode = "accept";
    await sleep(1_500); // the backoff alone would have retried by 1.2 s
    expect(ingest.requests).toHaveLength(1);
    await ingest.waitForRequests(2, 5_000);
    expect(ingest.requests[1]!.receivedAtMs - ingest.requests[0]!.receivedAtMs).toBeGreaterThanOrEqual(2_000);
    expect(ingest.requests[1]!.headers["idempotency-key"]).toBe(ingest.requests[0]!.headers["idempotency-key"]);
  });

  test("a send that hangs is abandoned after the send timeout and retried with its key", async () => {
    const ingest = await capture("hang");
    setTransportOverridesForTests({ sendTimeoutMs: 300 });
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await ingest.waitForRequests(1);
    expect(destination.buffer.sending).toBe(true);
    await sleep(150);
    expect(destination.buffer.sending).toBe(true);
    await sleep(400);
    expect(destination.buffer.sending).toBe(false);
    expect(ingest.open).toBe(0); // the connection was cut
    expect(destination.buffer.size).toBe(30); // kept for its retry
    ingest.mode = "accept";
    await ingest.waitForRequests(2, 5_000);
    expect(seqs(ingest.requests[1]!.batch)).toEqual(range(0, 30));
    expect(ingest.requests[1]!.headers["idempotency-key"]).toBe(ingest.requests[0]!.headers["idempotency-key"]);
  });

  test("with the real defaults a hanging send is cut at exactly 10 s (fake clock, real socket)", async () => {
    const ingest = await capture("hang");
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const destination = destinationFor(ingest.url, key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    // Real I/O still runs: wait (on the real clock) for the request to reach the server.
    const deadline = performance.now() + 3_000;
    while (ingest.requests.length === 0 && performance.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
    expect(ingest.requests).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(9_999);
    expect(destination.buffer.sending).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    for (let i = 0; i < 20 && destination.buffer.sending; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(destination.buffer.sending).toBe(false);
  });

  test("the 30th payload's flush is not sent inside add() (the tool call's finally), but on the next macrotask", async () => {
    const bodies: string[] = [];
    setTransportOverridesForTests({ post: async (_url, _key, body) => (bodies.push(body), 202) });
    const destination = destinationFor("http://127.0.0.1:9", key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    expect(bodies).toHaveLength(0);
    expect(destination.buffer.sending).toBe(false);
    await Promise.resolve(); // not on a microtask either: those run before the MCP SDK's answer
    expect(bodies).toHaveLength(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(bodies).toHaveLength(1);
    expect((JSON.parse(bodies[0]!) as { batch: unknown[] }).batch).toHaveLength(30);
  });

  test("the default send timeout handed to the poster is 10 s; the exit flush's is 1 s", async () => {
    const seen: { timeoutMs: number; keepProcessAlive: boolean }[] = [];
    const post: PostJson = async (_url, _key, _body, options) => {
      seen.push(options);
      return 202;
    };
    setTransportOverridesForTests({ post });
    const destination = destinationFor("http://127.0.0.1:9", key());
    for (let i = 0; i < 30; i++) destination.enqueue(item(i));
    await new Promise((resolve) => setImmediate(resolve)); // the 30th payload's flush goes out
    destination.enqueue(item(30));
    await destination.buffer.flushFinal();
    expect(seen).toEqual([
      { timeoutMs: 10_000, keepProcessAlive: false, idempotencyKey: expect.stringMatching(/^[A-Za-z0-9_-]{8,64}$/) },
      { timeoutMs: 1_000, keepProcessAlive: true, idempotencyKey: expect.stringMatching(/^[A-Za-z0-9_-]{8,64}$/) },
    ]);
  });

  test("an endpoint that is down, and a poster that throws, never throw or block: the batch waits for its retry", async () => {
    const ingest = await capture();
    const downUrl = ingest.url;
    await ingest.close();
    const destination = destinationFor(downUrl, key());
    for (let i = 0; i < 60; i++) destination.enqueue(item(i));
    await sleep(200);
    expect(destination.buffer.sending).toBe(false);
    expect(destination.buffer.size).toBe(60); // 30 for their retry, 30 behind them

    setTransportOverridesForTests({
      post: () => {
        throw new Error("fetch exploded synchronously");
      },
    });
    const throwing = destinationFor(downUrl, key());
    for (let i = 0; i < 30; i++) throwing.enqueue(item(i));
    await sleep(50);
    expect(throwing.buffer.sending).toBe(false);
    expect(throwing.buffer.size).toBe(30);
  });
});

test("destinations are per endpoint + key and shared by every caller in the process", async () => {
  const ingest = await capture();
  const a = destinationFor(ingest.url, "k1-shared");
  expect(destinationFor(ingest.url, "k1-shared")).toBe(a);
  expect(destinationFor(ingest.url, "k2-shared")).not.toBe(a);
  expect(destinationFor(`${ingest.url}/x`, "k1-shared")).not.toBe(a);
  expect(destinationFor(ingest.url, "k1-shared").sessions).toBe(a.sessions);
  resetDestinationsForTests();
  expect(destinationFor(ingest.url, "k1-shared")).not.toBe(a);
});
