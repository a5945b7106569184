// Field schemas shared by the payload types (SPEC §1.2), each beside the cap it enforces.
import { z } from "zod";
import { MAX_BYTE_COUNT, MAX_CLIENT_NAME_CHARS, MAX_SESSION_ID_CHARS, MAX_TOOL_NAME_CHARS } from "./limits.ts";
import { MAX_TIMESTAMP_CHARS, parseTimestampMs } from "./timestamp.ts";

/** Hashes are lowercase hex, 4–64 characters; the SDKs send 12 (SPEC §1.2). */
export const HASH_PATTERN = /^[0-9a-f]{4,64}$/;

/**
 * A string of at most `maxChars` code points (SPEC §1.2: "chars" are code points everywhere), so a
 * producer's cut in any unit is accepted and every accepted name fits the read API's filters. Zod
 * 4.6's `.max()` counts code points. May be empty; names use `requiredName`.
 */
export function boundedText(maxChars: number) {
  return z.string().max(maxChars);
}

/**
 * A name that identifies what an item is about (a tool, an agreement field): 1 to `maxChars` code
 * points (SPEC §1.2: tool names 1–200). An empty one drops the item — there is nothing to count it
 * under, and the dashboard would show it as an invisible link.
 */
export function requiredName(maxChars: number) {
  return z.string().min(1).max(maxChars);
}

/** What an empty or missing client name means: the SDKs send this when the client did not say (SPEC §4). */
export const UNKNOWN_CLIENT_NAME = "unknown";

/**
 * A startup's or a verdict's session: 1–128 characters. Only a call may have an empty one (SPEC
 * §1.2, §2.2: no session known); a startup or a verdict always belongs to a session.
 */
export const sessionIdSchema = boundedText(MAX_SESSION_ID_CHARS).min(1);
/** A call's session: at most 128 characters, empty when the producer knows no session (SPEC §2.2). */
export const callSessionIdSchema = boundedText(MAX_SESSION_ID_CHARS);
/**
 * The client's name only describes who called: an empty one does not cost the item (SPEC §1.2, a
 * descriptive field never costs the payload) and is stored as `unknown`, the name the SDKs give a
 * client that did not say — so the dashboard never lists a client without a name.
 */
export const clientNameSchema = boundedText(MAX_CLIENT_NAME_CHARS).transform((name) => (name === "" ? UNKNOWN_CLIENT_NAME : name));
export const toolNameSchema = requiredName(MAX_TOOL_NAME_CHARS);

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
