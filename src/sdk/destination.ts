// One buffer and one session table per process per destination (endpoint + key), never per
// watch() call: a streamable-HTTP server builds a fresh server object per request (SPEC §4).
import { DEFAULT_BUFFER_TUNING, PayloadBuffer, type BufferTuning } from "./buffer.ts";
import { EXIT_FLUSH_TIMEOUT_MS, INGEST_PATH, SEND_TIMEOUT_MS } from "./constants.ts";
import { toStderr } from "./debug.ts";
import { AgreementTracker } from "./agreement.ts";
import { hashOfArgsText } from "./args-hash.ts";
import { batchJson } from "./call-payload.ts";
import { newSessionId, SessionTable } from "./session.ts";
import { defaultPostJson, type PostJson } from "./transport.ts";
import { describeOutcome, outcomeWithCause, type SendOutcome } from "./retry.ts";
import { DropReporter, realReportClock, type ReportClock } from "./drops.ts";

/** Client names by transport session id, so a fresh server object per request finds its client. */
const MAX_REMEMBERED_TRANSPORT_SESSIONS = 1_000;
/** Clients whose tool list went out under the process's own id (no session known), remembered. */
const MAX_SESSIONLESS_STARTUP_CLIENTS = 1_000;
/**
 * Calls whose args_hash waits for the next send, at most this many and this many UTF-16 units of
 * canonical text in all: past either, the waiting digests are taken at once, so a send held up
 * (in flight for up to 10 s, or failing) never makes the texts pile up.
 */
const MAX_UNHASHED_CALLS = 100;
const MAX_UNHASHED_CHARS = 64 * 1024;

/** A call payload whose `args_hash` is filled in from `text` before it is sent. */
interface UnhashedCall {
  payload: { args_hash: string };
  text: string | null;
}

export class Destination {
  private processSession: string | undefined;
  /**
   * The process's own id, for what must name a session when none is known (SPEC §1.2). Drawn at first
   * use: workerd refuses random values at module scope, where watch() may run.
   */
  get processSessionId(): string {
    this.processSession ??= newSessionId();
    return this.processSession;
  }
  readonly ingestUrl: string;
  readonly buffer: PayloadBuffer;
  /** Every payload this destination gives up, counted and reported on stderr whatever `debug` says (SPEC §3, §4). */
  readonly drops: DropReporter;
  readonly agreement = new AgreementTracker();
  /** The conversations of this destination (SPEC §4 "Sessions are conversations"). */
  readonly sessions: SessionTable;
  /** Any watch() of this destination asked for debug output. */
  debug = false;
  private readonly clientByTransportSession = new Map<string, string>();
  private readonly sessionlessStartupClients = new Set<string>();
  private unhashed: UnhashedCall[] = [];
  private unhashedChars = 0;

  readonly endpoint: string;
  readonly key: string;

  constructor(endpoint: string, key: string, post: PostJson, tuning: BufferTuning, sendTimeoutMs: number, reportClock: ReportClock = realReportClock) {
    this.endpoint = endpoint;
    this.key = key;
    this.ingestUrl = endpoint + INGEST_PATH;
    this.sessions = new SessionTable(key);
    this.drops = new DropReporter(destinationName(this.ingestUrl, key), toStderr, reportClock);
    this.buffer = new PayloadBuffer(async (batch, final, idempotencyKey) => {
      this.hashWaitingArgs();
      const body = batchJson(batch);
      if (this.debug) {
        toStderr(`sending ${batch.length} payload(s) to ${this.ingestUrl}`);
        for (const payload of batch) toStderr(JSON.stringify(payload));
      }
      try {
        const answer = await post(this.ingestUrl, this.key, body, {
          timeoutMs: final ? Math.min(sendTimeoutMs, EXIT_FLUSH_TIMEOUT_MS) : sendTimeoutMs,
          keepProcessAlive: final,
          idempotencyKey,
        });
        // 5xx and 429 are retried by the buffer with the same key; any other 4xx drops the batch (SPEC §4).
        const outcome = outcomeWithCause(answer);
        if (this.debug) toStderr(describeOutcome(answer, outcome, batch.length));
        return outcome;
      } catch (error) {
        // A network error or a timeout: retried like a 5xx (SPEC §4).
        const cause = `send failed (${describe(error)})`;
        if (this.debug) toStderr(`${cause}; ${batch.length} payload(s) to retry`);
        return { retry: true, retryAfterMs: null, cause } satisfies SendOutcome;
      }
    }, tuning, (reason, payloads, reportNow) => this.drops.record(reason, payloads, reportNow));
  }

