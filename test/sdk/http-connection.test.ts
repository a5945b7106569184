// The SDK's own HTTP/1.1 client (src/sdk/http-connection.ts) against real servers on loopback:
// node:http for the ordinary answer, and raw TCP servers that answer byte for byte as a proxy or
// another server might (split packets, Content-Length, chunked with extensions and trailers, 1xx
// interim answers, read-to-close, Connection: close, garbage, silence, a kept-alive connection
// closed while idle).
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import net, { type AddressInfo, type Server, type Socket } from "node:net";
import tls from "node:tls";
import { afterEach, describe, expect, test } from "vitest";
import { HttpConnectionPool, httpTargetOf } from "../../src/sdk/http-connection.ts";
import { MAX_ERROR_BODY_BYTES } from "../../src/sdk/retry.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const builtins = { net, tls };
const options = (timeoutMs = 3_000) => ({
  timeoutMs,
  keepProcessAlive: true,
  headers: [
    ["content-type", "application/json"],
    ["authorization", "Bearer mp_live_test"],
  ] as [string, string][],
});

/** A raw TCP server: `answer` is called with the socket and the request text once the request has fully arrived. */
async function rawServer(answer: (socket: Socket, request: string, index: number) => void): Promise<{ url: string; connections: () => number; requests: string[] }> {
  let connections = 0;
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    let pending = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = pending.toString("latin1", 0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        const request = pending.toString("utf8", 0, end + 4 + length);
        pending = pending.subarray(end + 4 + length);
        requests.push(request);
        answer(socket, request, requests.length - 1);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/ingest`, connections: () => connections, requests };
}

/** Writes `text` one byte per packet, so every parser state sees a boundary. */
async function writeBytewise(socket: Socket, text: string): Promise<void> {
  for (const byte of Buffer.from(text, "utf8")) {
    socket.write(Buffer.of(byte));
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const poolFor = (url: string) => new HttpConnectionPool(httpTargetOf(url), builtins);

describe("against node:http", () => {
  test("the request arrives intact, with its headers; one kept-alive connection carries many", async () => {
    const seen: { headers: IncomingMessage["headers"]; body: string; url: string | undefined; method: string | undefined }[] = [];
    let connections = 0;
    const server = createHttpServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        seen.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8"), url: request.url, method: request.method });
        response.writeHead(202).end();
      });
    });
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
    const port = (server.address() as AddressInfo).port;
    const pool = poolFor(`http://127.0.0.1:${port}/v1/ingest?x=1`);
    const body = JSON.stringify({ batch: [{ v: 1, type: "call", note: "café ☕ \u{1F600}" }] });
    for (let i = 0; i < 5; i++) {
      await expect(pool.post(body, options())).resolves.toEqual({ status: 202, retryAfterMs: null, errorBody: null });
    }
    expect(connections).toBe(1);
    expect(pool.opened).toBe(1);
    expect(seen).toHaveLength(5);
    expect(seen[0]!.method).toBe("POST");
    expect(seen[0]!.url).toBe("/v1/ingest?x=1");
    expect(seen[0]!.body).toBe(body);
    expect(seen[0]!.headers).toMatchObject({
      host: `127.0.0.1:${port}`,
      "content-type": "application/json",
      authorization: "Bearer mp_live_test",
      "content-length": String(Buffer.byteLength(body)),
    });
  });

  test("an error answer's body is read (its first 2 KiB) and Retry-After comes back in ms", async () => {
    const server = createHttpServer((request, response) => {
      request.resume();
      request.on("end", () => response.writeHead(503, { "retry-after": "7", "content-type": "application/json" }).end('{"error":"busy","code":"UNAVAILABLE"}'));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
    const pool = poolFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/ingest`);
    await expect(pool.post("{}", options())).resolves.toEqual({ status: 503, retryAfterMs: 7_000, errorBody: '{"error":"busy","code":"UNAVAILABLE"}' });
  });
});

describe("answers framed every way HTTP/1.1 allows", () => {
  test("Content-Length, delivered one byte at a time; the connection is reused", async () => {
    const ingest = await rawServer((socket, _request, index) => {
      void writeBytewise(socket, index === 0 ? 'HTTP/1.1 400 Bad Request\r\nContent-Length: 15\r\n\r\n{"error":"no"}\n' : "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
    });
    const pool = poolFor(ingest.url);
    await expect(pool.post("{}", options())).resolves.toEqual({ status: 400, retryAfterMs: null, errorBody: '{"error":"no"}\n' });
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
    expect(ingest.connections()).toBe(1);
  });

  test("chunked with extensions and trailers, one byte at a time; the connection is reused", async () => {
    const ingest = await rawServer((socket) => {
      void writeBytewise(
        socket,
        'HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\nRetry-After: 2\r\n\r\n5;name=value\r\n{"err\r\n0B\r\nor":"slow"}\r\n0\r\nX-Trailer: yes\r\n\r\n',
      );
    });
    const pool = poolFor(ingest.url);
    await expect(pool.post("{}", options())).resolves.toEqual({ status: 429, retryAfterMs: 2_000, errorBody: '{"error":"slow"}' });
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 429 });
    expect(ingest.connections()).toBe(1);
  });

  test("1xx interim answers before the real one are skipped", async () => {
    const ingest = await rawServer((socket) => {
      socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
    });
    await expect(poolFor(ingest.url).post("{}", options())).resolves.toMatchObject({ status: 202 });
  });

  test("204 has no body even with a Content-Length; the next answer on the connection is read as its own", async () => {
    const ingest = await rawServer((socket, _request, index) => {
      socket.write(index === 0 ? "HTTP/1.1 204 No Content\r\n\r\n" : "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
    });
    const pool = poolFor(ingest.url);
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 204 });
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
    expect(ingest.connections()).toBe(1);
  });

  test("no length (HTTP/1.0): the body runs to the close, and the connection is not reused", async () => {
    const ingest = await rawServer((socket) => {
      socket.end('HTTP/1.0 500 Internal Server Error\r\n\r\n{"error":"internal error"}');
    });
    const pool = poolFor(ingest.url);
    await expect(pool.post("{}", options())).resolves.toEqual({ status: 500, retryAfterMs: null, errorBody: '{"error":"internal error"}' });
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 500 });
    expect(ingest.connections()).toBe(2);
  });

  test("Connection: close is honoured: the next request opens a new connection", async () => {
    const ingest = await rawServer((socket) => {
      socket.write("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    const pool = poolFor(ingest.url);
    await pool.post("{}", options());
    await pool.post("{}", options());
    expect(ingest.connections()).toBe(2);
    expect(pool.idleCount).toBe(0);
  });

  test.each([
    [MAX_ERROR_BODY_BYTES - 1, MAX_ERROR_BODY_BYTES - 1],
    [MAX_ERROR_BODY_BYTES, MAX_ERROR_BODY_BYTES],
    [MAX_ERROR_BODY_BYTES + 1, MAX_ERROR_BODY_BYTES],
    [100_000, MAX_ERROR_BODY_BYTES],
  ])("an error body of %i bytes keeps %i of them, and the whole body is still consumed", async (bodyBytes, kept) => {
    const ingest = await rawServer((socket) => {
      socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Length: ${bodyBytes}\r\n\r\n${"e".repeat(bodyBytes)}`);
    });
    const pool = poolFor(ingest.url);
    const answer = await pool.post("{}", options());
    expect(answer.errorBody).toHaveLength(kept);
    await pool.post("{}", options()); // the next answer is not read out of the rest of this body
    expect(ingest.connections()).toBe(1);
  });
});

