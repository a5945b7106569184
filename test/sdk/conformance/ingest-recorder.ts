// A tiny stand-in for the ingest, written for this review independently of test/sdk/helpers: a
// node:http server on 127.0.0.1 that answers 202 and records every request exactly as it arrived.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  path: string;
  contentType: string | undefined;
  authorization: string | undefined;
  body: string;
}

export interface IngestRecorder {
  url: string;
  requests: RecordedRequest[];
  /** Every payload of every request sent with this key, in arrival order. */
  payloadsOf(key: string): Record<string, unknown>[];
  /** Polls until `count` payloads (optionally of one type) arrived for `key`, or 5 s passed. */
  waitFor(key: string, count: number, type?: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export async function startIngestRecorder(): Promise<IngestRecorder> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        contentType: req.headers["content-type"],
        authorization: req.headers.authorization,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const payloadsOf = (key: string) =>
    requests
      .filter((request) => request.authorization === `Bearer ${key}`)
      .flatMap((request) => (JSON.parse(request.body) as { batch: Record<string, unknown>[] }).batch);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    payloadsOf,
    async waitFor(key, count, type) {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const found = payloadsOf(key).filter((payload) => type === undefined || payload.type === type);
        if (found.length >= count || Date.now() > deadline) return found;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
