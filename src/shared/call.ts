// The `call` payload (SPEC §1.2): one per tool call.
import { z } from "zod";
import {
  byteCountSchema,
  clientNameSchema,
  HASH_PATTERN,
  hashSchema,
  callSessionIdSchema,
  timestampSchema,
  toolNameSchema,
  UNKNOWN_CLIENT_NAME,
  wholeNumber,
} from "./fields.ts";
import { codePointLength } from "./hash.ts";
import {
  MAX_BYTE_COUNT,
  MAX_CLIENT_NAME_CHARS,
  MAX_CLIENT_VERSION_CHARS,
  MAX_DURATION_MS,
  MAX_PROTOCOL_VERSION_CHARS,
  MAX_SERVER_VERSION_CHARS,
  MAX_SESSION_ID_CHARS,
  MAX_TOOL_NAME_CHARS,
} from "./limits.ts";
import { TRANSPORTS, type Transport } from "./startup.ts";
import { parseTimestampMs } from "./timestamp.ts";

/** The four outcomes of a call (SPEC §1.2, §4). */
export const CALL_OUTCOMES = ["ok", "bad_args", "tool_error", "crashed"] as const;
export const callOutcomeSchema = z.enum(CALL_OUTCOMES);

/**
 * Where a call's session id came from (SPEC §4 "Sessions are conversations"): the producer's own
 * key, a conversation id the client sent, the transport's session, the connection, or `none` when
 * nothing told the conversation apart. `unknown` stands for any other value.
 */
export const SESSION_KINDS = ["key", "conversation", "transport", "connection", "none", "unknown"] as const;
export type SessionKind = (typeof SESSION_KINDS)[number];

/**
 * The descriptive facts of a call (SPEC §1.2): who and what served it. They only describe, so an
 * unexpected value never costs the call: a version that is not text of 1 to its cap is stored as
 * not said (`null`); a session kind or transport outside its list is `unknown`; absent is `null`.
 */
export function descriptiveVersion(value: unknown, maxChars: number): string | null {
  if (typeof value !== "string" || value === "") return null;
  return value.length <= maxChars || codePointLength(value) <= maxChars ? value : null;
}

export function descriptiveChoice<T extends string>(value: unknown, allowed: readonly T[]): T | "unknown" | null {
  if (value === undefined || value === null) return null;
  return typeof value === "string" && (allowed as readonly string[]).includes(value) ? (value as T) : "unknown";
}

const versionField = (maxChars: number) => z.unknown().optional().transform((value) => descriptiveVersion(value, maxChars));

/**
 * A call as a producer sends it, parsed to what the worker stores: `started_at` becomes
 * `started_at_ms` (epoch ms, fraction to the microsecond); omitted zero values (the Go SDK omits
 * them) default to 0/false; unknown keys are stripped.
 */
export const callPayloadSchema = z
  .object({
    v: z.literal(1),
    type: z.literal("call"),
    session_id: callSessionIdSchema,
    client_name: clientNameSchema,
    tool_name: toolNameSchema,
    started_at: timestampSchema,
    duration_ms: wholeNumber(MAX_DURATION_MS).default(0),
    outcome: callOutcomeSchema,
    response_bytes: byteCountSchema.default(0),
    is_empty: z.boolean().default(false),
    args_hash: hashSchema,
    client_version: versionField(MAX_CLIENT_VERSION_CHARS),
    server_version: versionField(MAX_SERVER_VERSION_CHARS),
    protocol_version: versionField(MAX_PROTOCOL_VERSION_CHARS),
    session_kind: z.unknown().optional().transform((value): SessionKind | null => descriptiveChoice(value, SESSION_KINDS)),
    transport: z.unknown().optional().transform((value): Transport | null => descriptiveChoice(value, TRANSPORTS)),
  })
  .transform((call, ctx) => {
    // An error is not also an absence: is_empty may only be true on an ok call (SPEC §1.2).
    if (call.is_empty && call.outcome !== "ok") {
      ctx.issues.push({
        code: "custom",
        message: "true only with outcome ok",
        path: ["is_empty"],
        input: call.is_empty,
      });
      return z.NEVER;
    }
    return {
      v: call.v,
      type: call.type,
      session_id: call.session_id,
      client_name: call.client_name,
      tool_name: call.tool_name,
      started_at_ms: call.started_at,
      duration_ms: call.duration_ms,
      outcome: call.outcome,
      response_bytes: call.response_bytes,
      is_empty: call.is_empty,
      args_hash: call.args_hash,
      client_version: call.client_version,
      server_version: call.server_version,
      protocol_version: call.protocol_version,
      session_kind: call.session_kind,
      transport: call.transport,
    };
  });

