// SHA-256 (FIPS 180-4) of a string's UTF-8 bytes, synchronous and runtime-neutral. Our own because
// args_hash runs on every tool call (SPEC §4 "never block") and @noble/hashes was slower (bench:wire).

import { compressBlocks } from "./sha256-rounds.ts";

// FIPS 180-4 §5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8 primes.
const INITIAL_STATE = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

const state = new Int32Array(8);
const utf8Encoder = new TextEncoder();
// Reused across calls (hashing is synchronous, so nothing else can use it meanwhile); grown on
// demand to the UTF-8 worst case of 3 bytes per UTF-16 code unit plus padding, up to 1 MiB. A
// larger input gets a buffer of its own, so one huge argument does not pin memory for good.
const MAX_RETAINED_BUFFER_BYTES = 1_048_576;
let buffer = new Uint8Array(4096);
let bufferView = new DataView(buffer.buffer);

/**
 * The SHA-256 state words after hashing the UTF-8 bytes of `text`. A lone surrogate is encoded
 * as U+FFFD, as TextEncoder (and every UTF-8 encoder) writes it.
 */
function digestWords(text: string): Int32Array {
  const worstCase = text.length * 3 + 72;
  const { bytes, view } = scratch(worstCase);
  return digestEncoded(bytes, view, utf8Encoder.encodeInto(text, bytes).written);
}

/** The reused buffer, or one of its own for an input over 1 MiB. */
function scratch(worstCase: number): { bytes: Uint8Array; view: DataView } {
  let bytes = buffer;
  let view = bufferView;
  if (bytes.length < worstCase) {
    bytes = new Uint8Array(Math.max(worstCase, bytes.length * 2));
    view = new DataView(bytes.buffer);
    if (bytes.length <= MAX_RETAINED_BUFFER_BYTES) {
      buffer = bytes;
      bufferView = view;
    }
  }
  return { bytes, view };
}

/** Pads the `length` message bytes at the start of `bytes` and compresses them. */
function digestEncoded(bytes: Uint8Array, view: DataView, length: number): Int32Array {
  // Padding: 0x80, zeros to 56 mod 64, then the bit length as a 64-bit big-endian integer.
  let end = length;
  bytes[end++] = 0x80;
  while ((end & 63) !== 56) bytes[end++] = 0;
  const bitLengthHigh = Math.floor(length / 0x20000000);
  const bitLengthLow = (length << 3) >>> 0;
  bytes[end++] = bitLengthHigh >>> 24;
  bytes[end++] = bitLengthHigh >>> 16;
  bytes[end++] = bitLengthHigh >>> 8;
  bytes[end++] = bitLengthHigh;
  bytes[end++] = bitLengthLow >>> 24;
  bytes[end++] = bitLengthLow >>> 16;
  bytes[end++] = bitLengthLow >>> 8;
  bytes[end++] = bitLengthLow;

  state.set(INITIAL_STATE);
  compressBlocks(view, end, state);
  return state;
}

const HEX_DIGITS = "0123456789abcdef";

function wordHex(word: number, chars: number): string {
  let hex = "";
  for (let shift = 28; shift >= 32 - chars * 4; shift -= 4) hex += HEX_DIGITS[(word >>> shift) & 15]!;
  return hex;
}

/** Lowercase hex SHA-256 of the UTF-8 bytes of `text` (64 characters). */
export function sha256Hex(text: string): string {
  const words = digestWords(text);
  let hex = "";
  for (let i = 0; i < 8; i++) hex += wordHex(words[i]!, 8);
  return hex;
}

/** The first `hexChars` (≤ 64) lowercase hex characters of the SHA-256 of `text`'s UTF-8 bytes. */
export function sha256HexPrefix(text: string, hexChars: number): string {
  const words = digestWords(text);
  let hex = "";
  for (let i = 0; hexChars > 0; i++, hexChars -= 8) hex += wordHex(words[i]!, Math.min(8, hexChars));
  return hex;
}

/** The 32-byte SHA-256 digest of `message` (bytes, not text: HMAC hashes keys and digests). */
export function sha256Bytes(message: Uint8Array): Uint8Array {
  const { bytes, view } = scratch(message.length + 72);
  bytes.set(message);
  const words = digestEncoded(bytes, view, message.length);
  const digest = new Uint8Array(32);
  const out = new DataView(digest.buffer);
  for (let i = 0; i < 8; i++) out.setInt32(i * 4, words[i]!);
  return digest;
}

const HMAC_BLOCK_BYTES = 64;

/**
 * HMAC-SHA256 (RFC 2104) of the UTF-8 bytes of `message` under the UTF-8 bytes of `key`, as
 * lowercase hex cut to `hexChars`. Synchronous, so the SDK derives a session id inside the tool
 * call it records (SPEC §4 "Sessions are conversations") without WebCrypto's promises; tested
 * against node:crypto's createHmac.
 */
export function hmacSha256HexPrefix(key: string, message: string, hexChars: number): string {
  let keyBytes: Uint8Array = utf8Encoder.encode(key);
  if (keyBytes.length > HMAC_BLOCK_BYTES) keyBytes = sha256Bytes(keyBytes);
  const messageBytes = utf8Encoder.encode(message);
  const inner = new Uint8Array(HMAC_BLOCK_BYTES + messageBytes.length);
  const outer = new Uint8Array(HMAC_BLOCK_BYTES + 32);
  for (let i = 0; i < HMAC_BLOCK_BYTES; i++) {
    const byte = keyBytes[i] ?? 0;
    inner[i] = byte ^ 0x36;
    outer[i] = byte ^ 0x5c;
  }
  inner.set(messageBytes, HMAC_BLOCK_BYTES);
  outer.set(sha256Bytes(inner), HMAC_BLOCK_BYTES);
  const digest = sha256Bytes(outer);
  let hex = "";
  for (let i = 0; i * 2 < hexChars; i++) hex += HEX_DIGITS[digest[i]! >>> 4]! + HEX_DIGITS[digest[i]! & 15]!;
  return hex.slice(0, hexChars);
}
