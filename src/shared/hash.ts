// SHA-256 hex prefixes and UTF-16 sizes used on the wire (SPEC §1.3): every hash the SDK sends is
// the first 12 lowercase hex characters of a SHA-256 over UTF-8 bytes.
import { canonicalize } from "./canonical.ts";
import { sha256HexPrefix } from "./sha256.ts";

/** Hash of arguments that cannot be represented as JSON (NaN, ±Infinity, BigInt, cycles). */
export const UNREPRESENTABLE_HASH = "000000000000";

/** Length of every hash the SDKs send (SPEC §1.2: "SDKs send 12"). */
export const HASH_HEX_CHARS = 12;

/** First 12 lowercase hex characters of the SHA-256 of the UTF-8 bytes of `text`. */
export function sha256Hex12(text: string): string {
  // A lone surrogate is hashed as U+FFFD, as every UTF-8 encoder writes it; canonical JSON never
  // contains one (it is escaped as \udxxx first), so argsHash is unaffected.
  return sha256HexPrefix(text, HASH_HEX_CHARS);
}

/**
 * Number of UTF-16 code units (JavaScript `String.length`). `response_bytes` and `schema_bytes`
 * hold this, not a byte count: a known wart every SDK keeps so numbers stay comparable (SPEC §1.3).
 */
export function utf16Length(text: string): number {
  return text.length;
}

/**
 * `args_hash` (SPEC §1.3): hex12 of the canonical JSON of the arguments. Never throws: absent
 * arguments (`undefined`) hash as `{}`; anything canonicalize refuses (NaN, ±Infinity, BigInt,
 * cycles, a throwing getter or toJSON, nesting deeper than the stack) hashes as `000000000000`.
 * `null` is a value and hashes as `null`.
 */
export function argsHash(args: unknown): string {
  try {
    return sha256Hex12(args === undefined ? "{}" : canonicalize(args));
  } catch {
    return UNREPRESENTABLE_HASH;
  }
}

/** `schema_hash` (SPEC §1.3): the args hash of a tool's `inputSchema`; `{}` when it has none. */
export function schemaHash(inputSchema: unknown): string {
  return argsHash(inputSchema);
}

/**
 * `description_hash` (SPEC §1.3): hex12 of the exact description text; a missing description
 * (`undefined`/`null`, or anything that is not a string) hashes as the empty string.
 */
export function descriptionHash(text: string | null | undefined): string {
  return sha256Hex12(typeof text === "string" ? text : "");
}

/** Number of Unicode code points; a lone surrogate counts as one. */
export function codePointLength(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}
