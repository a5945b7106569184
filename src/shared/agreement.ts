// The `agreement` payload (SPEC §1.2): the opt-in verdict of an in-process comparison of two tools.
import { z } from "zod";
import { requiredName, sessionIdSchema, timestampSchema, toolNameSchema, wholeNumber } from "./fields.ts";
import { MAX_AGREEMENT_FIELD_CHARS, MAX_AGREEMENT_WINDOW_MS } from "./limits.ts";

/** The compared field names what a verdict is about: empty drops the item, like an empty tool name. */
export const agreementFieldSchema = requiredName(MAX_AGREEMENT_FIELD_CHARS);

/** An agreement verdict; `checked_at` becomes `checked_at_ms` (epoch ms); unknown keys stripped. */
export const agreementPayloadSchema = z
  .object({
    v: z.literal(1),
    type: z.literal("agreement"),
    session_id: sessionIdSchema,
    field: agreementFieldSchema,
    tool_a: toolNameSchema,
    tool_b: toolNameSchema,
    agreed: z.boolean(),
    checked_at: timestampSchema,
    window_ms: wholeNumber(MAX_AGREEMENT_WINDOW_MS),
  })
  // `window_ms` is taken out and put back after `checked_at_ms`, so the members keep their order.
  .transform(({ checked_at, window_ms, ...verdict }) => ({ ...verdict, checked_at_ms: checked_at, window_ms }));

/** A parsed agreement verdict, as parseBatch returns it. */
export type AgreementPayload = z.output<typeof agreementPayloadSchema>;
/** An agreement verdict as a producer sends it. */
export type AgreementPayloadInput = z.input<typeof agreementPayloadSchema>;
