// Field schemas shared by the payload types (SPEC §1.2), each beside the cap it enforces.
import { z } from "zod";
import { MAX_BYTE_COUNT, MAX_CLIENT_NAME_CHARS, MAX_SESSION_ID_CHARS, MAX_TOOL_NAME_CHARS } from "./limits.ts";
import { MAX_TIMESTAMP_CHARS, parseTimestampMs } from "./timestamp.ts";

/** Hashes are lowercase hex, 4–64 characters; the SDKs send 12 (SPEC §1.2). */
export const HASH_PATTERN = /^[0-9a-f]{4,64}$/;

/**
 * A string of at most `maxChars` code points — not UTF-16 units, so a producer in any language that
 * cuts a name to N of its own characters (code points, UTF-16 units or UTF-8 bytes) is accepted, and
 * every name ingest accepts fits the read API's filters, which use these same schemas (SPEC §1.2:
 * "chars" are code points everywhere). Zod 4.6's built-in `.max()` counts code points (a lone
 * surrogate as one, like codePointLength) and only walks strings longer than `maxChars` units.
 * The empty string is within every cap: SPEC §1.2 drops an item only for a wrong type or a field
 * over its cap, so an empty name is kept (one bad-looking field must not cost the call).
 */
export function boundedText(maxChars: number) {
  return z.string().max(maxChars);
}

/**
 * A startup's or a verdict's session: 1–128 characters. Only a call may have an empty one (SPEC
 * §1.2, §2.2: no session known); a startup or a verdict always belongs to a session.
 */
export const sessionIdSchema = boundedText(MAX_SESSION_ID_CHARS).min(1);
/** A call's session: at most 128 characters, empty when the producer knows no session (SPEC §2.2). */
export const callSessionIdSchema = boundedText(MAX_SESSION_ID_CHARS);
export const clientNameSchema = boundedText(MAX_CLIENT_NAME_CHARS);
export const toolNameSchema = boundedText(MAX_TOOL_NAME_CHARS);

/** A whole number from 0 to `max` inclusive. */
export function wholeNumber(max: number) {
  return z.number().int().min(0).max(max);
}

export const byteCountSchema = wholeNumber(MAX_BYTE_COUNT);
export const hashSchema = z.string().regex(HASH_PATTERN);

/**
 * An ISO 8601 date-time (SPEC §1.2), parsed to epoch milliseconds with the fraction kept down to
 * the microsecond. The 7-day/5-minute window needs the worker's clock, so parseBatch checks it.
 */
export const timestampSchema = z
  .string()
  .max(MAX_TIMESTAMP_CHARS)
  .transform((text, ctx) => {
    const epochMs = parseTimestampMs(text);
    if (epochMs === null) {
      ctx.issues.push({ code: "custom", message: "not an ISO 8601 date-time", input: text });
      return z.NEVER;
    }
    return epochMs;
  });
