// A result's size as the server sends it (SPEC §4 `response_bytes`, `schema_bytes`): 1.x sends a
// handler's result as is, 2.x passes it through the negotiated wire codec first.
import { utf16Length } from "../shared/hash.ts";
import { isRecord } from "./request-facts.ts";
import type { LowLevelServer } from "./shapes.ts";
import type { WatchState } from "./watch-state.ts";

/**
 * A result as the server puts it on the wire (SPEC §4: `response_bytes` is measured "as the server
 * sends it (after the MCP SDK's own normalisation)"; `schema_bytes` over each tool entry "as
 * tools/list returns it"). The 2.x SDKs pass every handler result through their negotiated wire
 * codec before sending: on revision 2026-07-28 it stamps `resultType` and the server's identity
 * into `_meta` and drops `execution` from tool entries; on 2025-era connections it wraps
 * non-object output schemas. The SDK's own encoder is applied here, so the length is the wire's
 * (it is pure: it copies, never mutates). 1.x sends the handler's result as is. `undefined` means
 * the encoder refused the result: the client then receives an error instead.
 */
export function asSent(state: WatchState, method: string, result: unknown): unknown {
  const low = state.shape.low as LowLevelServer & {
    _negotiatedWireCodec?: () => { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
    _outboundServerInfo?: () => unknown;
  };
  if (!isRecord(result) || typeof low._negotiatedWireCodec !== "function") return result;
  let codec: { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
  let serverInfo: unknown;
  try {
    codec = low._negotiatedWireCodec();
    serverInfo = typeof low._outboundServerInfo === "function" ? low._outboundServerInfo() : undefined;
  } catch {
    return result; // not the shape measured in SPEC §4's facts: measure what the handler returned
  }
  if (!codec || typeof codec.encodeResult !== "function") return result;
  try {
    return codec.encodeResult(method, result, serverInfo);
  } catch {
    return undefined; // the MCP SDK answers an internal error instead of this result
  }
}

/** Members the 2.x codecs read or write on a tools/call result; with none of them present, what they add is fixed. */
const CODEC_TOUCHED_MEMBERS = ["resultType", "_meta", "capabilities", "tools", "ttlMs", "cacheScope"] as const;

/**
 * `response_bytes` of a tools/call result: the UTF-16 length of its JSON as the server sends it
 * (SPEC §4), without encoding every result a second time through the 2.x codec. The codec's
 * tools/call encoding of a result that carries none of the members it reads or writes is the
 * result plus fixed members (2026-07-28: `resultType` and the server's identity in `_meta`; 2025
 * revisions: nothing), and the length of JSON does not depend on member order. So it is learnt
 * once, from the codec's own encoding of a probe result, and added to the length of the result's
 * JSON. A result that does carry one of those members goes through the codec as before. The
 * conformance tests compare every call's figure with the JSON on the wire, on both revisions.
 */
export function sentLength(state: WatchState, result: unknown): number {
  const low = state.shape.low as LowLevelServer & {
    _negotiatedWireCodec?: () => { encodeResult?: (method: string, result: unknown, serverInfo: unknown) => unknown } | undefined;
    _outboundServerInfo?: () => unknown;
  };
  if (typeof low._negotiatedWireCodec !== "function" || !isRecord(result)) {
    const json = JSON.stringify(result);
    return typeof json === "string" ? utf16Length(json) : 0;
  }
  let fixedGrowth: number | undefined;
  try {
    const codec = low._negotiatedWireCodec();
    const serverInfo = typeof low._outboundServerInfo === "function" ? low._outboundServerInfo() : undefined;
    if (isRecord(codec) && typeof codec.encodeResult === "function" && !Array.isArray(result) && Object.getPrototypeOf(result) === Object.prototype) {
      let touched = false;
      for (const member of CODEC_TOUCHED_MEMBERS) if (member in result) touched = true;
      if (!touched) {
        const known = state.codecGrowth;
        if (known !== undefined && known.codec === codec && known.serverInfo === serverInfo) {
          fixedGrowth = known.addedChars;
        } else {
          const probe = { content: [] };
          const encoded = JSON.stringify(codec.encodeResult("tools/call", probe, serverInfo));
          if (typeof encoded === "string") {
            fixedGrowth = encoded.length - JSON.stringify(probe).length;
            state.codecGrowth = { codec, serverInfo, addedChars: fixedGrowth };
          }
        }
      }
    }
  } catch {
    fixedGrowth = undefined;
  }
  if (fixedGrowth !== undefined) {
    const json = JSON.stringify(result);
    // Added members follow a comma, except after an empty object: there the probe's count does not hold.
    if (typeof json === "string" && json !== "{}") return utf16Length(json) + fixedGrowth;
  }
  const sent = asSent(state, "tools/call", result);
  const json = sent === undefined ? undefined : JSON.stringify(sent);
  return typeof json === "string" ? utf16Length(json) : 0;
}
