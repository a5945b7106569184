// The SDK's own HTTP/1.1 client on Node: one POST at a time per kept-alive net/tls socket. node:http
// costs far more CPU per send (docs/benchmarks.md, bench:sdk) and the SDK needs only one request
// shape; anything the parser does not understand fails the send (retried, SPEC §4) and drops the socket.
// The answer's bytes are read into one buffer per connection (the socket's `onread`), not through
// the socket's readable stream: no Buffer, 'data' event and stream bookkeeping per read.
import type { Socket } from "node:net";
import { MAX_ERROR_BODY_BYTES, parseRetryAfter, type PostAnswer } from "./retry.ts";

export interface ConnectionBuiltins {
  net: typeof import("node:net");
  tls: typeof import("node:tls");
}

/** Where the requests go, parsed once per URL. */
export interface HttpTarget {
  secure: boolean;
  /** As net.connect wants it: an IPv6 literal without brackets. */
  host: string;
  port: number;
  /** The Host header: the URL's host, with its port when it is not the default one. */
  hostHeader: string;
  /** Path and query, already percent-encoded by URL. */
  path: string;
  /** The TLS server name (not sent for an IP literal). */
  servername: string | undefined;
}

export function httpTargetOf(url: string): HttpTarget {
  const parsed = new URL(url);
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error(`not an http(s) URL: ${parsed.protocol}`);
  const secure = parsed.protocol === "https:";
  const bracketed = parsed.hostname.startsWith("[");
  const host = bracketed ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const isIp = bracketed || /^\d{1,3}(?:\.\d{1,3}){3}$/.test(host);
  return {
    secure,
    host,
    port: parsed.port === "" ? (secure ? 443 : 80) : Number(parsed.port),
    hostHeader: parsed.host,
    path: `${parsed.pathname}${parsed.search}`,
    servername: secure && !isIp ? host : undefined,
  };
}

/** A header value as HTTP allows it (RFC 9110 §5.5: visible ASCII, space, tab): no way to inject a line. */
const HEADER_VALUE = /^[\t\x20-\x7e]*$/;

export interface RequestOptions {
  timeoutMs: number;
  keepProcessAlive: boolean;
  headers: readonly (readonly [string, string])[];
}

/** The answer's head, once parsed. */
interface Head {
  status: number;
  keepAlive: boolean;
  retryAfter: string | null;
  /** Body framing: a length, chunked, or until the server closes (null length, not chunked). */
  contentLength: number | null;
  chunked: boolean;
}

/** Headers bigger than this are not an ingest's answer. */
const MAX_HEAD_BYTES = 64 * 1024;
/** Idle kept-alive connections kept per target (one send in flight per destination, SPEC §4). */
const MAX_IDLE_PER_TARGET = 4;

const CRLF_CRLF = Buffer.from("\r\n\r\n", "latin1");
/** What one read of the socket can take (an ingest's answer is a head and at most a short body). */
const READ_BUFFER_BYTES = 16 * 1024;

/**
 * Reads one answer from bytes as they arrive. `feed` returns the bytes left after the answer
 * once it is complete (any means the server sent more than it should: the connection is not
 * reused), or undefined while more is needed; `end` is the connection closing.
 */
class AnswerParser {
  private head: Head | null = null;
  private pending: Buffer | null = null;
  private bodyLeft = 0;
  /** Chunked state: reading a size line, chunk data, the CRLF after it, or the trailers. */
  private chunkState: "size" | "data" | "data-end" | "trailers" = "size";
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  /** Something arrived at all (a reused connection the server had closed sends nothing). */
  receivedAny = false;

  feed(chunk: Buffer): Buffer | undefined {
    if (chunk.length > 0) this.receivedAny = true;
    let data = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = null;
    for (;;) {
      if (this.head === null) {
        const end = data.indexOf(CRLF_CRLF);
        if (end < 0) {
          if (data.length > MAX_HEAD_BYTES) throw new Error("answer headers too large");
          // The read buffer is reused by the next read: what waits for more is copied.
          this.pending = Buffer.from(data);
          return undefined;
        }
        const head = parseHead(data.toString("latin1", 0, end));
        data = data.subarray(end + 4);
        // 1xx answers (103 Early Hints, a stray 100 Continue) come before the real one.
        if (head.status >= 100 && head.status < 200) continue;
        this.head = head;
        if (head.status === 204 || head.status === 304) return data;
        if (head.chunked) this.chunkState = "size";
        else if (head.contentLength !== null) this.bodyLeft = head.contentLength;
        else this.bodyLeft = Number.POSITIVE_INFINITY; // until the server closes
        if (!head.chunked && this.bodyLeft === 0) return data;
      }
      if (!this.head.chunked) {
        const take = Math.min(this.bodyLeft, data.length);
        this.keep(data.subarray(0, take));
        this.bodyLeft -= take;
        return this.bodyLeft === 0 ? data.subarray(take) : undefined;
      }
      const rest = this.feedChunked(data);
      if (rest !== undefined) return rest;
      return undefined;
    }
  }

