// SHA-256 (FIPS 180-4) of a string's UTF-8 bytes, synchronous and runtime-neutral: a plain
// JavaScript compression loop over a reused buffer. Written because args_hash runs on every tool
// call (SPEC §4 "never block") and the generic @noble/hashes path (TextEncoder.encode, a fresh
// array, a streaming hasher) measured slower on the 1 KB argument objects of bench/wire.ts; it is
// tested against node:crypto and @noble/hashes on generated strings.

const ROUND_CONSTANTS = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
const INITIAL_STATE = [
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const schedule = new Int32Array(64);
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
  const length = utf8Encoder.encodeInto(text, bytes).written;
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

  let h0 = INITIAL_STATE[0]! | 0, h1 = INITIAL_STATE[1]! | 0, h2 = INITIAL_STATE[2]! | 0, h3 = INITIAL_STATE[3]! | 0;
  let h4 = INITIAL_STATE[4]! | 0, h5 = INITIAL_STATE[5]! | 0, h6 = INITIAL_STATE[6]! | 0, h7 = INITIAL_STATE[7]! | 0;
  const w = schedule;
  const k = ROUND_CONSTANTS;
  for (let offset = 0; offset < end; offset += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getInt32(offset + (t << 2)); // big-endian words
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15]!;
      const y = w[t - 2]!;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16]! + s0 + w[t - 7]! + s1) | 0;
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    for (let t = 0; t < 64; t++) {
      const sigma1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const choice = g ^ (e & (f ^ g)); // Ch(e, f, g) in three operations
      const t1 = (h + sigma1 + choice + k[t]! + w[t]!) | 0;
      const sigma0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const majority = (a & b) | (c & (a | b)); // Maj(a, b, c) in four operations
      const t2 = (sigma0 + majority) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
  }
  state[0] = h0; state[1] = h1; state[2] = h2; state[3] = h3;
  state[4] = h4; state[5] = h5; state[6] = h6; state[7] = h7;
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