describe("failures fail the send, and a connection in doubt is never reused", () => {
  test("an answer that is not HTTP/1.x", async () => {
    const ingest = await rawServer((socket) => socket.write("SSH-2.0-OpenSSH_9.6\r\n\r\n"));
    const pool = poolFor(ingest.url);
    await expect(pool.post("{}", options())).rejects.toThrow("not an HTTP/1.x answer");
    expect(pool.idleCount).toBe(0);
  });

  test.each([
    ["a Content-Length that is not a number", "HTTP/1.1 202 Accepted\r\nContent-Length: ten\r\n\r\n", "malformed Content-Length"],
    ["two different Content-Lengths", "HTTP/1.1 202 Accepted\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "malformed Content-Length"],
    ["a coding it cannot frame", "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: gzip\r\n\r\n", "unsupported Transfer-Encoding"],
    ["a chunk size that is not hex", "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"],
    ["a header line without a colon", "HTTP/1.1 202 Accepted\r\nnonsense\r\n\r\n", "malformed answer header"],
  ])("%s", async (_name, answer, message) => {
    const ingest = await rawServer((socket) => socket.write(answer));
    await expect(poolFor(ingest.url).post("{}", options())).rejects.toThrow(message);
  });

  test("bytes after a complete answer: that answer counts, the connection is closed", async () => {
    const ingest = await rawServer((socket) => socket.write("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\nHTTP/1.1 202 Accepted\r\n"));
    const pool = poolFor(ingest.url);
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
    expect(pool.idleCount).toBe(0);
    await pool.post("{}", options());
    expect(ingest.connections()).toBe(2);
  });

  test("headers that never end (over 64 KiB) fail", async () => {
    const ingest = await rawServer((socket) => socket.write(`HTTP/1.1 202 Accepted\r\nX-Long: ${"a".repeat(70_000)}`));
    await expect(poolFor(ingest.url).post("{}", options())).rejects.toThrow("answer headers too large");
  });

  test("silence: the send times out and the connection is cut", async () => {
    let closed = false;
    const ingest = await rawServer((socket) => socket.on("close", () => (closed = true)));
    await expect(poolFor(ingest.url).post("{}", options(200))).rejects.toThrow("send timed out after 200 ms");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(true);
  });

  test("a connection refused rejects", async () => {
    const ingest = await rawServer(() => undefined);
    const port = new URL(ingest.url).port;
    await Promise.all(closers.splice(0).map((close) => close()));
    await expect(poolFor(`http://127.0.0.1:${port}/v1/ingest`).post("{}", options())).rejects.toThrow(/ECONNREFUSED/);
  });

  test("a fresh connection closed before any answer rejects, without a second try", async () => {
    const ingest = await rawServer((socket) => socket.destroy());
    await expect(poolFor(ingest.url).post("{}", options())).rejects.toThrow();
    expect(ingest.requests).toHaveLength(1);
  });

  test("a kept-alive connection the server closed while idle: the request goes on a fresh one", async () => {
    const ingest = await rawServer((socket) => {
      socket.write("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
      setTimeout(() => socket.destroy(), 20); // the server's idle timeout
    });
    const pool = poolFor(ingest.url);
    await pool.post("{}", options());
    await new Promise((resolve) => setTimeout(resolve, 100));
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
    expect(ingest.connections()).toBe(2);
  });

  test("a reused connection closed after the request arrived but before any answer: sent once more on a fresh one", async () => {
    const ingest = await rawServer((socket, _request, index) => {
      if (index === 1) socket.destroy(); // the race with the server's idle timeout
      else socket.write("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
    });
    const pool = poolFor(ingest.url);
    await pool.post('{"n":1}', options());
    await expect(pool.post('{"n":2}', options())).resolves.toMatchObject({ status: 202 });
    expect(ingest.requests.map((request) => request.slice(request.indexOf("\r\n\r\n") + 4))).toEqual(['{"n":1}', '{"n":2}', '{"n":2}']);
    expect(ingest.connections()).toBe(2);
  });

  test("a header value with a line break is refused before anything is written", async () => {
    const ingest = await rawServer(() => undefined);
    const pool = poolFor(ingest.url);
    expect(() => pool.post("{}", { ...options(), headers: [["authorization", "Bearer x\r\nX-Injected: 1"]] })).toThrow(TypeError);
    expect(pool.opened).toBe(0);
  });
});

describe("targets", () => {
  test.each([
    ["http://127.0.0.1:8787/v1/ingest", { secure: false, host: "127.0.0.1", port: 8787, hostHeader: "127.0.0.1:8787", path: "/v1/ingest", servername: undefined }],
    ["https://ingest.example.com/base/v1/ingest?a=b", { secure: true, host: "ingest.example.com", port: 443, hostHeader: "ingest.example.com", path: "/base/v1/ingest?a=b", servername: "ingest.example.com" }],
    ["http://example.com/v1/ingest", { secure: false, host: "example.com", port: 80, hostHeader: "example.com", path: "/v1/ingest", servername: undefined }],
    ["https://[::1]:8443/v1/ingest", { secure: true, host: "::1", port: 8443, hostHeader: "[::1]:8443", path: "/v1/ingest", servername: undefined }],
    ["https://10.0.0.1/v1/ingest", { secure: true, host: "10.0.0.1", port: 443, hostHeader: "10.0.0.1", path: "/v1/ingest", servername: undefined }],
  ])("%s", (url, target) => {
    expect(httpTargetOf(url)).toEqual(target);
  });

  test("not http(s): refused", () => {
    expect(() => httpTargetOf("ftp://example.com/")).toThrow("not an http(s) URL");
  });

  test("over IPv6 loopback", async () => {
    const server = createHttpServer((request, response) => {
      request.resume();
      request.on("end", () => response.writeHead(202).end());
    });
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(0, "::1", () => resolve(true));
    });
    if (!listening) return; // no IPv6 loopback on this machine: nothing to connect to
    closers.push(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
    const pool = poolFor(`http://[::1]:${(server.address() as AddressInfo).port}/v1/ingest`);
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
  });
});

describe("over TLS (https:// destinations, as the deployed ingest is)", () => {
  const fixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));
  const cert = fixture("localhost.crt");
  /** tls.connect trusting the fixture's self-signed certificate, and nothing else changed. */
  const trusting = { net, tls: { ...tls, connect: (o: tls.ConnectionOptions) => tls.connect({ ...o, ca: cert }) } as typeof tls };

  async function httpsServer() {
    const seen: { body: string; servername: string | false | null; alpn: string | false | null }[] = [];
    const server = createHttpsServer({ key: fixture("localhost.key"), cert, ALPNProtocols: ["http/1.1"] }, (req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        const socket = req.socket as tls.TLSSocket;
        seen.push({ body, servername: socket.servername, alpn: socket.alpnProtocol });
        res.writeHead(202, { "content-type": "application/json" }).end('{"accepted":1}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
    return { port: (server.address() as AddressInfo).port, seen };
  }

  test("posts over TLS with the host as server name, reads the answer, and keeps the connection for the next", async () => {
    const { port, seen } = await httpsServer();
    const pool = new HttpConnectionPool(httpTargetOf(`https://localhost:${port}/v1/ingest`), trusting);
    const body = JSON.stringify({ batch: Array.from({ length: 30 }, (_, i) => ({ v: 1, type: "call", n: i, pad: "é".repeat(300) })) });
    await expect(pool.post(body, options())).resolves.toEqual({ status: 202, retryAfterMs: null, errorBody: null });
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
    expect(seen.map((s) => s.body)).toEqual([body, "{}"]);
    expect(seen[0]).toMatchObject({ servername: "localhost", alpn: "http/1.1" });
    expect(pool.opened).toBe(1);
  });

  test("sends no server name to an IP literal", async () => {
    const { port, seen } = await httpsServer();
    const pool = new HttpConnectionPool(httpTargetOf(`https://127.0.0.1:${port}/v1/ingest`), trusting);
    await expect(pool.post("{}", options())).resolves.toMatchObject({ status: 202 });
    expect(seen[0]!.servername).toBe(false);
  });

  test("refuses a certificate it cannot verify: the send fails, nothing is written", async () => {
    const { port, seen } = await httpsServer();
    const pool = new HttpConnectionPool(httpTargetOf(`https://localhost:${port}/v1/ingest`), builtins);
    await expect(pool.post("{}", options())).rejects.toThrow(/self[- ]signed|certificate/i);
    expect(seen).toEqual([]);
  });
});