  private feedChunked(input: Buffer): Buffer | undefined {
    let data = input;
    for (;;) {
      if (this.chunkState === "data") {
        const take = Math.min(this.bodyLeft, data.length);
        this.keep(data.subarray(0, take));
        this.bodyLeft -= take;
        data = data.subarray(take);
        if (this.bodyLeft > 0) return undefined;
        this.chunkState = "data-end";
      }
      const lineEnd = data.indexOf(10); // \n
      if (lineEnd < 0) {
        if (data.length > MAX_HEAD_BYTES) throw new Error("chunk line too long");
        this.pending = data.length > 0 ? Buffer.from(data) : null;
        return undefined;
      }
      const line = data.toString("latin1", 0, lineEnd).replace(/\r$/, "");
      data = data.subarray(lineEnd + 1);
      if (this.chunkState === "data-end") {
        if (line !== "") throw new Error("malformed chunked body");
        this.chunkState = "size";
      } else if (this.chunkState === "size") {
        const sizeText = line.split(";", 1)[0]!.trim();
        if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new Error("malformed chunk size");
        const size = Number.parseInt(sizeText, 16);
        if (size === 0) this.chunkState = "trailers";
        else {
          this.bodyLeft = size;
          this.chunkState = "data";
        }
      } else if (line === "") {
        return data; // the empty line after the trailers: the answer is complete
      }
    }
  }

  private keep(bytes: Buffer): void {
    // Only an error answer's body is read, and only its start (SPEC §3's `{"error", "code"}`).
    if (this.head === null || this.head.status < 400 || this.keptBytes >= MAX_ERROR_BODY_BYTES || bytes.length === 0) return;
    const part = bytes.subarray(0, MAX_ERROR_BODY_BYTES - this.keptBytes);
    this.kept.push(Buffer.from(part));
    this.keptBytes += part.length;
  }

  /** The connection ended: complete if the body ran to the close, else a failure. */
  endIsCompletion(): boolean {
    return this.head !== null && !this.head.chunked && this.head.contentLength === null && this.bodyLeft === Number.POSITIVE_INFINITY;
  }

  get reusable(): boolean {
    return this.head !== null && this.head.keepAlive && (this.head.chunked || this.head.contentLength !== null || this.head.status === 204 || this.head.status === 304);
  }

  answer(): PostAnswer {
    const head = this.head!;
    return {
      status: head.status,
      retryAfterMs: parseRetryAfter(head.retryAfter, Date.now()),
      errorBody: head.status >= 400 ? Buffer.concat(this.kept).toString("utf8") : null,
    };
  }
}

function parseHead(text: string): Head {
  const lines = text.split("\r\n");
  const statusLine = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0]!);
  if (!statusLine) throw new Error("not an HTTP/1.x answer");
  const http10 = statusLine[1] === "0";
  const head: Head = { status: Number(statusLine[2]), keepAlive: !http10, retryAfter: null, contentLength: null, chunked: false };
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error("malformed answer header");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-length") {
      if (!/^\d{1,15}$/.test(value) || (head.contentLength !== null && head.contentLength !== Number(value))) throw new Error("malformed Content-Length");
      head.contentLength = Number(value);
    } else if (name === "transfer-encoding") {
      const codings = value.toLowerCase().split(",").map((coding) => coding.trim());
      // Chunked must be the last coding (RFC 9112 §6.3); anything else cannot be framed here.
      if (codings[codings.length - 1] !== "chunked") throw new Error(`unsupported Transfer-Encoding: ${value}`);
      head.chunked = true;
    } else if (name === "connection") {
      const tokens = value.toLowerCase().split(",").map((token) => token.trim());
      if (tokens.includes("close")) head.keepAlive = false;
      else if (http10 && tokens.includes("keep-alive")) head.keepAlive = true;
    } else if (name === "retry-after") {
      head.retryAfter = value;
    }
  }
  // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3); such an answer is not reused.
  if (head.chunked && head.contentLength !== null) {
    head.contentLength = null;
    head.keepAlive = false;
  }
  return head;
}

/**
 * net's and tls's `onread` (tls takes it too, though @types/node's tls options
 * leave it out): every read lands in `buffer`, and `callback` gets how many bytes it holds.
 */
type OnRead = { buffer: Buffer; callback: (bytes: number, buffer: Uint8Array) => boolean };

/** One socket and whatever request it carries. */
class Connection {
  readonly socket: Socket;
  /** Has carried a request already: a failure before any byte of the answer may be a stale keep-alive. */
  used = false;
  private onAnswerBytes: ((chunk: Buffer) => void) | null = null;
  private onGone: ((error: Error) => void) | null = null;
  closed = false;

