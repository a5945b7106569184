// Where a call's session comes from (SPEC §4 "Sessions are conversations"): one pure function over a
// request's facts, and the table that turns a source into a `session_id` once (no HMAC per call).
// Its test table is docs/sdk.md's "Where a session comes from".
import { HASH_HEX_CHARS } from "../shared/hash.ts";
import { hmacSha256HexPrefix, sha256Hex } from "../shared/sha256.ts";

/**
 * `_meta` keys under which a client sends its own conversation id, with the client known to send
 * each and where that is documented. First listed, first used.
 */
export const CONVERSATION_META_KEYS = [
  {
    key: "openai/session",
    client: "ChatGPT (Apps SDK and connectors)",
    source: "OpenAI Apps SDK reference, \"_meta fields the client provides\" (developers.openai.com/apps-sdk/reference)",
  },
  {
    key: "vscode.conversationId",
    client: "VS Code (GitHub Copilot chat)",
    source: "SPEC §4 (2026-12-02): the chat conversation's id, sent in each tools/call's _meta",
  },
] as const;

/** What a request tells about its conversation, gathered by the wrappers (docs/sdk.md). */
export interface SessionFacts {
  fromOption: unknown;
  meta: unknown;
  transportSessionId: unknown;
  transport: TransportKind;
  connection: object | undefined;
}

export type TransportKind = "stdio" | "memory" | "http" | "sse" | "unknown";

/** The case that named the session, in SPEC §4's order; each case's name goes into the HMAC. */
export type SessionSource =
  | { kind: "key"; value: string }
  | { kind: "conversation"; value: string }
  | { kind: "transport"; value: string }
  | { kind: "connection"; connection: object };

function usable(value: unknown): value is string {
  return typeof value === "string" && value.length > 0;
}

/**
 * Where this request's session comes from, first match wins (SPEC §4): `sessionKey`, a `_meta`
 * conversation id, the transport session, the connection. `null`: none can tell conversations apart,
 * and the call goes with an empty `session_id` (SPEC §2.2).
 */
export function sessionSource(facts: SessionFacts): SessionSource | null {
  if (usable(facts.fromOption)) return { kind: "key", value: facts.fromOption };
  const meta = facts.meta;
  if (meta !== null && typeof meta === "object") {
    for (const { key } of CONVERSATION_META_KEYS) {
      const value = (meta as Record<string, unknown>)[key];
      if (usable(value)) return { kind: "conversation", value };
    }
  }
  if (usable(facts.transportSessionId)) return { kind: "transport", value: facts.transportSessionId };
  if ((facts.transport === "stdio" || facts.transport === "memory") && facts.connection !== undefined) {
    return { kind: "connection", connection: facts.connection };
  }
  return null;
}

/** Transport kinds already read, per transport object: every call asks, the class never changes. */
const kindByTransport = new WeakMap<object, TransportKind>();

/** The kind of a connected transport, from its class name (the SDK never imports the MCP SDK). */
export function transportKindOf(transport: unknown): TransportKind {
  if (transport === null || typeof transport !== "object") return "unknown";
  let kind = kindByTransport.get(transport);
  if (kind === undefined) {
    kind = kindOfClass((transport as { constructor?: { name?: unknown } }).constructor?.name);
    kindByTransport.set(transport, kind);
  }
  return kind;
}

function kindOfClass(name: unknown): TransportKind {
  if (typeof name !== "string") return "unknown";
  if (/stdio/i.test(name)) return "stdio";
  if (/memory/i.test(name)) return "memory";
  if (/sse/i.test(name)) return "sse";
  if (/http/i.test(name)) return "http";
  return "unknown";
}

/** `s_` + 12 lowercase hex characters from a CSPRNG; random, never derived from the machine. */
export function newSessionId(): string {
  const bytes = new Uint8Array(6);
  (globalThis as unknown as { crypto: { getRandomValues(array: Uint8Array): Uint8Array } }).crypto.getRandomValues(bytes);
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return `s_${hex}`;
}

/**
 * `s_` + hex12 of HMAC-SHA256(ingest key, case name + ":" + value) (SPEC §4): every replica of a
 * load-balanced server that shares the ingest key derives the same id for one conversation, and
 * the value itself (a user handle, a client's conversation id) never leaves the process.
 */
export function derivedSessionId(ingestKey: string, kind: "key" | "conversation" | "transport", value: string): string {
  return `s_${hmacSha256HexPrefix(ingestKey, `${kind}:${value}`, HASH_HEX_CHARS)}`;
}

const MAX_KEPT_VALUE_CHARS = 256;

/** At most this many sessions are remembered per process and destination (SPEC §4). */
export const MAX_REMEMBERED_SESSIONS = 10_000;

/** A session as the table hands it out: its id, and whether this request is its first. */
export interface SessionLookup {
  id: string;
  isNew: boolean;
}

/**
 * The sessions of one destination, most recently used last: a source becomes an id once (an HMAC,
 * or a random id per connection) and every later request of that conversation is a map lookup.
 * Bounded: past MAX_REMEMBERED_SESSIONS the least recently used is forgotten; if it comes back it
 * is new again (the same id for derived sources, and one more startup, which SPEC §1.2 allows).
 */
export class SessionTable {
  private readonly byValue = new Map<string, string>();
  private readonly byConnection = new WeakMap<object, string>();
  private readonly ingestKey: string;
  private readonly capacity: number;

  constructor(ingestKey: string, capacity = MAX_REMEMBERED_SESSIONS) {
    this.ingestKey = ingestKey;
    this.capacity = capacity;
  }

  /** Remembered sessions named by a value (connections are held weakly and not counted). */
  get size(): number {
    return this.byValue.size;
  }

  lookup(source: SessionSource): SessionLookup {
    if (source.kind === "connection") {
      const known = this.byConnection.get(source.connection);
      if (known !== undefined) return { id: known, isNew: false };
      const id = newSessionId();
      this.byConnection.set(source.connection, id);
      return { id, isNew: true };
    }
    // A value a client controls can be long: past 256 characters the table keys it by its
    // SHA-256, so 10,000 remembered sessions stay a few megabytes at most.
    const mapKey = source.kind + ":" + (source.value.length > MAX_KEPT_VALUE_CHARS ? "#" + sha256Hex(source.value) : source.value);
    const known = this.byValue.get(mapKey);
    if (known !== undefined) {
      // Most recently used last: delete and re-insert (Map keeps insertion order).
      this.byValue.delete(mapKey);
      this.byValue.set(mapKey, known);
      return { id: known, isNew: false };
    }
    const id = derivedSessionId(this.ingestKey, source.kind, source.value);
    this.byValue.set(mapKey, id);
    if (this.byValue.size > this.capacity) {
      const oldest = this.byValue.keys().next().value;
      if (oldest !== undefined) this.byValue.delete(oldest);
    }
    return { id, isNew: true };
  }
}
