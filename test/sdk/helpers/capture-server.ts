// A real ingest stand-in on 127.0.0.1 (node:http, not a mocked fetch) that records every request.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect } from "vitest";
import { payloadSchema } from "../../../src/shared/index.ts";
import { setTransportOverridesForTests } from "../../../src/sdk/destination.ts";

/** accept: 202; fail500 / fail503 / fail429: that status (503 and 429 with `retryAfter`); reject400: 400; hang: no answer. */
export type CaptureMode = "accept" | "fail500" | "fail503" | "fail429" | "reject400" | "hang";

export interface CapturedRequest {
  receivedAtMs: number;
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
  batch: Record<string, unknown>[];
}

export interface CaptureServer {
  url: string;
  mode: CaptureMode;
  /** Retry-After sent with fail503 and fail429 (seconds, as text), or null for none. */
  retryAfter: string | null;
  /** The body of a failing answer (fail500, fail503, fail429, reject400). */
  errorBody: string;
  requests: CapturedRequest[];
  /** Requests that have arrived but not been answered (hang mode). */
  open: number;
  maxOpen: number;
  payloads(): Record<string, unknown>[];
  calls(): Record<string, unknown>[];
  startups(): Record<string, unknown>[];
  waitForPayloads(count: number, timeoutMs?: number): Promise<Record<string, unknown>[]>;
  /** Waits until this many requests have arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<CapturedRequest[]>;
  /** Cuts every hanging request's connection (the sender sees a network failure), or answers them with `status`. */
  releaseHanging(status?: number): void;
  close(): Promise<void>;
}

export async function startCaptureServer(mode: CaptureMode = "accept"): Promise<CaptureServer> {
  const hanging = new Set<ServerResponse>();
  const capture: CaptureServer = {
    url: "",
    mode,
    retryAfter: null,
    errorBody: '{"error":"simulated"}',
    requests: [],
    open: 0,
    maxOpen: 0,
    payloads: () => capture.requests.flatMap((request) => request.batch),
    calls: () => capture.payloads().filter((payload) => payload.type === "call"),
    startups: () => capture.payloads().filter((payload) => payload.type === "startup"),
    async waitForPayloads(count, timeoutMs = 8_000) {
      const deadline = Date.now() + timeoutMs;
      while (capture.payloads().length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} payloads, got ${capture.payloads().length}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return capture.payloads();
    },
    async waitForRequests(count, timeoutMs = 8_000) {
      const deadline = Date.now() + timeoutMs;
      while (capture.requests.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} requests, got ${capture.requests.length}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return capture.requests;
    },
    releaseHanging(status?: number) {
      for (const response of hanging) {
        if (status === undefined) response.socket?.destroy();
        else response.writeHead(status).end();
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    capture.open++;
    capture.maxOpen = Math.max(capture.maxOpen, capture.open);
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      let batch: Record<string, unknown>[] = [];
      try {
        batch = (JSON.parse(body) as { batch: Record<string, unknown>[] }).batch;
      } catch {
        batch = [];
      }
      capture.requests.push({
        receivedAtMs: Date.now(),
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body,
        batch,
      });
      if (capture.mode === "hang") {
        hanging.add(response);
        response.on("close", () => {
          hanging.delete(response);
          capture.open--;
        });
        return;
      }
      capture.open--;
      const failing = { fail500: 500, fail503: 503, fail429: 429, reject400: 400 } as const;
      if (capture.mode in failing) {
        const status = failing[capture.mode as keyof typeof failing];
        const headers: Record<string, string> = { "content-type": "application/json" };
        if ((status === 503 || status === 429) && capture.retryAfter !== null) headers["retry-after"] = capture.retryAfter;
        response.writeHead(status, headers).end(capture.errorBody);
      } else {
        response.writeHead(202).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  capture.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return capture;
}

/** Every payload must pass the shared wire schema the worker validates with (SPEC §1.2). */
export function invalidPayloads(payloads: Record<string, unknown>[]): { payload: unknown; issues: string }[] {
  const bad: { payload: unknown; issues: string }[] = [];
  for (const payload of payloads) {
    const parsed = payloadSchema.safeParse(payload);
    if (!parsed.success) bad.push({ payload, issues: JSON.stringify(parsed.error.issues) });
  }
  return bad;
}

/** One capture server for a whole test file (captureForFile), read through its getters. */
export interface FileCapture {
  readonly url: string;
  readonly requests: CapturedRequest[];
  payloads(): Record<string, unknown>[];
  /** The payloads of `type` sent with `key`, in order. */
  ofKey(key: string, type: string): Record<string, unknown>[];
}

/**
 * A capture server shared by a test file's tests, with the SDK's 5 s flush interval cut to 20 ms
 * (for destinations made while it is set): started before the file's tests; after them every
 * payload it received must pass the worker's schema, and it is closed.
 */
export function captureForFile(): FileCapture {
  let server: CaptureServer | undefined;
  const started = () => {
    if (!server) throw new Error("the capture server starts in beforeAll");
    return server;
  };
  beforeAll(async () => {
    server = await startCaptureServer();
    setTransportOverridesForTests({ tuning: { flushIntervalMs: 20 } });
  });
  afterAll(async () => {
    setTransportOverridesForTests({});
    expect(invalidPayloads(started().payloads())).toEqual([]);
    await started().close();
  });
  return {
    get url() {
      return started().url;
    },
    get requests() {
      return started().requests;
    },
    payloads: () => started().payloads(),
    ofKey: (key, type) =>
      started().requests.filter((r) => r.headers.authorization === `Bearer ${key}`).flatMap((r) => r.batch).filter((p) => p.type === type),
  };
}
