// Signatures of generic webhook deliveries (SPEC §5): `X-MCPulse-Signature: sha256=<hex>` where hex
// is HMAC-SHA256 of `timestamp + "." + body` under the destination's secret, with WebCrypto.
import { randomBase62 } from "../auth.ts";

export const SIGNATURE_HEADER = "X-MCPulse-Signature";
export const TIMESTAMP_HEADER = "X-MCPulse-Timestamp";
/** Receivers should reject a timestamp older than this (docs/alerts.md). */
export const REPLAY_WINDOW_SECONDS = 300;

/** A webhook secret: `whsec_` + 32 base62 characters (190 bits), shown once. */
export function generateWebhookSecret(): string {
  return "whsec_" + randomBase62(32);
}

function hex(bytes: ArrayBuffer): string {
  let out = "";
  for (const byte of new Uint8Array(bytes)) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** `sha256=` + lowercase hex HMAC-SHA256 of `${timestampSeconds}.${body}`. */
export async function signatureOf(secret: string, timestampSeconds: number, body: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestampSeconds}.${body}`));
  return "sha256=" + hex(mac);
}
