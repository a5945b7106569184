// `args_hash` on the tool-call path (SPEC §1.3, §4 rule 2). The same canonical JSON as
// src/shared's argsHash, hashed by Node's native one-shot SHA-256 (`crypto.hash`, Node ≥ 20.12)
// when it is there: about 0.8 µs for the 1 KB arguments of bench:sdk where the portable JavaScript
// SHA-256 takes about 4 µs. Elsewhere (workerd, older Node) the portable argsHash itself.
// test/sdk/args-hash.test.ts checks both give the same hash for any value.
import { canonicalize } from "../shared/canonical.ts";
import { argsHash as portableArgsHash, HASH_HEX_CHARS, UNREPRESENTABLE_HASH } from "../shared/hash.ts";

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

/** Exactly src/shared's argsHash (never throws; absent → `{}`; unrepresentable → 000000000000), faster on Node. */
export function callArgsHash(args: unknown): string {
  const hash = oneShotSha256();
  if (hash === null) return portableArgsHash(args);
  try {
    const text = args === undefined ? "{}" : canonicalize(args);
    // Canonical JSON escapes lone surrogates, so its UTF-8 is the same for every encoder.
    return typeof text === "string" ? hash("sha256", text, "hex").slice(0, HASH_HEX_CHARS) : UNREPRESENTABLE_HASH;
  } catch {
    // Hashing never throws (SPEC §1.3), so the tool-call path keeps rule 1, never throw (SPEC §4).
    return UNREPRESENTABLE_HASH;
  }
}
