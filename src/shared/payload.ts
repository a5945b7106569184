// Any one payload (SPEC §1.2), discriminated on `type`, and the per-item validation parseBatch uses.
import { z } from "zod";
import { agreementPayloadSchema } from "./agreement.ts";
import { callPayloadSchema, parseCallFast } from "./call.ts";
import { startupPayloadSchema } from "./startup.ts";
import { timeWindowProblem } from "./timestamp.ts";

/** Validates what a producer sends (the SDK) and what the worker receives, minus the time window. */
export const payloadSchema = z.discriminatedUnion("type", [
  callPayloadSchema,
  startupPayloadSchema,
  agreementPayloadSchema,
]);

/** A parsed payload, as parseBatch returns it. */
export type Payload = z.output<typeof payloadSchema>;
/** A payload as a producer sends it. */
export type PayloadInput = z.input<typeof payloadSchema>;
export type PayloadType = Payload["type"];

const schemaByType = {
  call: callPayloadSchema,
  startup: startupPayloadSchema,
  agreement: agreementPayloadSchema,
} as const;

export type PayloadResult = { ok: true; payload: Payload } | { ok: false; reason: string };

/**
 * Validates one batch item against the worker's clock: the schema of its type, then the
 * 7-day/5-minute window of its timestamp (SPEC §1.2). A failure carries a short reason naming the
 * field and the problem, never the value sent.
 */
export function parsePayload(item: unknown, nowMs: number): PayloadResult {
  if (typeof item !== "object" || item === null || Array.isArray(item)) {
    return { ok: false, reason: "not an object" };
  }
  const record = item as Record<string, unknown>;
  // `v` first: a future version's payload is dropped as such, whatever else it carries.
  if (record.v !== 1) return { ok: false, reason: record.v === undefined ? "v: missing" : "v: must be 1" };
  const type = record.type;
  if (type === undefined) return { ok: false, reason: "type: missing" };
  if (type !== "call" && type !== "startup" && type !== "agreement") {
    return { ok: false, reason: "type: unknown" };
  }
  if (type === "call") {
    // Calls are nearly all of the traffic: the hand-written twin first, the schema for the reason.
    const call = parseCallFast(record);
    if (call !== undefined) {
      const problem = windowProblem(call, nowMs);
      return problem === null ? { ok: true, payload: call } : { ok: false, reason: problem };
    }
  }
  const result = schemaByType[type].safeParse(item);
  if (!result.success) return { ok: false, reason: describeIssue(result.error.issues[0], item) };
  const payload = result.data as Payload;
  const problem = windowProblem(payload, nowMs);
  if (problem !== null) return { ok: false, reason: problem };
  return { ok: true, payload };
}

/** Why a parsed payload's timestamp is outside the accepted window, or null (SPEC §1.2). */
export function windowProblem(payload: Payload, nowMs: number): string | null {
  switch (payload.type) {
    case "call": {
      const problem = timeWindowProblem(payload.started_at_ms, nowMs);
      return problem === null ? null : `started_at: ${problem}`;
    }
    case "agreement": {
      const problem = timeWindowProblem(payload.checked_at_ms, nowMs);
      return problem === null ? null : `checked_at: ${problem}`;
    }
    case "startup":
      return null;
  }
}

/** `field.path: problem` from a Zod issue; the path holds schema keys and indexes only. */
function describeIssue(issue: z.core.$ZodIssue | undefined, item: unknown): string {
  if (issue === undefined) return "invalid";
  const path = issue.path.length > 0 ? issue.path.join(".") : "payload";
  return `${path}: ${describeProblem(issue, item)}`;
}

function describeProblem(issue: z.core.$ZodIssue, item: unknown): string {
  if (valueAt(item, issue.path) === undefined) return "missing";
  switch (issue.code) {
    case "invalid_type":
      return issue.expected === "int" ? "not a whole number" : "wrong type";
    case "too_big":
      if (issue.origin === "array") return "too many entries";
      if (issue.origin === "string") return "too long";
      return "over its cap";
    case "too_small":
      if (issue.origin === "string") return "empty";
      if (issue.origin === "array") return "too few entries";
      return "negative";
    case "invalid_format":
      return "bad format";
    case "invalid_value":
      return "not an allowed value";
    case "custom":
      return issue.message;
    default:
      return "invalid";
  }
}

function valueAt(item: unknown, path: readonly PropertyKey[]): unknown {
  let value = item;
  for (const key of path) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
