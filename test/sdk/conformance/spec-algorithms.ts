// SPEC §1.3 recomputed from its own words with node:crypto, not with src/shared, so the review
// does not inherit a mistake of the code under test. Only what the test inputs need: strings,
// whole numbers, booleans, null, arrays and objects.
import { createHash } from "node:crypto";

/** RFC 8785 for the JSON values the tests use: keys sorted by UTF-16 code unit at every depth. */
export function jcs(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(jcs).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, member]) => member !== undefined);
  // Array.prototype.sort compares strings by UTF-16 code units, which is what JCS asks for.
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${jcs(member)}`).join(",")}}`;
}

/** `lowercase_hex(sha256(utf8(text)))[0:12]`. */
export function hex12(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 12);
}

/** `args_hash`: absent arguments hash as `{}`. */
export function specArgsHash(args: unknown): string {
  return hex12(args === undefined ? "{}" : jcs(args));
}

/** `utf16_length` of the compact JSON (SPEC §1.3: String.length, not bytes). */
export function jsonLength(value: unknown): number {
  return JSON.stringify(value).length;
}
