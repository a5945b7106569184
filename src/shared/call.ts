// The `call` payload (SPEC §1.2): one per tool call.
import { z } from "zod";
import {
  byteCountSchema,
  clientNameSchema,
  hashSchema,
  sessionIdSchema,
  timestampSchema,
  toolNameSchema,
  wholeNumber,
} from "./fields.ts";

/** `duration_ms` ≤ 86,400,000 — one day (SPEC §1.2). */
export const MAX_DURATION_MS = 86_400_000;

/** The four outcomes of a call (SPEC §1.2, §4). */
export const CALL_OUTCOMES = ["ok", "bad_args", "tool_error", "crashed"] as const;
export const callOutcomeSchema = z.enum(CALL_OUTCOMES);

/**
 * A call as a producer sends it, parsed to what the worker stores: `started_at` becomes
 * `started_at_ms` (epoch ms, fraction to the microsecond); omitted zero values (the Go SDK omits
 * them) default to 0/false; unknown keys are stripped.
 */
export const callPayloadSchema = z
  .object({
    v: z.literal(1),
    type: z.literal("call"),
    session_id: sessionIdSchema,
    client_name: clientNameSchema,
    tool_name: toolNameSchema,
    started_at: timestampSchema,
    duration_ms: wholeNumber(MAX_DURATION_MS).default(0),
    outcome: callOutcomeSchema,
    response_bytes: byteCountSchema.default(0),
    is_empty: z.boolean().default(false),
    args_hash: hashSchema,
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
    };
  });

/** A parsed call, as parseBatch returns it and the worker stores it. */
export type CallPayload = z.output<typeof callPayloadSchema>;
/** A call as a producer sends it. */
export type CallPayloadInput = z.input<typeof callPayloadSchema>;
export type CallOutcome = z.output<typeof callOutcomeSchema>;