  rememberClient(transportSessionId: string, clientName: string): void {
    const names = this.clientByTransportSession;
    names.delete(transportSessionId);
    names.set(transportSessionId, clientName);
    if (names.size > MAX_REMEMBERED_TRANSPORT_SESSIONS) {
      const oldest = names.keys().next().value;
      if (oldest !== undefined) names.delete(oldest);
    }
  }

  /**
   * Whether a client's tool list still has to go out under the process's id (no session known):
   * once per client and process, so a stateless server does not resend it with every initialize.
   */
  claimSessionlessStartup(clientName: string): boolean {
    const sent = this.sessionlessStartupClients;
    if (sent.has(clientName)) return false;
    if (sent.size >= MAX_SESSIONLESS_STARTUP_CLIENTS) sent.clear();
    sent.add(clientName);
    return true;
  }

  clientOf(transportSessionId: string): string | undefined {
    return this.clientByTransportSession.get(transportSessionId);
  }

  enqueue(payload: object): void {
    this.buffer.add(payload);
  }

  /**
   * Queues a call whose `args_hash` is taken from `argsText` when its batch is sent (args-hash.ts): in a
   * row the digests cost the call less. No payload is sent before its digest is in.
   */
  enqueueCall<P extends { args_hash: string }>(payload: P, argsText: string | null): void {
    this.unhashed.push({ payload, text: argsText });
    this.unhashedChars += argsText === null ? 0 : argsText.length;
    if (this.unhashed.length >= MAX_UNHASHED_CALLS || this.unhashedChars >= MAX_UNHASHED_CHARS) this.hashWaitingArgs();
    this.buffer.add(payload);
  }

  /** Fills in every waiting call's `args_hash`. */
  hashWaitingArgs(): void {
    const waiting = this.unhashed;
    if (waiting.length === 0) return;
    this.unhashed = [];
    this.unhashedChars = 0;
    for (const call of waiting) call.payload.args_hash = hashOfArgsText(call.text);
  }
}

/**
 * Queues a call payload (Destination.enqueueCall) on a destination that another copy of this
 * package in the process may have made (the registry below is shared through globalThis): one
 * made by a copy from before enqueueCall existed gets the payload with its digest already in.
 */
export function enqueueCallOn<P extends { args_hash: string }>(destination: Destination, payload: P, argsText: string | null): void {
  if (typeof (destination as Partial<Destination>).enqueueCall === "function") {
    destination.enqueueCall(payload, argsText);
  } else {
    payload.args_hash = hashOfArgsText(argsText);
    destination.enqueue(payload);
  }
}

/**
 * How a report line names its destination: the ingest URL and, for a key of the usual shape, its
 * key id (the first 16 characters, kept in clear to name a key, SPEC §3) — never the key.
 */
