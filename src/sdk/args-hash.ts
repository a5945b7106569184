// `args_hash` on the tool-call path (SPEC §1.3, §4 rule 2) in two steps: the canonical JSON when the
// call is made (argsHashText), its SHA-256 only when the payload is about to be sent (hashOfArgsText),
// where a row of digests costs the call less. Node's `crypto.hash` when present, else src/shared's.
import { canonicalize } from "../shared/canonical.ts";
import { HASH_HEX_CHARS, sha256Hex12, UNREPRESENTABLE_HASH } from "../shared/hash.ts";

type OneShotHash = (algorithm: string, data: string, outputEncoding: "hex") => string;

let nativeHash: OneShotHash | null | undefined;

function oneShotSha256(): OneShotHash | null {
  if (nativeHash !== undefined) return nativeHash;
  nativeHash = null;
  try {
    if ((globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent === "Cloudflare-Workers") return null;
    const proc = (globalThis as { process?: { release?: { name?: string }; getBuiltinModule?: (id: string) => unknown } }).process;
    if (proc?.release?.name !== "node" || typeof proc.getBuiltinModule !== "function") return null;
    const crypto = proc.getBuiltinModule("node:crypto") as { hash?: unknown } | undefined;
    if (typeof crypto?.hash !== "function") return null;
    const hash = crypto.hash as OneShotHash;
    // Trust it only once it gives the SPEC §1.3 fixture: absent arguments hash as {} → 44136fa355b3.
    if (hash("sha256", "{}", "hex").slice(0, HASH_HEX_CHARS) !== "44136fa355b3") return null;
    nativeHash = hash;
  } catch {
    nativeHash = null;
  }
  return nativeHash;
}

/**
 * The text `args_hash` is taken over: the canonical JSON of the arguments (absent → `{}`), or
 * `null` when they cannot be represented (NaN, ±Infinity, BigInt, cycles, a throwing getter or
 * toJSON). Never throws: the tool-call path keeps rule 1 (SPEC §4).
 */
export function argsHashText(args: unknown): string | null {
  try {
    return args === undefined ? "{}" : canonicalize(args);
  } catch {
    return null;
  }
}

/** `args_hash` of an argsHashText: hex12 of its SHA-256, or 000000000000 for `null`. */
export function hashOfArgsText(text: string | null): string {
  if (text === null) return UNREPRESENTABLE_HASH;
  try {
    // Canonical JSON escapes lone surrogates, so its UTF-8 is the same for every encoder.
    const hash = oneShotSha256();
    return hash === null ? sha256Hex12(text) : hash("sha256", text, "hex").slice(0, HASH_HEX_CHARS);
  } catch {
    return UNREPRESENTABLE_HASH; // hashing never throws (SPEC §1.3)
  }
}

/** Exactly src/shared's argsHash, in one step (never throws), faster on Node. */
export function callArgsHash(args: unknown): string {
  return hashOfArgsText(argsHashText(args));
}
