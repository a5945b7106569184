// Sends one batch to the ingest (SPEC §1.1) without holding the process open (SPEC §4): an unref'd
// socket of its own on Node (./http-connection.ts), fetch elsewhere.
import { HttpConnectionPool, httpTargetOf, type ConnectionBuiltins } from "./http-connection.ts";
import { MAX_ERROR_BODY_BYTES, parseRetryAfter, type PostAnswer } from "./retry.ts";

export interface SendOptions {
  /** Abandon the send after this long; the batch is then dropped (SPEC §4: 10 s). */
  timeoutMs: number;
  /** The exit flush must keep the process alive until it ends; ordinary sends must not. */
  keepProcessAlive: boolean;
  /** Sent as `Idempotency-Key`: the same on every attempt of one batch (SPEC §1.1, §4). */
  idempotencyKey?: string;
}

/** Resolves with the HTTP status (and Retry-After), or rejects on a network failure or timeout. */
export type PostJson = (url: string, key: string, body: string, options: SendOptions) => Promise<number | PostAnswer>;

function requestHeaders(key: string, options: SendOptions): Record<string, string> {
  const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${key}` };
  if (options.idempotencyKey) headers["idempotency-key"] = options.idempotencyKey;
  return headers;
}

type Unrefable = { unref?: () => unknown };

function unrefTimer(timer: unknown): void {
  (timer as Unrefable | undefined)?.unref?.();
}

let nodeBuiltins: ConnectionBuiltins | null | undefined;

/** node:net and node:tls when running on Node (never in workerd, whose fetch is the native path). */
function loadNodeBuiltins(): ConnectionBuiltins | null {
  if (nodeBuiltins !== undefined) return nodeBuiltins;
  nodeBuiltins = null;
  try {
    const nav = (globalThis as { navigator?: { userAgent?: string } }).navigator;
    const proc = (globalThis as {
      process?: { release?: { name?: string }; getBuiltinModule?: (id: string) => unknown };
    }).process;
    const isWorkerd = nav?.userAgent === "Cloudflare-Workers";
    if (!isWorkerd && proc?.release?.name === "node" && typeof proc.getBuiltinModule === "function") {
      const net = proc.getBuiltinModule("node:net") as ConnectionBuiltins["net"] | undefined;
      const tls = proc.getBuiltinModule("node:tls") as ConnectionBuiltins["tls"] | undefined;
      if (net && tls) nodeBuiltins = { net, tls };
    }
  } catch {
    nodeBuiltins = null;
  }
  return nodeBuiltins;
}

/** One pool of kept-alive connections per ingest URL (one destination sends many batches). */
const pools = new Map<string, HttpConnectionPool>();

function poolFor(builtins: ConnectionBuiltins, url: string): HttpConnectionPool {
  let pool = pools.get(url);
  if (!pool) {
    pool = new HttpConnectionPool(httpTargetOf(url), builtins);
    pools.set(url, pool);
  }
  return pool;
}

const postWithConnection = (builtins: ConnectionBuiltins): PostJson => (url, key, body, options) =>
  poolFor(builtins, url).post(body, {
    timeoutMs: options.timeoutMs,
    keepProcessAlive: options.keepProcessAlive,
    headers: Object.entries(requestHeaders(key, options)),
  });

const postWithFetch: PostJson = async (url, key, body, options) => {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  if (!options.keepProcessAlive) unrefTimer(timer);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: requestHeaders(key, options),
      body,
      signal: controller.signal,
    });
    // Drain so the connection can be reused; the ingest answers 202 with an empty body, an error
    // with `{"error", "code"}` (SPEC §3), whose first 2 KiB name the cause of a drop.
    const bytes = await response.arrayBuffer().catch(() => null);
    const errorBody =
      response.status >= 400 && bytes !== null ? new TextDecoder().decode(new Uint8Array(bytes, 0, Math.min(bytes.byteLength, MAX_ERROR_BODY_BYTES))) : null;
    return { status: response.status, retryAfterMs: parseRetryAfter(response.headers.get("retry-after"), Date.now()), errorBody };
  } finally {
    clearTimeout(timer);
  }
};

/** The poster for this runtime: the SDK's own connection on Node, fetch everywhere else. */
export function defaultPostJson(): PostJson {
  const builtins = loadNodeBuiltins();
  return builtins ? postWithConnection(builtins) : postWithFetch;
}

export { postWithFetch };