function destinationName(ingestUrl: string, key: string): string {
  return key.length >= 40 ? `${ingestUrl} (key ${key.slice(0, 16)}…)` : ingestUrl;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// Shared through globalThis so two copies of this package in one process still share sessions.
const REGISTRY_KEY = Symbol.for("mcpulse-edge.sdk.destinations");
type Registry = Map<string, Destination>;

function registry(): Registry {
  const holder = globalThis as unknown as Record<symbol, Registry | undefined>;
  let found = holder[REGISTRY_KEY];
  if (!found) {
    found = new Map();
    holder[REGISTRY_KEY] = found;
  }
  return found;
}

/** Internal test hooks: shorter intervals and a fake poster. Not part of the public surface. */
export interface TransportOverrides {
  tuning?: Partial<BufferTuning>;
  sendTimeoutMs?: number;
  post?: PostJson;
  /** The drop report's clock (./drops.ts). */
  reportClock?: ReportClock;
}
let overrides: TransportOverrides = {};

export function setTransportOverridesForTests(next: TransportOverrides): void {
  overrides = next;
}

/** Forgets every destination (tests only; a real process keeps its sessions for its lifetime). */
export function resetDestinationsForTests(): void {
  registry().clear();
}

export function destinationFor(rawEndpoint: string, key: string): Destination {
  // A trailing slash is ignored, also in the destination's identity (SPEC §4).
  const endpoint = rawEndpoint.replace(/\/+$/, "");
  const all = registry();
  const identity = `${endpoint}\n${key}`;
  let destination = all.get(identity);
  if (!destination) {
    destination = new Destination(
      endpoint,
      key,
      overrides.post ?? defaultPostJson(),
      { ...DEFAULT_BUFFER_TUNING, ...overrides.tuning },
      overrides.sendTimeoutMs ?? SEND_TIMEOUT_MS,
      overrides.reportClock,
    );
    all.set(identity, destination);
    installExitFlush();
  }
  return destination;
}

/** Every destination, for the exit flush. */
export function allDestinations(): Destination[] {
  return [...registry().values()];
}

// ---- exit flush (SPEC §4): beforeExit, SIGINT, SIGTERM; one final flush, ≤ 1 s ----

type ProcessLike = {
  on?: (event: string, listener: (...args: unknown[]) => void) => unknown;
  removeListener?: (event: string, listener: (...args: unknown[]) => void) => unknown;
  listenerCount?: (event: string) => number;
  kill?: (pid: number, signal: string) => unknown;
  pid?: number;
  release?: { name?: string };
};

const EXIT_HOOKS_KEY = Symbol.for("mcpulse-edge.sdk.exit-hooks");

async function flushEverything(): Promise<void> {
  await Promise.all(allDestinations().map((destination) => destination.buffer.flushFinal(EXIT_FLUSH_TIMEOUT_MS)));
  writePendingDropReports();
}

/** The drop counts not yet written go out now, whatever the minute: the process is ending. */
function writePendingDropReports(): void {
  for (const destination of allDestinations()) {
    // A destination made by an older copy of this package has no report.
    (destination as Partial<Destination>).drops?.writePending();
  }
}

function installExitFlush(): void {
  const holder = globalThis as unknown as Record<symbol, boolean | undefined>;
  if (holder[EXIT_HOOKS_KEY]) return;
  const proc = (globalThis as { process?: ProcessLike }).process;
  // Node only: workerd's nodejs_compat `process` has no exit or signals to hook.
  if ((globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers") return;
  if (!proc || proc.release?.name !== "node" || typeof proc.on !== "function") return;
  holder[EXIT_HOOKS_KEY] = true;
  try {
    proc.on("beforeExit", () => {
      // beforeExit fires again once the flush's own work is done; by then nothing waits.
      if (allDestinations().some((destination) => destination.buffer.size > 0)) {
        void flushEverything().catch(() => undefined);
      } else {
        writePendingDropReports();
      }
    });
    // process.exit() skips beforeExit, so no exit flush: what is still held is given up, and the
    // report still goes out (stderr writes are synchronous to files, terminals and, on Linux, pipes).
    proc.on("exit", () => {
      for (const destination of allDestinations()) {
        if (typeof (destination.buffer as Partial<PayloadBuffer>).giveUpAtExit === "function") destination.buffer.giveUpAtExit();
      }
      writePendingDropReports();
    });
    for (const signal of ["SIGINT", "SIGTERM"]) {
      const onSignal = () => {
        // Another listener means the host handles this signal itself; we only flush.
        const hostHandles = (proc.listenerCount?.(signal) ?? 1) > 1;
        const reRaise = () => {
          if (hostHandles) return;
          // Without swallowing the signal's normal effect: remove ourselves and let the default
          // action (termination by that signal) happen.
          proc.removeListener?.(signal, onSignal);
          proc.kill?.(proc.pid ?? 0, signal);
        };
        if (!hostHandles && flushing.has(signal)) {
          reRaise(); // a second signal while flushing: stop waiting
          return;
        }
        flushing.add(signal);
        flushEverything().catch(() => undefined).finally(() => {
          flushing.delete(signal);
          reRaise();
        });
      };
      proc.on(signal, onSignal);
    }
  } catch {
    // Rule 1: never throw into the host.
  }
}

const flushing = new Set<string>();
