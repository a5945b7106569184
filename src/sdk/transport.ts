// Sends one batch to the ingest (SPEC §1.1) without ever holding the process open (SPEC §4).
// On Node it uses node:http(s) so the socket can be unref'd; elsewhere (workerd) it uses fetch.
// The batch's Idempotency-Key goes with every attempt, and Retry-After comes back (./retry.ts).
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

interface NodeBuiltins {
  http: typeof import("node:http");
  https: typeof import("node:https");
}

let nodeBuiltins: NodeBuiltins | null | undefined;

/** node:http and node:https when running on Node (never in workerd, whose fetch is the native path). */
function loadNodeBuiltins(): NodeBuiltins | null {
  if (nodeBuiltins !== undefined) return nodeBuiltins;
  nodeBuiltins = null;
  try {
    const nav = (globalThis as { navigator?: { userAgent?: string } }).navigator;
    const proc = (globalThis as {
      process?: { release?: { name?: string }; getBuiltinModule?: (id: string) => unknown };
    }).process;
    const isWorkerd = nav?.userAgent === "Cloudflare-Workers";
    if (!isWorkerd && proc?.release?.name === "node" && typeof proc.getBuiltinModule === "function") {
      const http = proc.getBuiltinModule("node:http") as NodeBuiltins["http"] | undefined;
      const https = proc.getBuiltinModule("node:https") as NodeBuiltins["https"] | undefined;
      if (http && https) nodeBuiltins = { http, https };
    }
  } catch {
    nodeBuiltins = null;
  }
  return nodeBuiltins;
}

const agents = new Map<string, import("node:http").Agent>();

function agentFor(builtins: NodeBuiltins, protocol: string): import("node:http").Agent {
  let agent = agents.get(protocol);
  if (!agent) {
    // Keep-alive reuses the connection between flushes; Node unrefs idle pooled sockets itself.
    agent = protocol === "https:" ? new builtins.https.Agent({ keepAlive: true }) : new builtins.http.Agent({ keepAlive: true });
    agents.set(protocol, agent);
  }
  return agent;
}

/** A destination's URL, parsed once (one destination sends many batches). */
interface Target {
  protocol: string;
  hostname: string;
  port: string;
  path: string;
}
const targets = new Map<string, Target>();

function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    // IPv6 literals come bracketed from URL; node:http wants them bare.
    const hostname = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
    target = { protocol: parsed.protocol, hostname, port: parsed.port, path: `${parsed.pathname}${parsed.search}` };
    targets.set(url, target);
  }
  return target;
}

const postWithNodeHttp = (builtins: NodeBuiltins): PostJson => (url, key, body, options) =>
  new Promise<PostAnswer>((resolve, reject) => {
    const target = targetOf(url);
    const client = target.protocol === "https:" ? builtins.https : builtins.http;
    let settled = false;
    const finish = (error: Error | null, answer?: PostAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(answer ?? { status: 0, retryAfterMs: null });
    };
    const request = client.request(
      {
        protocol: target.protocol,
        hostname: target.hostname,
        port: target.port === "" ? undefined : target.port,
        path: target.path,
        method: "POST",
        agent: agentFor(builtins, target.protocol),
        headers: { ...requestHeaders(key, options), "content-length": String(Buffer.byteLength(body)) },
      },
      (response) => {
        const retryAfter = response.headers["retry-after"];
        const status = response.statusCode ?? 0;
        // An error answer's body names the cause (`{"error", "code"}`, SPEC §3): its first 2 KiB are
        // kept for the line that reports payloads given up; a 2xx body (empty) is only drained.
        const chunks: Buffer[] = [];
        let kept = 0;
        if (status >= 400) {
          response.on("data", (chunk: Buffer) => {
            if (kept >= MAX_ERROR_BODY_BYTES) return;
            chunks.push(chunk);
            kept += chunk.length;
          });
        }
        response.on("error", (error) => finish(error));
        response.on("end", () =>
          finish(null, {
            status,
            retryAfterMs: parseRetryAfter(typeof retryAfter === "string" ? retryAfter : null, Date.now()),
            errorBody: status >= 400 ? Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY_BYTES).toString("utf8") : null,
          }),
        );
        if (status < 400) response.resume();
      },
    );
    const timer = setTimeout(() => {
      request.destroy(new Error(`send timed out after ${options.timeoutMs} ms`));
      finish(new Error("timeout"));
    }, options.timeoutMs);
    if (!options.keepProcessAlive) {
      unrefTimer(timer);
      // A reused keep-alive socket is ref'd again by the agent; unref it for this request.
      request.on("socket", (socket) => socket.unref());
    }
    request.on("error", (error) => finish(error));
    request.end(body);
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

/** The poster for this runtime: node:http on Node, fetch everywhere else. */
export function defaultPostJson(): PostJson {
  const builtins = loadNodeBuiltins();
  return builtins ? postWithNodeHttp(builtins) : postWithFetch;
}

export { postWithFetch };