  /** `connect` opens the socket with the read callback it is given (net/tls `onread`). */
  constructor(connect: (onread: OnRead) => Socket, onIdleLoss: (connection: Connection) => void) {
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const socket = connect({
      buffer,
      callback: (bytes) => {
        // The bytes are valid until this returns: the parser copies what it keeps.
        if (this.onAnswerBytes) this.onAnswerBytes(buffer.subarray(0, bytes));
        else socket.destroy(); // bytes nobody asked for: this connection is not trusted again
        return true; // keep reading
      },
    });
    this.socket = socket;
    socket.setNoDelay(true);
    const gone = (error: Error) => {
      if (this.closed) return;
      this.closed = true;
      const listener = this.onGone;
      if (listener) listener(error);
      else onIdleLoss(this);
    };
    socket.on("error", (error: Error) => gone(error));
    socket.on("close", () => gone(new Error("connection closed before the answer")));
    socket.on("end", () => socket.destroy());
  }

  /** Routes the socket's bytes and its end to one request (null: idle again). */
  bind(onBytes: ((chunk: Buffer) => void) | null, onGone: ((error: Error) => void) | null): void {
    this.onAnswerBytes = onBytes;
    this.onGone = onGone;
  }
}

/** The connections to one target: idle ones to reuse, at most MAX_IDLE_PER_TARGET kept. */
export class HttpConnectionPool {
  private readonly idle: Connection[] = [];
  private readonly target: HttpTarget;
  private readonly builtins: ConnectionBuiltins;
  /** Connections opened so far (for tests: keep-alive means one for many requests). */
  opened = 0;

  constructor(target: HttpTarget, builtins: ConnectionBuiltins) {
    this.target = target;
    this.builtins = builtins;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  private open(): Connection {
    const { secure, host, port, servername } = this.target;
    this.opened++;
    return new Connection(
      (onread) =>
        secure
          ? this.builtins.tls.connect({ host, port, servername, ALPNProtocols: ["http/1.1"], onread } as import("node:tls").ConnectionOptions)
          : this.builtins.net.connect({ host, port, onread }),
      (lost) => this.forget(lost),
    );
  }

  private forget(connection: Connection): void {
    const at = this.idle.indexOf(connection);
    if (at >= 0) this.idle.splice(at, 1);
  }

  /**
   * POSTs `body` and resolves with the answer, or rejects on a network failure, a timeout or an
   * answer it cannot read. A reused connection that fails before any byte of the answer (the
   * server closed it while idle) is given up and the request goes once more on a fresh one.
   */
  post(body: string, options: RequestOptions): Promise<PostAnswer> {
    let head = `POST ${this.target.path} HTTP/1.1\r\nhost: ${this.target.hostHeader}\r\n`;
    for (const [name, value] of options.headers) {
      if (!HEADER_VALUE.test(value)) throw new TypeError(`invalid character in the ${name} header`);
      head += `${name}: ${value}\r\n`;
    }
    const request = `${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    return new Promise<PostAnswer>((resolve, reject) => {
      let settled = false;
      let current: Connection | null = null;
      const timer = setTimeout(() => {
        fail(new Error(`send timed out after ${options.timeoutMs} ms`));
      }, options.timeoutMs);
      if (!options.keepProcessAlive) timer.unref();
      const finish = () => {
        settled = true;
        clearTimeout(timer);
      };
      const fail = (error: Error) => {
        if (settled) return;
        finish();
        if (current) {
          current.bind(null, null);
          current.socket.destroy();
        }
        reject(error);
      };
      const attempt = (connection: Connection, mayRetry: boolean) => {
        current = connection;
        const parser = new AnswerParser();
        const complete = (extra: Buffer | undefined) => {
          if (settled) return;
          finish();
          connection.bind(null, null);
          const reuse = parser.reusable && (extra === undefined || extra.length === 0) && !connection.closed;
          if (reuse) this.release(connection);
          else connection.socket.destroy();
          resolve(parser.answer());
        };
        connection.bind(
          (chunk) => {
            if (settled) return;
            let rest: Buffer | undefined;
            try {
              rest = parser.feed(chunk);
            } catch (error) {
              fail(error as Error);
              return;
            }
            if (rest !== undefined) complete(rest);
          },
          (error) => {
            if (settled) return;
            if (parser.endIsCompletion()) return complete(undefined);
            if (mayRetry && !parser.receivedAny) {
              connection.bind(null, null);
              return attempt(this.open(), false);
            }
            fail(error);
          },
        );
        if (options.keepProcessAlive) connection.socket.ref();
        else connection.socket.unref();
        connection.used = true;
        connection.socket.write(request);
      };
      const reusable = this.idle.pop();
      attempt(reusable ?? this.open(), reusable !== undefined);
    });
  }

  private release(connection: Connection): void {
    // Idle, it must never keep the process alive (SPEC §4).
    connection.socket.unref();
    if (this.idle.length >= MAX_IDLE_PER_TARGET) {
      connection.socket.destroy();
      return;
    }
    this.idle.push(connection);
  }

  /** Closes every idle connection (tests). */
  closeIdle(): void {
    for (const connection of this.idle.splice(0)) connection.socket.destroy();
  }
}