/** A parsed call, as parseBatch returns it and the worker stores it. */
export type CallPayload = z.output<typeof callPayloadSchema>;
/** A call as a producer sends it. */
export type CallPayloadInput = z.input<typeof callPayloadSchema>;
export type CallOutcome = z.output<typeof callOutcomeSchema>;

/**
 * The ingest hot path: calls are almost every payload, so parseBatch first tries this hand-written
 * twin of `callPayloadSchema`. It returns exactly what the schema returns for a valid call, and
 * `undefined` for anything it does not accept — never a verdict of its own: the schema then parses
 * the item and gives the reason. test/shared/call-fast-path.test.ts checks the two against each
 * other on generated payloads; bench/wire.ts measures the gain (Zod without its JIT, as on workerd).
 */
export function parseCallFast(item: Readonly<Record<string, unknown>>): CallPayload | undefined {
  const { v, type, session_id, client_name, tool_name, started_at, outcome, args_hash } = item;
  const duration_ms = item.duration_ms === undefined ? 0 : item.duration_ms;
  const response_bytes = item.response_bytes === undefined ? 0 : item.response_bytes;
  const is_empty = item.is_empty === undefined ? false : item.is_empty;
  if (v !== 1 || type !== "call") return undefined;
  if (!isBoundedName(session_id, MAX_SESSION_ID_CHARS)) return undefined;
  if (!isBoundedName(client_name, MAX_CLIENT_NAME_CHARS)) return undefined;
  if (!isBoundedName(tool_name, MAX_TOOL_NAME_CHARS) || tool_name === "") return undefined;
  if (typeof started_at !== "string") return undefined;
  const started_at_ms = parseTimestampMs(started_at);
  if (started_at_ms === null) return undefined;
  if (!isWholeUpTo(duration_ms, MAX_DURATION_MS) || !isWholeUpTo(response_bytes, MAX_BYTE_COUNT)) return undefined;
  if (outcome !== "ok" && outcome !== "bad_args" && outcome !== "tool_error" && outcome !== "crashed") return undefined;
  if (typeof is_empty !== "boolean" || (is_empty && outcome !== "ok")) return undefined;
  if (typeof args_hash !== "string" || !HASH_PATTERN.test(args_hash)) return undefined;
  return {
    v,
    type,
    session_id,
    client_name: client_name === "" ? UNKNOWN_CLIENT_NAME : client_name,
    tool_name,
    started_at_ms,
    duration_ms,
    outcome,
    response_bytes,
    is_empty,
    args_hash,
    client_version: descriptiveVersion(item.client_version, MAX_CLIENT_VERSION_CHARS),
    server_version: descriptiveVersion(item.server_version, MAX_SERVER_VERSION_CHARS),
    protocol_version: descriptiveVersion(item.protocol_version, MAX_PROTOCOL_VERSION_CHARS),
    session_kind: descriptiveChoice(item.session_kind, SESSION_KINDS),
    transport: descriptiveChoice(item.transport, TRANSPORTS),
  };
}

function isBoundedName(value: unknown, maxChars: number): value is string {
  return typeof value === "string" && (value.length <= maxChars || codePointLength(value) <= maxChars);
}

function isWholeUpTo(value: unknown, max: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= max;
}
